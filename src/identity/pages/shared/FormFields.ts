/**
 * The pieces of the pages' forms: a labelled input with its hint and error (tied by
 * `aria-describedby`, marked `aria-invalid`), a hidden field and a form-level alert.
 */
import { html } from "./Html.js"

/** Errors by field name; `form` is an error of the whole form. */
export type FieldErrors = Readonly<Partial<Record<string, string>>>

export const alert = (message: string | undefined) =>
  message === undefined ? "" : html`<p class="alert" role="alert">${message}</p>`

export const field = (input: {
  readonly id: string
  readonly name: string
  readonly label: string
  readonly type: "email" | "password" | "text"
  readonly value?: string | undefined
  readonly autocomplete: string
  readonly error?: string | undefined
  readonly hint?: string | undefined
  readonly maxLength?: number | undefined
  readonly inputMode?: "numeric" | undefined
  /** An alternative to another field: not `required`. */
  readonly optional?: boolean | undefined
}) => {
  const described = [
    input.error === undefined ? "" : `${input.id}-error`,
    input.hint === undefined ? "" : `${input.id}-hint`
  ]
    .filter((id) => id !== "").join(" ")
  return html`<p><label for="${input.id}">${input.label}</label>
<input id="${input.id}" name="${input.name}" type="${input.type}" autocomplete="${input.autocomplete}"${
    input.optional === true ? "" : " required"
  }${input.value === undefined ? "" : html` value="${input.value}"`}${
    input.maxLength === undefined ? "" : html` maxlength="${input.maxLength}"`
  }${input.inputMode === undefined ? "" : html` inputmode="${input.inputMode}" pattern="[0-9]{6}"`}${
    described === "" ? "" : html` aria-describedby="${described}"`
  }${input.error === undefined ? "" : html` aria-invalid="true"`}>
${input.hint === undefined ? "" : html`<span id="${input.id}-hint" class="muted">${input.hint}</span>`}
${input.error === undefined ? "" : html`<span id="${input.id}-error" class="field-error">${input.error}</span>`}</p>`
}

/** The 6-digit code a mail carries (registration, recovery, an email change). */
export const mailedCodeField = (error: string | undefined, id = "code") =>
  field({
    id,
    name: "code",
    label: "Code from the mail",
    type: "text",
    autocomplete: "one-time-code",
    inputMode: "numeric",
    maxLength: 6,
    error
  })

export const hidden = (name: string, value: string) => html`<input type="hidden" name="${name}" value="${value}">`
