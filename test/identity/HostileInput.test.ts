/**
 * Bad input never hurts the identity server (in the spirit of test/catalog/HostileInput.test.ts):
 * every route of the identity API, taken from its definition (schema/Api/IdentityApi.ts), gets very
 * long values, NUL bytes, malformed percent-encoding, invalid UTF-8, repeated parameters, JSON that
 * is not an object or is nested thousands deep, wrong content types and hostile headers, one thing
 * at a time on top of an otherwise valid request (valid client, session, CSRF tokens) so the hostile
 * value reaches as deep as it can. Every answer is below 500; 4xx answers are in the route's style.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, SchemaAST } from "effect"
import { HttpApi } from "effect/http-api"
import * as Crypto from "node:crypto"
import { IdentityApi } from "../../schema/Api/IdentityApi.js"
import { EnvelopeCodes } from "../../schema/Identity/Envelope.js"
import { OAuthErrorCode } from "../../schema/Identity/OAuthError.js"
import {
  codeParams,
  cookiesOf,
  createClient,
  hiddenValue,
  IdentityServers,
  IdentityTestEnv,
  serverLayerOptions,
  signIn
} from "../support/IdentityServers.js"
import { rawRequest } from "../support/RawHttp.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

interface Route {
  readonly method: string
  readonly path: string
  readonly query: ReadonlyArray<string>
  /** Body fields and whether the body is a form (else JSON); undefined without a body. */
  readonly body: { readonly fields: ReadonlyArray<string>; readonly form: boolean } | undefined
}

/** The property names of a schema's encoded side (those common to every member of a union). */
const fieldsOf = (ast: SchemaAST.AST): Array<string> => {
  const names = (encoded: SchemaAST.AST): Array<string> => {
    switch (encoded._tag) {
      case "Objects":
        return encoded.propertySignatures.map((ps) => String(ps.name))
      case "Suspend":
        return names(encoded.thunk())
      case "Union": {
        const [first = [], ...rest] = encoded.types.map(names)
        return first.filter((name) => rest.every((other) => other.includes(name)))
      }
      default:
        return []
    }
  }
  return names(SchemaAST.toEncoded(ast))
}

/** Every route of the identity API with its query and body fields, from the API definition. */
const routes: ReadonlyArray<Route> = (() => {
  const out: Array<Route> = []
  HttpApi.reflect(IdentityApi, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => {
      const payload = [...endpoint.payload.entries()][0]
      out.push({
        method: endpoint.method,
        path: endpoint.path,
        query: endpoint.query === undefined ? [] : fieldsOf(endpoint.query.ast),
        body: endpoint.method === "GET" || payload === undefined ? undefined : {
          fields: fieldsOf(payload[1].schemas[0].ast),
          form: payload[0] === "application/x-www-form-urlencoded"
        }
      })
    }
  })
  return out
})()

const long = "x".repeat(10_000)
// Random, so nothing along the way (PostgreSQL's index rows) can compress it.
const longRandom = Crypto.randomBytes(7_500).toString("base64url")

/** Hostile values of one query or form field, already percent-encoded as they go on the wire. */
const encodedVariants = (name: string): ReadonlyArray<string> => [
  `${name}=${long}`,
  `${name}=${longRandom}`,
  `${name}=a%00b`,
  `${name}=%zz`,
  `${name}=%`,
  `${name}=%E0%A4%A`,
  `${name}=%FF%FE%FD`,
  `${name}=%C0%80`,
  `${name}=%ED%A0%80`,
  `${name}=${encodeURIComponent("\u202Eevil\u200B\uFEFF😀")}`,
  `${name}=a&${name}=b`,
  `${name}[]=a`,
  `${name}`
]

/** Hostile values of one JSON field. */
const jsonVariants: ReadonlyArray<unknown> = [
  long,
  longRandom,
  "a\u0000b",
  "\ud800",
  1e308,
  -1,
  true,
  null,
  ["a", "b"],
  { nested: { deeper: "x" } },
  JSON.parse("[".repeat(2000) + "]".repeat(2000))
]

const nestedArray = "[".repeat(20_000) + "]".repeat(20_000)
const nestedObject = "{\"a\":".repeat(5_000) + "1" + "}".repeat(5_000)

/** Whole bodies, whatever the route expects, with the content type they are sent as. */
const bodyVariants: ReadonlyArray<{ readonly type: string | undefined; readonly body: string | Buffer }> = [
  { type: "application/json", body: "[]" },
  { type: "application/json", body: "\"a string\"" },
  { type: "application/json", body: "42" },
  { type: "application/json", body: "null" },
  { type: "application/json", body: "true" },
  { type: "application/json", body: "" },
  { type: "application/json", body: "{\"email\":" },
  { type: "application/json", body: nestedArray },
  { type: "application/json", body: nestedObject },
  { type: "application/json", body: "{\"__proto__\":{\"admin\":true},\"constructor\":{\"prototype\":1}}" },
  {
    type: "application/json",
    body: Buffer.from([0x7b, 0x22, 0x61, 0xff, 0xfe, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d])
  },
  { type: "application/json; charset=utf-16", body: Buffer.from("{\"a\":\"b\"}", "utf16le") },
  { type: "application/x-www-form-urlencoded", body: "{\"email\":\"a@b.c\"}" },
  { type: "application/x-www-form-urlencoded", body: "email=%zz&password=%&=&&==" },
  {
    type: "application/x-www-form-urlencoded",
    body: Buffer.from([0x65, 0x3d, 0xff, 0xfe, 0x26, 0xc3, 0x28, 0x3d, 0x31])
  },
  { type: "application/x-www-form-urlencoded", body: "__proto__=x&constructor=y&hasOwnProperty=z" },
  { type: "text/plain", body: "grant_type=authorization_code" },
  { type: "application/xml", body: "<a>&xxe;</a>" },
  { type: "multipart/form-data; boundary=x", body: "--x\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nb\r\n--" },
  { type: "multipart/form-data", body: "garbage" },
  { type: "", body: "a=b" },
  { type: undefined, body: "a=b" },
  { type: "application/json", body: Buffer.from("\u0000\u0001\u0002") }
]

const basic = (value: string) => `Basic ${Buffer.from(value).toString("base64")}`

const headerVariants: ReadonlyArray<Record<string, string>> = [
  { authorization: `Bearer ${long}` },
  { authorization: "Bearer " },
  { authorization: "Bearer a.b.c" },
  { authorization: "Basic %%%" },
  { authorization: basic("no-colon") },
  { authorization: basic(`${long}:${long}`) },
  { authorization: basic("%zz:%E0%A4%A") },
  { authorization: `Basic ${long}` },
  { cookie: `shiori_session=${long}; shiori_csrf=${long}` },
  { cookie: "shiori_session=%zz; shiori_csrf=%00" },
  { accept: "application/json" },
  { accept: long },
  { "x-forwarded-for": "%zz, not-an-address, 999.1.1.1" }
]

const OAUTH_ERRORS: ReadonlyArray<string> = OAuthErrorCode.literals
const ENVELOPE_CODES: ReadonlyArray<number> = Object.values(EnvelopeCodes).map((e) => e.code)

interface Answer {
  readonly status: number
  readonly type: string
  readonly text: string
}

/** Below 500, and a 4xx in the style of its route. */
const expectHandled = (label: string, path: string, headers: Record<string, string>, res: Answer) => {
  expect(res.status, `${label} -> ${res.status} ${res.text.slice(0, 300)}`).toBeLessThan(500)
  // 431: Node's own answer to a request line over its 16 KiB limit; it never reaches the application.
  if (res.status < 400 || res.status === 404 || res.status === 405 || res.status === 431) return
  const detail = `${label} -> ${res.status} ${res.type} ${res.text.slice(0, 200)}`
  if (path === "/api/v1/oauth/token" || path === "/api/v1/oauth/revoke") {
    expect(res.type, detail).toMatch(/^application\/json/)
    expect(OAUTH_ERRORS, detail).toContain(JSON.parse(res.text).error)
  } else if (path.startsWith("/api/v1/auth/")) {
    expect(res.type, detail).toMatch(/^application\/json/)
    expect(ENVELOPE_CODES, detail).toContain(JSON.parse(res.text).code)
  } else if (path.startsWith("/api/v1/ui/") && headers.accept !== "application/json") {
    expect(res.type, detail).toMatch(/^text\/html/)
  } else if (res.type.startsWith("application/json")) {
    expect(() => JSON.parse(res.text), detail).not.toThrow()
  }
}

describe("hostile input on every identity route", () => {
  it.layer(IdentityTestEnv(), serverLayerOptions)((it) => {
    it.effect(
      "very long, NUL-bearing, badly encoded, repeated, mistyped and deeply nested input never gets a 5xx",
      () =>
        Effect.gen(function*() {
          const { identity } = yield* IdentityServers
          const client = yield* createClient({ autoConsent: false })
          const session = yield* signIn(identity)
          const { email, password } = session.user

          // A browser's cookies and the pages' CSRF tokens, all bound to one CSRF cookie and the session.
          const loginPage = yield* promise(() => fetch(`${identity}/api/v1/ui/login`))
          const csrfCookie = cookiesOf(loginPage).join("; ")
          const loginCsrf = hiddenValue(yield* promise(() => loginPage.text()), "csrf")
          const cookie = `${session.cookie}; ${csrfCookie}`
          const authorizeParams = codeParams(client, { scope: "openid profile" })
          const consentPage = yield* promise(() =>
            fetch(`${identity}/api/v1/ui/consent?${new URLSearchParams(authorizeParams)}`, { headers: { cookie } })
              .then((r) => r.text())
          )
          const logoutQuery = { client_id: client.clientId, redirect: client.redirectUri, state: "s" }
          const logoutPage = yield* promise(() =>
            fetch(`${identity}/api/v1/ui/logout?${new URLSearchParams(logoutQuery)}`, { headers: { cookie } })
              .then((r) => r.text())
          )

          /** A valid request of each route that has inputs: the values the hostile ones replace. */
          const valid: Record<string, Record<string, string>> = {
            "GET /api/v1/oauth/authorize": authorizeParams,
            "GET /api/v1/ui/consent": authorizeParams,
            "GET /api/v1/ui/login": { return_to: "/api/v1/oauth/authorize?client_id=x", login_hint: email },
            "GET /api/v1/ui/logout": logoutQuery,
            "GET /api/v1/oauth/logout": logoutQuery,
            "GET /api/v1/oauth/post-logout-redirect": logoutQuery,
            "POST /api/v1/oauth/token": {
              grant_type: "authorization_code",
              code: "0".repeat(64),
              redirect_uri: client.redirectUri,
              client_id: client.clientId,
              client_secret: client.secret!
            },
            "POST /api/v1/oauth/revoke": { token: "x", client_id: client.clientId, client_secret: client.secret! },
            "POST /api/v1/auth/login": { email, password },
            "POST /api/v1/ui/login": { csrf: loginCsrf, email, password, return_to: "/api/v1/ui/login" },
            "POST /api/v1/ui/consent": {
              csrf: hiddenValue(consentPage, "csrf"),
              request: hiddenValue(consentPage, "request"),
              decision: "deny"
            },
            "POST /api/v1/ui/logout": { ...logoutQuery, csrf: hiddenValue(logoutPage, "csrf"), decision: "cancel" }
          }
          const authFor = (path: string): Record<string, string> =>
            path === "/api/v1/oauth/authorize" || path === "/api/v1/auth/me"
              ? { authorization: `Bearer ${session.accessToken}`, cookie }
              : { cookie }

          const send = (
            label: string,
            route: Route,
            input: {
              readonly path?: string
              readonly query?: string
              readonly headers?: Record<string, string>
              readonly type?: string | undefined
              readonly body?: string | Buffer
            }
          ) => {
            const path = input.path ?? route.path
            const headers: Record<string, string> = { ...authFor(route.path), ...input.headers }
            if (input.type !== undefined) headers["content-type"] = input.type
            return promise(async () => {
              const res = await fetch(`${identity}${path}${input.query === undefined ? "" : `?${input.query}`}`, {
                method: route.method,
                redirect: "manual",
                headers,
                ...(input.body === undefined
                  ? {}
                  : { body: typeof input.body === "string" ? input.body : new Uint8Array(input.body) })
              })
              return { status: res.status, type: res.headers.get("content-type") ?? "", text: await res.text() }
            }).pipe(Effect.map((res) => expectHandled(`${route.method} ${label}`, route.path, headers, res)))
          }

          const encode = (values: Record<string, string>, except?: string) =>
            Object.entries(values).filter(([key]) => key !== except)
              .map(([key, value]) => `${encodeURIComponent(key)}=${encodeURIComponent(value)}`)

          let requests = 0
          for (const route of routes) {
            const base = valid[`${route.method} ${route.path}`] ?? {}
            const cases: Array<Effect.Effect<void>> = []
            const validQuery = route.body === undefined ? base : {}
            const validBody = route.body === undefined ? {} : base
            const bodyType = route.body?.form === false ? "application/json" : "application/x-www-form-urlencoded"
            const validBodyText = route.body?.form === false
              ? JSON.stringify(validBody)
              : encode(validBody).join("&")
            const sendQuery = (query: string, label = query) =>
              send(`${route.path}?${label.slice(0, 80)}`, route, {
                query,
                ...(route.body === undefined ? {} : { type: bodyType, body: validBodyText })
              })
            // Query parameters: declared ones one at a time, and unknown ones.
            for (const name of [...route.query, "unknown", long]) {
              for (const variant of encodedVariants(name)) {
                cases.push(sendQuery([...encode(validQuery, name), variant].join("&")))
              }
            }
            // Body fields one at a time: as a form and, where JSON is what it takes, as JSON values.
            if (route.body !== undefined) {
              for (const name of [...route.body.fields, "unknown"]) {
                for (const variant of encodedVariants(name)) {
                  cases.push(
                    send(`${route.path} form ${variant.slice(0, 60)}`, route, {
                      type: "application/x-www-form-urlencoded",
                      body: [...encode(validBody, name), variant].join("&")
                    })
                  )
                }
                if (!route.body.form) {
                  for (const value of jsonVariants) {
                    cases.push(
                      send(`${route.path} json ${name}=${JSON.stringify(value).slice(0, 60)}`, route, {
                        type: "application/json",
                        body: JSON.stringify({ ...validBody, [name]: value })
                      })
                    )
                  }
                  cases.push(
                    send(`${route.path} json duplicate ${name}`, route, {
                      type: "application/json",
                      body: `{${
                        Object.entries(validBody).map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(",")
                      }${Object.keys(validBody).length > 0 ? "," : ""}"${name}":"a","${name}":"b"}`
                    })
                  )
                }
              }
            }
            // Whole bodies of the wrong kind, on every route (a GET's body is never read).
            for (const variant of bodyVariants) {
              if (route.method === "GET") break
              cases.push(
                send(`${route.path} body ${variant.type} ${String(variant.body).slice(0, 40)}`, route, {
                  type: variant.type,
                  body: variant.body
                })
              )
            }
            // Hostile headers on the otherwise valid request.
            for (const headers of headerVariants) {
              cases.push(
                send(`${route.path} headers ${JSON.stringify(headers).slice(0, 80)}`, route, {
                  query: encode(validQuery).join("&"),
                  headers,
                  ...(route.body === undefined ? {} : { type: bodyType, body: validBodyText })
                })
              )
            }
            // Paths next to the route.
            for (const suffix of ["%zz", "/%00", "%FF%FE", `/${long}`, "/..%2F..%2Fetc%2Fpasswd"]) {
              cases.push(send(`${route.path}${suffix.slice(0, 40)}`, route, { path: `${route.path}${suffix}` }))
            }
            requests += cases.length
            yield* Effect.all(cases, { concurrency: 4, discard: true })
          }
          console.log(`hostile input: ${requests} requests on ${routes.length} routes`)
          expect(routes.length).toBeGreaterThanOrEqual(20)
          // Still serving: the valid sign-in works.
          const ok = yield* promise(() =>
            fetch(`${identity}/api/v1/auth/login`, {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ email, password })
            }).then((r) => r.status)
          )
          expect(ok).toBe(200)
        }),
      300_000
    )

    it.effect("raw bytes the URL parser would have escaped: invalid UTF-8 and control bytes in the request line", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const port = Number(new URL(identity).port)
        const targets = [
          Buffer.from([...Buffer.from("/api/v1/oauth/authorize?state="), 0xff, 0xfe, 0xc3, 0x28]),
          Buffer.from([...Buffer.from("/api/v1/ui/login?return_to=/api/v1/"), 0xed, 0xa0, 0x80]),
          Buffer.from([...Buffer.from("/api/v1/oauth/"), 0xff, ...Buffer.from("token")]),
          Buffer.from("/api/v1/oauth/token?\u0001\u007f=\u0008")
        ]
        for (const target of targets) {
          for (const method of ["GET", "POST"]) {
            const res = yield* promise(() =>
              rawRequest(
                port,
                Buffer.concat([
                  Buffer.from(`${method} `),
                  target,
                  Buffer.from(
                    " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n" +
                      "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 3\r\n\r\na=b"
                  )
                ])
              )
            )
            const label = `${method} ${target.toString("latin1")} -> ${res.text.slice(0, 200)}`
            expect(res.status, label).toBeGreaterThanOrEqual(200)
            expect(res.status, label).toBeLessThan(500)
          }
        }
      }))
  })
})
