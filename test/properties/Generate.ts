/**
 * Request bodies for the property tests of the write routes (test/properties): values generated
 * from each route's own request schema with Effect's `Arbitrary`, hostile mutations of them (NUL,
 * lone surrogates, 10 kB strings, bidirectional and zero-width characters, blank strings, unknown
 * keys, wrong types, deep nesting) and bytes that are no body at all (random bytes, truncated or
 * invalid UTF-8 documents, a JSON body under a form type and the reverse), each rendered as it goes
 * on the wire (JSON, `application/x-www-form-urlencoded` or `multipart/form-data`) and sent over
 * real HTTP. The routes come from the API definition (`HttpApi.reflect`), so a new write route is
 * covered without anyone editing the tests; one the tests cannot set up fails them.
 *
 * Every case is reproducible: the cases of a route are sampled from one seed (`PROPERTY_SEED`,
 * printed with every failure) and each case carries its own seed for the mutations.
 */
import { Arbitrary, Effect, Option, Schema, SchemaAST } from "effect"
import { HttpApi } from "effect/http-api"
import type { HttpApiGroup } from "effect/http-api"

// ---------------------------------------------------------------------------------------------
// Settings
// ---------------------------------------------------------------------------------------------

/** Bodies per route: 200 by default (`npm test`), `PROPERTY_RUNS=10000` for the long run. */
export const PROPERTY_RUNS = (() => {
  const runs = Number(process.env.PROPERTY_RUNS ?? "200")
  return Number.isSafeInteger(runs) && runs > 0 ? runs : 200
})()

/** The seed the cases are sampled from: fixed, so a run is repeatable; `PROPERTY_SEED` picks another. */
export const PROPERTY_SEED = process.env.PROPERTY_SEED ?? "shiori-properties"

/** Requests in flight per route: modest, the machine has two cores and other tests run beside. */
export const CONCURRENCY = 4

/**
 * The share of a route's answers that must come from past the gates (credential, CSRF token, rate
 * limits): below it most bodies never met the code they were made for, and the run proved little.
 */
export const MIN_REACHED = 0.25

// ---------------------------------------------------------------------------------------------
// Write routes, from the API definition
// ---------------------------------------------------------------------------------------------

/** `bytes`: a raw body of the payload's own media type (an image upload), kept as a `FilePart`. */
export type BodyKind = "json" | "form" | "multipart" | "bytes"

export interface Payload {
  readonly contentType: string
  readonly kind: BodyKind
  readonly schema: Schema.Top
}

export interface WriteRoute {
  /** `group.endpoint`, the key of the tests' set-up tables. */
  readonly key: string
  readonly method: string
  readonly path: string
  /** The request bodies the route declares; none: the route reads no body (it still gets the garbage). */
  readonly payloads: ReadonlyArray<Payload>
  readonly params: Schema.Top | undefined
  readonly headers: Schema.Top | undefined
  /** Identifiers of the declared error schemas (how the route refuses). */
  readonly errorIdentifiers: ReadonlyArray<string>
}

const kindOf = (tag: string): BodyKind | undefined =>
  tag === "Json"
    ? "json"
    : tag === "FormUrlEncoded"
    ? "form"
    : tag === "Multipart"
    ? "multipart"
    : tag === "Uint8Array"
    ? "bytes"
    : undefined

/** Every endpoint of `api` whose method is not GET or HEAD. */
export const writeRoutes = <Id extends string, Groups extends HttpApiGroup.Constraint>(
  api: HttpApi.HttpApi<Id, Groups>
): ReadonlyArray<WriteRoute> => {
  const routes: Array<WriteRoute> = []
  HttpApi.reflect(api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, errors, group }) => {
      if (endpoint.method === "GET" || endpoint.method === "HEAD") return
      const payloads: Array<Payload> = []
      for (const [contentType, { encoding, schemas }] of endpoint.payload) {
        const kind = kindOf(encoding._tag)
        if (kind === undefined) {
          throw new Error(`${endpoint.method} ${endpoint.path}: no generator for ${encoding._tag} bodies`)
        }
        payloads.push({ contentType, kind, schema: Schema.Union(schemas as ReadonlyArray<Schema.Top>) })
      }
      routes.push({
        key: `${group.identifier}.${endpoint.identifier}`,
        method: endpoint.method,
        path: endpoint.path,
        payloads,
        params: endpoint.params,
        headers: endpoint.headers,
        errorIdentifiers: [...errors.values()].flat().map((schema) => SchemaAST.resolveIdentifier(schema.ast) ?? "")
      })
    }
  })
  return routes
}

// ---------------------------------------------------------------------------------------------
// Values
// ---------------------------------------------------------------------------------------------

/** Text that goes on the wire as it is (deep nesting a serializer could not recurse through). */
class Raw {
  constructor(readonly text: string) {}
}

/** A file part of a multipart body. */
class FilePart {
  constructor(readonly bytes: Buffer, readonly contentType: string) {}
}

type Value = string | number | boolean | null | Raw | FilePart | ReadonlyArray<Value> | { readonly [k: string]: Value }

const isRecord = (u: unknown): u is Record<string, Value> =>
  typeof u === "object" && u !== null && !Array.isArray(u) && !(u instanceof Raw) && !(u instanceof FilePart)

/** A deterministic generator (mulberry32) for the mutations of one case. */
export interface Rng {
  readonly next: () => number
  readonly int: (n: number) => number
  readonly pick: <A>(items: ReadonlyArray<A>) => A
  readonly chance: (p: number) => boolean
}

export const rng = (seed: number): Rng => {
  let state = seed >>> 0
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const int = (n: number) => Math.floor(next() * n)
  return { next, int, pick: (items) => items[int(items.length)]!, chance: (p) => next() < p }
}

/** The generated value in its encoded (wire) form; a file of a multipart schema becomes a file part. */
const toWire = (schema: Schema.Top, generated: unknown, kind: BodyKind): Value => {
  if (kind === "bytes") return new FilePart(Buffer.from(generated as Uint8Array), "")
  const encoded = Option.getOrElse(
    Schema.encodeUnknownOption(schema as Schema.Codec<unknown, unknown>)(generated),
    // A decoded value some transformation cannot encode back: send it as generated.
    () => generated
  )
  const plain = (u: unknown): Value => {
    if (u === null || typeof u === "string" || typeof u === "boolean") return u
    if (typeof u === "number") return Number.isFinite(u) ? u : String(u)
    if (typeof u === "bigint") return u.toString()
    if (typeof u === "object" && (u as { _tag?: unknown })._tag === "PersistedFile") {
      return new FilePart(Buffer.from("GIF89a"), "image/gif")
    }
    if (Array.isArray(u)) {
      if (kind === "multipart" && u.length > 0 && u.every((p) => (p as { _tag?: unknown })._tag === "PersistedFile")) {
        return plain(u[0])
      }
      return u.map(plain)
    }
    if (u instanceof Date) return u.toISOString()
    if (typeof u === "object") {
      const out: Record<string, Value> = {}
      for (const [k, v] of Object.entries(u)) if (v !== undefined) out[k] = plain(v)
      return out
    }
    return String(u)
  }
  return plain(encoded)
}

// ---------------------------------------------------------------------------------------------
// Cases
// ---------------------------------------------------------------------------------------------

/** One generated case: a body per declared payload, path parameters, headers, and the seed of its mutations. */
export interface Generated {
  readonly bodies: ReadonlyArray<Value>
  readonly params: Record<string, string> | undefined
  readonly headers: Record<string, string> | undefined
  readonly seed: number
}

const Seed = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 2 ** 31 - 1 }))
const NoBody = Schema.Struct({})

const stringRecord = (u: unknown): Record<string, string> => {
  const out: Record<string, string> = {}
  if (isRecord(u)) { for (const [k, v] of Object.entries(u)) if (typeof v === "string") out[k] = v }
  return out
}

/** The Arbitrary of a route's cases, from its own schemas. */
export const casesOf = (route: WriteRoute): Arbitrary.Arbitrary<Generated> => {
  const payloads = route.payloads.length > 0
    ? route.payloads
    : [{ contentType: "application/json", kind: "json" as const, schema: NoBody }]
  return Arbitrary.all({
    bodies: Arbitrary.all(
      payloads.map((p) => Arbitrary.map(Arbitrary.schema(p.schema), (value) => toWire(p.schema, value, p.kind)))
    ),
    params: route.params === undefined
      ? Arbitrary.Constant(undefined)
      : Arbitrary.map(Arbitrary.schema(route.params), (v) => stringRecord(toWire(route.params!, v, "json"))),
    headers: route.headers === undefined
      ? Arbitrary.Constant(undefined)
      : Arbitrary.map(Arbitrary.schema(route.headers), (v) => stringRecord(toWire(route.headers!, v, "json"))),
    seed: Arbitrary.schema(Seed)
  })
}

/**
 * `count` cases of `route`, sampled in blocks of growing size (small values first, then larger and
 * more deeply nested ones), each block from its own seed derived from `PROPERTY_SEED`.
 */
export const sampleCases = (route: WriteRoute, count: number) =>
  Effect.gen(function*() {
    const arbitrary = casesOf(route)
    const sizes = [2, 6, 12, 24]
    const out: Array<Generated> = []
    for (let block = 0; out.length < count; block++) {
      const n = Math.min(100, count - out.length)
      const sample = yield* Arbitrary.sampleEffect(arbitrary, {
        count: n,
        size: sizes[block % sizes.length]!,
        seed: `${PROPERTY_SEED}/${route.key}/${block}`
      }).pipe(Effect.orDie)
      out.push(...sample)
    }
    return out
  })

// ---------------------------------------------------------------------------------------------
// Hostile values
// ---------------------------------------------------------------------------------------------

/** Strings a text field should survive, by class. */
export const hostileStrings: ReadonlyArray<readonly [label: string, value: () => string]> = [
  ["nul", () => "a\u0000b"],
  ["nul-only", () => "\u0000"],
  ["lone-high-surrogate", () => "\ud800"],
  ["lone-low-surrogate", () => "x\udfffy"],
  ["10kB", () => "x".repeat(10_000)],
  ["10kB-multibyte", () => "\u00e9\u3042".repeat(3_400)],
  ["rtl-override", () => "\u202Eevil\u202C"],
  ["zero-width", () => "\u200B\uFEFF"],
  ["zero-width-around", () => "\uFEFFname\u200B"],
  ["whitespace-only", () => " \t\n\u00a0\u3000"],
  ["empty", () => ""],
  ["control", () => "\u0001\u0007\u001b[31m\u007f"],
  ["percent", () => "%00%zz%"],
  ["html", () => "<script>alert(1)</script>&amp;\"'"]
]

/** Values of the wrong type for any field. */
const wrongTypes: ReadonlyArray<readonly [label: string, value: Value]> = [
  ["number", 42],
  ["huge-number", 1e308],
  ["negative", -1],
  ["float", 0.5],
  ["boolean", true],
  ["null", null],
  ["array", ["a", "b"]],
  ["empty-array", []],
  ["object", { nested: "x" }],
  ["empty-object", {}]
]

/** Numbers JSON can write but a double cannot hold, or holds as something else. */
const rawNumbers: ReadonlyArray<readonly [label: string, value: Value]> = [
  ["int-beyond-2^53", new Raw("9007199254740993")],
  ["int-beyond-int8", new Raw("123456789012345678901234567890")],
  ["overflow-to-infinity", new Raw("1e400")],
  ["negative-zero", new Raw("-0")],
  ["tiny", new Raw("5e-324")]
]

/** Path parameters: empty-looking, overflowing, percent-encoded NUL, lone surrogates, very long. */
export const hostileParams: ReadonlyArray<readonly [label: string, value: string]> = [
  ["zero", "0"],
  ["negative", "-1"],
  ["20-digits", "99999999999999999999"],
  ["beyond-int8", "9223372036854775808"],
  ["30-digits", "9".repeat(30)],
  ["exponent", "1e3"],
  ["space", " 1"],
  ["nul", "1\u0000"],
  ["lone-surrogate", "\ud800"],
  ["long", "x".repeat(1_000)],
  ["rtl", "\u202E1"],
  ["dot-dot", ".."]
]

const deep = (r: Rng): Raw => {
  const depth = r.pick([64, 512, 5_000])
  return r.chance(0.5)
    ? new Raw("[".repeat(depth) + "]".repeat(depth))
    : new Raw("{\"a\":".repeat(depth) + "1" + "}".repeat(depth))
}

const unknownKeys = ["unknown", "__proto__", "constructor", "prototype", "id", "admin", "roles", "\u0000", "\ud800"]

/** Paths of every leaf and every object in a value. */
const pathsOf = (value: Value, at: ReadonlyArray<string | number> = []): Array<ReadonlyArray<string | number>> => {
  if (Array.isArray(value)) return [at, ...value.flatMap((v, i) => pathsOf(v, [...at, i]))]
  if (isRecord(value)) return [at, ...Object.entries(value).flatMap(([k, v]) => pathsOf(v, [...at, k]))]
  return [at]
}

const getAt = (value: Value, path: ReadonlyArray<string | number>): Value | undefined =>
  path.reduce<Value | undefined>(
    (v, k) => (v !== undefined && (Array.isArray(v) || isRecord(v)) ? (v as any)[k] : undefined),
    value
  )

const setAt = (value: Value, path: ReadonlyArray<string | number>, next: Value | undefined): Value => {
  if (path.length === 0) return next ?? null
  const [head, ...rest] = path
  if (Array.isArray(value)) {
    const copy = [...value]
    if (next === undefined && rest.length === 0) copy.splice(head as number, 1)
    else copy[head as number] = setAt(copy[head as number] ?? null, rest, next)
    return copy
  }
  if (isRecord(value)) {
    const copy: Record<string, Value> = { ...value }
    if (next === undefined && rest.length === 0) delete copy[head as string]
    else copy[head as string] = setAt(copy[head as string] ?? null, rest, next)
    return copy
  }
  return value
}

const defineKey = (record: Record<string, Value>, key: string, value: Value) =>
  Object.defineProperty(record, key, { value, enumerable: true, writable: true, configurable: true })

/** One hostile change of `value`; answers the changed value and a label of the change. */
const mutate = (value: Value, r: Rng): readonly [Value, string] => {
  const paths = pathsOf(value)
  const strings = paths.filter((p) => p.length > 0 && typeof getAt(value, p) === "string")
  const leaves = paths.filter((p) => p.length > 0)
  const op = r.pick(
    ["string", "string", "inside", "inside", "unknown-key", "wrong-type", "number", "deep", "wide", "drop"] as const
  )
  switch (op) {
    case "inside": {
      // Into the middle of a text, so a value that must look like an email or a code still does.
      const [label, make] = r.pick(hostileStrings)
      if (strings.length === 0) return [value, "inside:none"]
      const at = r.pick(strings)
      const text = getAt(value, at) as string
      const cut = r.int(text.length + 1)
      return [setAt(value, at, text.slice(0, cut) + make() + text.slice(cut)), `inside:${label}`]
    }
    case "string": {
      const [label, make] = r.pick(hostileStrings)
      if (strings.length > 0) return [setAt(value, r.pick(strings), make()), `string:${label}`]
      // No text field: the hostile string goes where the route expects something else.
      if (leaves.length > 0) return [setAt(value, r.pick(leaves), make()), `string:${label}`]
      return [isRecord(value) ? { ...value, unknown: make() } : make(), `string:${label}`]
    }
    case "unknown-key": {
      const key = r.pick(unknownKeys)
      const [label, extra] = r.chance(0.5) ? ["string", "x"] as const : r.pick(wrongTypes)
      const target = r.pick(paths.filter((p) => isRecord(getAt(value, p))))
      if (target === undefined) return [value, "unknown-key:none"]
      const copy: Record<string, Value> = { ...(getAt(value, target) as Record<string, Value>) }
      defineKey(copy, key, extra)
      return [setAt(value, target, copy), `unknown-key:${JSON.stringify(key)}=${label}`]
    }
    case "wrong-type": {
      const [label, wrong] = r.pick(wrongTypes)
      if (leaves.length === 0) return [wrong, `wrong-type:body=${label}`]
      return [setAt(value, r.pick(leaves), wrong), `wrong-type:${label}`]
    }
    case "number": {
      const [label, number] = r.pick(rawNumbers)
      if (leaves.length === 0) return [isRecord(value) ? { ...value, n: number } : number, `number:${label}`]
      return [setAt(value, r.pick(leaves), number), `number:${label}`]
    }
    case "wide": {
      // Many items or many keys where a few are expected: work per item must stay bounded.
      // Copies of a small value only: 2,000 copies of a 10 kB one would be a body no server reads.
      const picked = leaves.length > 0 ? getAt(value, r.pick(leaves)) ?? "x" : "x"
      const item = toJson(picked).length <= 64 ? picked : "x"
      const wide: Value = r.chance(0.5)
        ? Array.from({ length: 2_000 }, () => item)
        : Object.fromEntries(Array.from({ length: 2_000 }, (_, i) => [`k${i}`, "x"]))
      if (leaves.length === 0) return [isRecord(value) ? { ...value, a: wide } : wide, "wide"]
      return [setAt(value, r.pick(leaves), wide), "wide"]
    }
    case "deep": {
      const nested = deep(r)
      if (leaves.length === 0) return [isRecord(value) ? { ...value, a: nested } : nested, "deep"]
      return [setAt(value, r.pick(leaves), nested), "deep"]
    }
    case "drop": {
      if (leaves.length === 0) return [value, "drop:none"]
      return [setAt(value, r.pick(leaves), undefined), "drop"]
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------------------

/** JSON text; lone surrogates come out as `\uD800` escapes (well-formed `JSON.stringify`), `Raw` as it is. */
const toJson = (value: Value): string => {
  if (value instanceof Raw) return value.text
  if (value instanceof FilePart) return JSON.stringify(value.bytes.toString("base64"))
  if (Array.isArray(value)) return `[${value.map(toJson).join(",")}]`
  if (isRecord(value)) {
    return `{${Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}:${toJson(v)}`).join(",")}}`
  }
  return JSON.stringify(value)
}

/**
 * Percent-encoding of any string: a lone surrogate (which `encodeURIComponent` refuses) goes out as
 * the three bytes UTF-8 would have given it, which are not UTF-8 (RFC 3629 section 3).
 */
export const percentEncode = (s: string): string => {
  let out = ""
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1)
      if (d >= 0xdc00 && d <= 0xdfff) {
        out += encodeURIComponent(s.slice(i, i + 2))
        i++
        continue
      }
    }
    if (c >= 0xd800 && c <= 0xdfff) {
      out += `%${(0xe0 | (c >> 12)).toString(16)}%${(0x80 | ((c >> 6) & 0x3f)).toString(16)}%${
        (0x80 | (c & 0x3f)).toString(16)
      }`.toUpperCase()
      continue
    }
    out += encodeURIComponent(s[i]!)
  }
  return out
}

const formScalar = (value: Value): string =>
  typeof value === "string"
    ? value
    : value instanceof Raw
    ? value.text
    : value instanceof FilePart
    ? value.bytes.toString("latin1")
    : toJson(value)

/** A form: arrays repeat their key, objects take bracketed keys (`a[b]=`), null is a bare key. */
const toForm = (value: Value): string => {
  if (!isRecord(value)) return percentEncode(formScalar(value))
  const pairs: Array<string> = []
  const add = (key: string, v: Value, depth: number) => {
    if (v === null) pairs.push(percentEncode(key))
    else if (Array.isArray(v)) { for (const item of v) add(key, item, depth + 1) }
    else if (isRecord(v) && depth < 3) {
      for (const [k, inner] of Object.entries(v)) add(`${key}[${k}]`, inner, depth + 1)
    } else pairs.push(`${percentEncode(key)}=${percentEncode(formScalar(v))}`)
  }
  for (const [k, v] of Object.entries(value)) add(k, v, 0)
  return pairs.join("&")
}

/** UTF-8, except that a lone surrogate becomes the three bytes of its code unit (not UTF-8). */
const toUtf8 = (s: string): Buffer => /[\ud800-\udfff]/u.test(s) ? rawUtf8(s) : Buffer.from(s, "utf8")

/** Byte-level UTF-8 that keeps lone surrogates as their three-byte form. */
const rawUtf8 = (s: string): Buffer => {
  const bytes: Array<number> = []
  for (let i = 0; i < s.length; i++) {
    const c = s.codePointAt(i)!
    if (c > 0xffff) i++
    if (c < 0x80) bytes.push(c)
    else if (c < 0x800) bytes.push(0xc0 | (c >> 6), 0x80 | (c & 0x3f))
    else if (c < 0x10000) bytes.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f))
    else bytes.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 0x3f), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f))
  }
  return Buffer.from(bytes)
}

const BOUNDARY = "----shiori-property-boundary"

const toMultipart = (value: Value, boundary = BOUNDARY): Buffer => {
  const parts: Array<Buffer> = []
  const entries: Array<readonly [string, Value]> = isRecord(value) ? Object.entries(value) : [["value", value]]
  const add = (name: string, v: Value) => {
    if (Array.isArray(v)) {
      for (const item of v) add(name, item)
      return
    }
    const disposition = `Content-Disposition: form-data; name="${name.replace(/["\r\n]/gu, "_")}"`
    parts.push(Buffer.from(`--${boundary}\r\n`))
    if (v instanceof FilePart) {
      parts.push(Buffer.from(`${disposition}; filename="upload.bin"\r\nContent-Type: ${v.contentType}\r\n\r\n`))
      parts.push(v.bytes)
    } else {
      parts.push(Buffer.from(`${disposition}\r\n\r\n`), toUtf8(formScalar(v)))
    }
    parts.push(Buffer.from("\r\n"))
  }
  for (const [k, v] of entries) add(k, v)
  parts.push(Buffer.from(`--${boundary}--\r\n`))
  return Buffer.concat(parts)
}

/** The media type of a body of `kind`; a raw body's is its payload's own (`declared`). */
const contentTypeOf = (kind: BodyKind, declared = "application/octet-stream") =>
  kind === "bytes"
    ? declared
    : kind === "json"
    ? "application/json"
    : kind === "form"
    ? "application/x-www-form-urlencoded"
    : `multipart/form-data; boundary=${BOUNDARY}`

const render = (kind: BodyKind, value: Value): Buffer =>
  kind === "bytes"
    ? value instanceof FilePart ? value.bytes : value instanceof Uint8Array ? Buffer.from(value) : toUtf8(toJson(value))
    : kind === "json"
    ? toUtf8(toJson(value))
    : kind === "form"
    ? Buffer.from(toForm(value))
    : toMultipart(value)

// A 1x1 GIF: the smallest image an avatar upload can decode.
const TINY_GIF = Buffer.from("R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==", "base64")

const randomBytes = (r: Rng, n: number) => Buffer.from(Array.from({ length: n }, () => r.int(256)))

/** A raw body changed: bytes flipped, cut short, or followed by other bytes (a polyglot). */
const mutateBytes = (value: Value, r: Rng): readonly [Value, string] => {
  const bytes = Buffer.from(render("bytes", value))
  switch (r.int(3)) {
    case 0: {
      for (let i = 0; i < 1 + r.int(8) && bytes.length > 0; i++) bytes[r.int(bytes.length)] = r.int(256)
      return [new FilePart(bytes, ""), "bytes-flipped"]
    }
    case 1:
      return [new FilePart(bytes.subarray(0, r.int(Math.max(1, bytes.length))), ""), "bytes-truncated"]
    default:
      return [new FilePart(Buffer.concat([bytes, randomBytes(r, 1 + r.int(512))]), ""), "bytes-appended"]
  }
}

/** Files of a multipart body: an image, random bytes, or an image's start with garbage after it. */
const fileBytes = (r: Rng): FilePart =>
  r.pick([
    () => new FilePart(TINY_GIF, "image/gif"),
    () => new FilePart(randomBytes(r, r.int(2048)), r.pick(["image/png", "application/octet-stream", ""])),
    () => new FilePart(Buffer.concat([TINY_GIF.subarray(0, 13), randomBytes(r, 64)]), "image/gif"),
    () => new FilePart(Buffer.alloc(0), "image/png")
  ])()

const withFiles = (value: Value, r: Rng): Value => {
  if (value instanceof FilePart) return fileBytes(r)
  if (Array.isArray(value)) return value.map((v) => withFiles(v, r))
  if (isRecord(value)) {
    const out: Record<string, Value> = {}
    for (const [k, v] of Object.entries(value)) defineKey(out, k, withFiles(v, r))
    return out
  }
  return value
}

/** Bodies that are not a body of the route at all, by class. */
const garbage = (
  kind: BodyKind,
  value: Value,
  r: Rng,
  declared?: string
): readonly [label: string, type: string | undefined, body: Buffer] => {
  const own = contentTypeOf(kind, declared)
  const rendered = render(kind, value)
  const choice = r.int(12)
  switch (choice) {
    case 0:
      return ["random-bytes", own, randomBytes(r, r.int(1024))]
    case 1:
      return ["truncated", own, rendered.subarray(0, r.int(Math.max(1, rendered.length)))]
    case 2: {
      // Invalid UTF-8 inside the document: a stray continuation byte, an overlong NUL, a surrogate's bytes, 0xFF.
      const bad = r.pick([[0xff, 0xfe], [0xc3, 0x28], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0x80], [
        0xf4,
        0x90,
        0x80,
        0x80
      ]])
      const quote = rendered.indexOf(kind === "json" ? 0x22 : 0x3d, r.int(Math.max(1, rendered.length)))
      const at = quote < 0 ? rendered.length : quote + 1
      return ["invalid-utf8", own, Buffer.concat([rendered.subarray(0, at), Buffer.from(bad), rendered.subarray(at)])]
    }
    case 3:
      return kind === "json"
        ? ["json-as-form", "application/x-www-form-urlencoded", rendered]
        : ["form-as-json", "application/json", Buffer.from(toForm(value))]
    case 4:
      return kind === "multipart"
        ? ["multipart-as-form", "application/x-www-form-urlencoded", rendered]
        : ["body-as-multipart", `multipart/form-data; boundary=${BOUNDARY}`, rendered]
    case 5:
      return ["empty", own, Buffer.alloc(0)]
    case 6:
      return ["no-content-type", undefined, rendered]
    case 7: {
      const type = r.pick([
        "text/plain",
        "application/xml",
        "application/octet-stream",
        "application/json; charset=utf-16"
      ])
      return [`content-type:${type}`, type, type.endsWith("utf-16") ? Buffer.from(toJson(value), "utf16le") : rendered]
    }
    case 8: {
      const text = r.pick(["[]", "null", "42", "\"text\"", "true", "{}", "{\"a\":1,\"a\":2}", "\uFEFF{}"])
      return [`json-not-an-object:${text}`, own, Buffer.from(text)]
    }
    case 9:
      return ["nul-bytes", own, Buffer.concat([rendered, Buffer.from([0, 0, 0])])]
    case 10:
      return kind === "multipart"
        ? [
          "multipart-broken",
          own,
          r.pick([
            Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"\r\n\r\nno end`),
            Buffer.from(`--other\r\n\r\n--other--`),
            Buffer.from(`--${BOUNDARY}\r\n${"X-Long: " + "a".repeat(20_000)}\r\n\r\nx\r\n--${BOUNDARY}--`)
          ])
        ]
        : ["multipart-without-boundary", "multipart/form-data", rendered]
    default:
      return ["deep-document", own, Buffer.from(kind === "form" ? `a${"[a]".repeat(2_000)}=1` : deep(r).text)]
  }
}

// ---------------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------------

/** What a route needs so a generated body is decoded at all: credentials, and values that exist. */
export interface RouteSetup {
  /** Headers every request carries (credentials, cookies). */
  readonly headers?: Readonly<Record<string, string>>
  /** Path parameters that exist; half the requests take one of them instead of a generated one. */
  readonly params?: ReadonlyArray<Record<string, string>>
  /**
   * Body fields with working values (a CSRF token, a client's credentials); three generated bodies in four
   * take one set of them, so their other fields get past the first checks.
   */
  readonly fields?: ReadonlyArray<Record<string, string>>
  /**
   * Whole bodies the route accepts; three cases in ten start from one of them instead of the
   * generated value, so a hostile change meets the code behind the schema (a value that reaches the
   * database) rather than a body refused for another field.
   */
  readonly valid?: ReadonlyArray<unknown>
  /** Query strings (`?name=value`) the route needs; each request takes one of them. */
  readonly query?: ReadonlyArray<string>
}

export interface WireRequest {
  readonly method: string
  readonly path: string
  readonly headers: Record<string, string>
  readonly body: Buffer
  /**
   * How the body was made, `<source>+<how>[+param:<class>]`: the source `schema`, `schema&fields` or
   * `valid`; how `as-is`, `mutated:<changes>` or `garbage:<class>`.
   */
  readonly input: string
}

const headerSafe = (value: string) => /^[\x20-\x7e]*$/u.test(value)

/** The request of a generated case. */
export const requestOf = (
  route: WriteRoute,
  generated: Generated,
  setups: RouteSetup | ReadonlyArray<RouteSetup>
): WireRequest => {
  const r = rng(generated.seed)
  const setup: RouteSetup = Array.isArray(setups) ? r.pick(setups) : setups as RouteSetup
  const which = r.int(generated.bodies.length)
  const kind = route.payloads[which]?.kind ?? "json"
  const declared = route.payloads[which]?.contentType
  // Where the body starts: the generated value, with working fields laid over it, or a body the route accepts.
  let value: Value = generated.bodies[which] ?? null
  let source = "schema"
  if (setup.valid !== undefined && setup.valid.length > 0 && r.chance(0.3)) {
    value = r.pick(setup.valid) as Value
    source = "valid"
  } else if (setup.fields !== undefined && setup.fields.length > 0 && isRecord(value) && r.chance(0.75)) {
    value = { ...value, ...r.pick(setup.fields) }
    source = "schema&fields"
  }
  if (kind === "multipart") value = withFiles(value, r)

  // Path: a parameter that exists or the generated one, now and then a hostile one.
  let path = route.path
  const params = setup.params !== undefined && setup.params.length > 0 && r.chance(0.5)
    ? { ...r.pick(setup.params) }
    : { ...generated.params }
  const names = Object.keys(params)
  const extra: Array<string> = []
  if (names.length > 0 && r.chance(0.1)) {
    const [label, hostile] = r.pick(hostileParams)
    params[r.pick(names)] = hostile
    extra.push(`param:${label}`)
  }
  for (const [name, v] of Object.entries(params)) path = path.replace(`:${name}`, percentEncode(v))
  if (setup.query !== undefined && setup.query.length > 0) path += r.pick(setup.query)

  const headers: Record<string, string> = {}
  for (const [name, v] of Object.entries(generated.headers ?? {})) if (headerSafe(v)) headers[name] = v
  Object.assign(headers, setup.headers)
  const request = (body: Buffer, how: string): WireRequest => ({
    method: route.method,
    path,
    headers,
    body,
    input: [source, how, ...extra].join("+")
  })

  const roll = r.next()
  if (roll < 0.4) {
    headers["content-type"] = contentTypeOf(kind, declared)
    return request(render(kind, value), "as-is")
  }
  if (roll < 0.8) {
    const changes: Array<string> = []
    const times = r.chance(0.7) ? 1 : 2 + r.int(2)
    for (let i = 0; i < times; i++) {
      const [next, label] = kind === "bytes" ? mutateBytes(value, r) : mutate(value, r)
      value = next
      changes.push(label)
    }
    headers["content-type"] = contentTypeOf(kind, declared)
    return request(render(kind, value), `mutated:${changes.join(",")}`)
  }
  const [label, type, body] = garbage(kind, value, r, declared)
  if (type !== undefined) headers["content-type"] = type
  return request(body, `garbage:${label}`)
}

export interface Answer {
  readonly status: number
  readonly contentType: string
  readonly text: string
  /** Milliseconds from sending to the whole answer (reported, never asserted). */
  readonly ms: number
}

/** Sends a request; a connection that ends without an answer is status 0. */
export const send = (base: string, request: WireRequest): Effect.Effect<Answer> =>
  Effect.promise(async () => {
    const started = Date.now()
    try {
      const res = await fetch(`${base}${request.path}`, {
        method: request.method,
        headers: request.headers,
        redirect: "manual",
        ...(request.method === "GET" ? {} : { body: new Uint8Array(request.body) })
      })
      const text = await res.text()
      return { status: res.status, contentType: res.headers.get("content-type") ?? "", text, ms: Date.now() - started }
    } catch (error) {
      const text = `no answer: ${String((error as Error)?.cause ?? error)}`
      return { status: 0, contentType: "", text, ms: Date.now() - started }
    }
  })

// ---------------------------------------------------------------------------------------------
// Running a route
// ---------------------------------------------------------------------------------------------

/** What is wrong with an answer (undefined: nothing), and whether the body got past the gates. */
export interface Verdict {
  readonly violation: string | undefined
  readonly reached: boolean
}

export interface Failure {
  readonly route: string
  readonly input: string
  readonly status: number
  readonly violation: string
  readonly request: WireRequest
  readonly answer: Answer
  readonly index: number
}

export interface RouteResult {
  readonly route: string
  readonly total: number
  readonly reached: number
  readonly statuses: Record<number, number>
  /** Statuses by the kind of input (`schema`, `mutated:string:nul`, `garbage:truncated`...). */
  readonly byInput: Record<string, Record<number, number>>
  /** The slowest answer: where a body costs the server time, reported (never asserted). */
  readonly slowest: { readonly ms: number; readonly request: WireRequest; readonly status: number } | undefined
  /** The first failure of each class (route, input class, status, violation), with its count. */
  readonly failures: ReadonlyArray<Failure & { readonly count: number }>
}

/** The class of an input for grouping failures: the kinds of change, without their values. */
const inputClass = (input: string) => input.replace(/unknown-key:[^,=]*=/gu, "unknown-key:=")

/** The kinds of input a label names, one per change (`mutated:string:nul,deep+param:zero` is three). */
const inputKinds = (input: string): Array<string> =>
  input.split("+").flatMap((part) => {
    if (part.startsWith("mutated:")) {
      return part.slice("mutated:".length).split(",").map((change) =>
        `mutated:${change.replace(/^unknown-key:.*$/u, "unknown-key")}`
      )
    }
    return [part.replace(/^(garbage:[^:]*).*$/u, "$1")]
  })

/** Sends `PROPERTY_RUNS` generated cases of `route` and judges every answer. */
export const runRoute = (
  base: string,
  route: WriteRoute,
  /** One set-up, or several (say, one per user) of which each request takes one. */
  setup: RouteSetup | ReadonlyArray<RouteSetup>,
  judge: (request: WireRequest, answer: Answer) => Verdict,
  runs = PROPERTY_RUNS
) =>
  Effect.gen(function*() {
    const cases = yield* sampleCases(route, runs)
    const statuses: Record<number, number> = {}
    const byInput: Record<string, Record<number, number>> = {}
    const failures = new Map<string, Failure & { count: number }>()
    let reached = 0
    let slowest: RouteResult["slowest"] = undefined
    yield* Effect.forEach(
      cases,
      (generated, index) => {
        const request = requestOf(route, generated, setup)
        return Effect.map(send(base, request), (answer) => {
          statuses[answer.status] = (statuses[answer.status] ?? 0) + 1
          if (slowest === undefined || answer.ms > slowest.ms) {
            slowest = { ms: answer.ms, request, status: answer.status }
          }
          for (const kind of inputKinds(request.input)) {
            const counts = (byInput[kind] ??= {})
            counts[answer.status] = (counts[answer.status] ?? 0) + 1
          }
          const verdict = judge(request, answer)
          if (verdict.reached) reached++
          if (verdict.violation === undefined) return
          const key = `${inputClass(request.input)} -> ${answer.status} ${verdict.violation}`
          const known = failures.get(key)
          if (known !== undefined) known.count++
          else {
            failures.set(key, {
              route: `${route.method} ${route.path} (${route.key})`,
              input: request.input,
              status: answer.status,
              violation: verdict.violation,
              request,
              answer,
              index,
              count: 1
            })
          }
        })
      },
      { concurrency: CONCURRENCY, discard: true }
    )
    return {
      route: route.key,
      total: cases.length,
      reached,
      statuses,
      byInput,
      slowest,
      failures: [...failures.values()]
    } satisfies RouteResult as RouteResult
  })

const clip = (s: string, n: number) => s.length > n ? `${s.slice(0, n)}... (${s.length} chars)` : s

/** A failure as a reader reproduces it: the route, what was sent (JSON-escaped) and what came back. */
export const describeFailure = (f: Failure & { readonly count: number }): string =>
  [
    `${f.route}: ${f.violation} (status ${f.status}; ${f.count}x; input ${f.input})`,
    `  sent:   ${f.request.method} ${clip(f.request.path, 200)}`,
    `          headers ${JSON.stringify(f.request.headers).replace(/(Bearer |shiori_session=)[^"; ]+/gu, "$1<...>")}`,
    `          body ${JSON.stringify(clip(f.request.body.toString("utf8"), 300))} (${f.request.body.length} bytes)`,
    `  answer: ${f.status} ${f.answer.contentType} ${JSON.stringify(clip(f.answer.text, 300))}`,
    `  replay: PROPERTY_SEED=${JSON.stringify(PROPERTY_SEED)} PROPERTY_RUNS=${PROPERTY_RUNS}, case ${f.index}`
  ].join("\n")

/**
 * A route's run in one line: answers by status and the share that got past the gates; with
 * `PROPERTY_VERBOSE=1`, the statuses of each kind of input too.
 */
export const summarize = (r: RouteResult): string =>
  `${r.route}: ${r.total} bodies, ${r.reached} past the gates, statuses ${JSON.stringify(r.statuses)}${
    r.failures.length > 0 ? `, ${r.failures.length} failure classes` : ""
  }${
    r.slowest === undefined
      ? ""
      : `, slowest ${r.slowest.ms} ms (${r.slowest.status}, ${r.slowest.request.input}, body ${
        JSON.stringify(clip(r.slowest.request.body.toString("utf8"), 120))
      })`
  }${
    process.env.PROPERTY_VERBOSE === "1"
      ? Object.entries(r.byInput).sort(([a], [b]) => a.localeCompare(b))
        .map(([kind, counts]) => `\n  ${kind}: ${JSON.stringify(counts)}`).join("")
      : ""
  }`
