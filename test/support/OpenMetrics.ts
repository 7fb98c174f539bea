/**
 * Reading a `/metrics` answer as Prometheus would (docs/deploying.md, "Metrics"). npm has no strict
 * OpenMetrics parser: the exposition is checked by the Prometheus text parser
 * `parse-prometheus-text-format` (a port of Prometheus's own, which throws on a malformed line), and
 * by the rules of the OpenMetrics 1.0 text format it does not know, checked here
 * (https://github.com/prometheus/OpenMetrics/blob/main/specification/OpenMetrics.md): `# EOF` last,
 * metadata before a family's samples, families never interleaved, the suffixes each type allows
 * (`_total` on counters), `# UNIT` matching the name, label and number syntax, and histograms'
 * buckets ascending, cumulative and ending with `+Inf` equal to `_count`.
 */
import { expect } from "@effect/vitest"
import parsePrometheusTextFormat from "parse-prometheus-text-format"

export interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

export interface Family {
  readonly name: string
  readonly type: string
  readonly unit: string | undefined
  readonly help: string | undefined
  readonly samples: ReadonlyArray<Sample>
}

const suffixes: Record<string, ReadonlyArray<string>> = {
  counter: ["_total", "_created"],
  gauge: [""],
  histogram: ["_bucket", "_count", "_sum", "_created"],
  summary: ["", "_count", "_sum", "_created"],
  unknown: [""],
  info: ["_info"],
  stateset: [""],
  gaugehistogram: ["_bucket", "_gcount", "_gsum"]
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/
const NUMBER = /^(?:[+-]?Inf|NaN|[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)$/
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/

const parseNumber = (text: string): number => {
  expect(text, `number ${text}`).toMatch(NUMBER)
  return text === "+Inf" || text === "Inf" ? Infinity : text === "-Inf" ? -Infinity : Number(text)
}

/** `name="value",...`, with only the escapes OpenMetrics allows (`\\`, `\"`, `\n`). */
const parseLabels = (text: string): Record<string, string> => {
  const labels: Record<string, string> = {}
  let at = 0
  while (at < text.length) {
    const eq = text.indexOf("=", at)
    expect(eq, `labels ${text}`).toBeGreaterThan(at)
    const name = text.slice(at, eq)
    expect(name).toMatch(LABEL_NAME)
    expect(Object.hasOwn(labels, name), `label ${name} twice`).toBe(false)
    expect(text[eq + 1], `labels ${text}`).toBe("\"")
    let value = ""
    let i = eq + 2
    for (; i < text.length && text[i] !== "\""; i++) {
      if (text[i] === "\\") {
        const next = text[++i]
        expect(["\\", "\"", "n"], `escape in ${text}`).toContain(next)
        value += next === "n" ? "\n" : next
      } else value += text[i]
    }
    expect(text[i], `labels ${text}`).toBe("\"")
    labels[name] = value
    at = i + 1
    if (at < text.length) {
      expect(text[at], `labels ${text}`).toBe(",")
      at++
    }
  }
  return labels
}

const seriesKey = (labels: Readonly<Record<string, string>>, without: string) =>
  JSON.stringify(Object.entries(labels).filter(([name]) => name !== without).sort())

const checkHistogram = (family: Family) => {
  const series = new Map<string, { buckets: Array<[number, number]>; count?: number; sum?: number }>()
  for (const sample of family.samples) {
    const key = seriesKey(sample.labels, "le")
    let entry = series.get(key)
    if (entry === undefined) series.set(key, entry = { buckets: [] })
    if (sample.name.endsWith("_bucket")) {
      expect(sample.labels.le, `${sample.name} without le`).toBeDefined()
      entry.buckets.push([parseNumber(sample.labels.le!), sample.value])
    } else if (sample.name.endsWith("_count")) entry.count = sample.value
    else if (sample.name.endsWith("_sum")) entry.sum = sample.value
  }
  for (const [key, entry] of series) {
    const where = `${family.name}${key}`
    expect(entry.buckets.length, where).toBeGreaterThan(0)
    for (let i = 1; i < entry.buckets.length; i++) {
      expect(entry.buckets[i]![0], `${where}: le ascending`).toBeGreaterThan(entry.buckets[i - 1]![0])
      expect(entry.buckets[i]![1], `${where}: buckets cumulative`).toBeGreaterThanOrEqual(entry.buckets[i - 1]![1])
    }
    const last = entry.buckets[entry.buckets.length - 1]!
    expect(last[0], `${where}: last bucket`).toBe(Infinity)
    expect(last[1], `${where}: +Inf equals _count`).toBe(entry.count)
    expect(entry.sum, `${where}: _sum`).toBeDefined()
  }
}

/** The families of an OpenMetrics exposition, failing the test on anything the format forbids. */
export const parseOpenMetrics = (text: string): Map<string, Family> => {
  // The Prometheus parser first: it throws on a line it cannot read and types every family.
  const prometheus = parsePrometheusTextFormat(text)
  expect(text.endsWith("# EOF\n"), "ends with # EOF and a line feed").toBe(true)
  const lines = text.slice(0, -1).split("\n")
  expect(lines.indexOf("# EOF"), "# EOF only at the end").toBe(lines.length - 1)
  const families = new Map<string, Family>()
  let current: { name: string; type: string; unit?: string; help?: string; samples: Array<Sample> } | undefined
  const metadata = (kind: string, line: string) => {
    const [, name, rest] = /^# \w+ (\S+) ?(.*)$/.exec(line) ?? []
    expect(name, line).toMatch(NAME)
    if (current?.name !== name) {
      expect(families.has(name!), `family ${name} interleaved or repeated`).toBe(false)
      expect(kind, `${name}: # TYPE first`).toBe("TYPE")
      current = { name: name!, type: rest!, samples: [] }
      expect(Object.keys(suffixes), `${name}: type`).toContain(rest)
      families.set(name!, current as Family)
      return
    }
    expect(current.samples.length, `${name}: metadata before samples`).toBe(0)
    if (kind === "UNIT") {
      expect(name!.endsWith(`_${rest}`), `${name}: ends with its unit ${rest}`).toBe(true)
      current.unit = rest
    } else if (kind === "HELP") current.help = rest
    else expect.fail(`${line}: second # TYPE`)
  }
  for (const line of lines.slice(0, -1)) {
    expect(line.length, "no empty line").toBeGreaterThan(0)
    const kind = /^# (TYPE|UNIT|HELP) /.exec(line)?.[1]
    if (kind !== undefined) {
      metadata(kind, line)
      continue
    }
    expect(line.startsWith("#"), `${line}: unknown comment`).toBe(false)
    const [, name, labels, value] = SAMPLE.exec(line) ?? []
    expect(name, line).toBeDefined()
    expect(current, `${line}: sample without # TYPE`).toBeDefined()
    const suffix = name!.slice(current!.name.length)
    expect(name!.startsWith(current!.name) && suffixes[current!.type]!.includes(suffix), `${line} in ${current!.name}`)
      .toBe(true)
    const sample = { name: name!, labels: parseLabels(labels ?? ""), value: parseNumber(value!) }
    if (current!.type === "counter") {
      expect(sample.value, `${line}: a counter is not negative`).toBeGreaterThanOrEqual(0)
    }
    current!.samples.push(sample)
  }
  for (const family of families.values()) {
    if (family.type === "histogram") checkHistogram(family)
    // The Prometheus parser read the same family with the same type (a counter's `_total` samples
    // are a family of their own to it: the text format 0.0.4 has no suffix rule).
    const seen = prometheus.find((p) => p.name === family.name)
    expect(seen?.type, `${family.name} in the Prometheus parser`).toBe(family.type.toUpperCase())
  }
  return families
}

/** The value of the one sample of `name` whose labels include `labels`; 0 when there is none. */
export const sampleValue = (
  families: Map<string, Family>,
  name: string,
  labels: Readonly<Record<string, string>> = {}
): number => {
  const found = [...families.values()].flatMap((family) => family.samples).filter((sample) =>
    sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value)
  )
  expect(found.length, `${name}${JSON.stringify(labels)}: at most one sample`).toBeLessThanOrEqual(1)
  return found[0]?.value ?? 0
}
