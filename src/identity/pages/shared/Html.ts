/**
 * A minimal HTML builder: `html` escapes every interpolated value unless it is already `Html`, so a
 * page cannot be injected into through a client name, an email or a query parameter.
 */
export class Html {
  constructor(readonly value: string) {}
  toString() {
    return this.value
  }
}

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" }

export const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => ESCAPES[c]!)

type Part = Html | string | number | null | undefined | false | ReadonlyArray<Html | string>

const render = (part: Part): string => {
  if (part === null || part === undefined || part === false) return ""
  if (part instanceof Html) return part.value
  if (Array.isArray(part)) return part.map((p) => render(p as Part)).join("")
  return escapeHtml(String(part))
}

export const html = (strings: TemplateStringsArray, ...parts: ReadonlyArray<Part>): Html =>
  new Html(strings.reduce((out, s, i) => out + s + (i < parts.length ? render(parts[i]!) : ""), ""))
