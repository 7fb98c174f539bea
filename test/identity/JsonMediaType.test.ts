/**
 * JSON means JSON (README, "Request bodies"; RFC 9110 section 8.3.1): an identity endpoint that
 * takes a JSON body takes it only as `application/json`, with no parameter but `charset=utf-8`,
 * judged on the parsed media type (src/identity/http/BodyTypes.ts). `text/plain;charset=application/json`
 * is a `text/plain` body, which a cross-site page may post without a CORS preflight: it is 415
 * envelope 41501, read by nothing, and signs nobody in. The token endpoint keeps taking a form (RFC
 * 6749 section 4.1.3) or JSON, judged the same way. Real servers, real HTTP.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { bodyKindOf } from "../../src/identity/http/BodyTypes.js"
import {
  createClient,
  createUser,
  IdentityServers,
  IdentityTestEnv,
  serverLayerOptions,
  signIn
} from "../support/IdentityServers.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

interface Answer {
  readonly status: number
  readonly body: any
  readonly setCookie: string | null
}

/**
 * `body` sent as is with `type` as its `Content-Type` (none when undefined: a `Uint8Array` body gets
 * no type from fetch).
 */
const send = (
  identity: string,
  method: string,
  path: string,
  type: string | undefined,
  body: string,
  headers: Record<string, string> = {}
) =>
  promise(async (): Promise<Answer> => {
    const res = await fetch(`${identity}/api/v1${path}`, {
      method,
      headers: { ...(type === undefined ? {} : { "content-type": type }), ...headers },
      body: new TextEncoder().encode(body)
    })
    const text = await res.text()
    return { status: res.status, body: JSON.parse(text), setCookie: res.headers.get("set-cookie") }
  })

/** Not JSON as a JSON endpoint takes it, each with a JSON document as its body. */
const NOT_JSON: ReadonlyArray<string | undefined> = [
  "text/plain;charset=application/json",
  "text/plain",
  "application/jsonx",
  "application/json-patch+json",
  "application/x-www-form-urlencoded",
  "application/json; charset=latin1",
  "application/json; charset=utf-8; x=1",
  "application/json; charset",
  "json",
  undefined
]

const UNSUPPORTED = { code: 41501, message: "Unsupported media type", data: null }

describe("bodyKindOf: the media type parsed, never searched", () => {
  it("names JSON, a form and an upload by their parsed type; anything else is none of them", () => {
    const table: ReadonlyArray<readonly [string | undefined, string | undefined]> = [
      ["application/json", "json"],
      ["Application/JSON; charset=\"UTF-8\"", "json"],
      ["application/x-www-form-urlencoded", "form"],
      ["application/x-www-form-urlencoded;charset=utf-8", "form"],
      ["multipart/form-data; boundary=x", "multipart"],
      ["text/plain;charset=application/json", undefined],
      ["text/plain; x=\"application/x-www-form-urlencoded\"", undefined],
      ["application/jsonx", undefined],
      ["application/json-patch+json", undefined],
      ["application/json; charset=latin1", undefined],
      ["application/x-www-form-urlencoded; charset=latin1", undefined],
      ["application/x-www-form-urlencoded-evil", undefined],
      ["multipart/mixed; boundary=x", undefined],
      ["application/json, text/plain", undefined],
      ["", undefined],
      [undefined, undefined]
    ]
    for (const [header, kind] of table) expect(bodyKindOf(header), JSON.stringify(header)).toBe(kind)
  })
})

describe("identity JSON endpoints take application/json only (README, \"Request bodies\")", () => {
  it.layer(IdentityTestEnv(), serverLayerOptions)((it) => {
    it.effect("POST /auth/login: text/plain;charset=application/json with the right password is 415 41501 and sets no cookie; application/json; charset=utf-8 signs in", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const user = yield* createUser()
        const credentials = JSON.stringify({ email: user.email, password: user.password })
        for (const type of NOT_JSON) {
          const refused = yield* send(identity, "POST", "/auth/login", type, credentials)
          expect({ type, status: refused.status, body: refused.body, setCookie: refused.setCookie })
            .toEqual({ type, status: 415, body: UNSUPPORTED, setCookie: null })
        }
        for (const type of ["application/json; charset=utf-8", "Application/JSON;Charset=\"UTF-8\""]) {
          const ok = yield* send(identity, "POST", "/auth/login", type, credentials)
          expect(ok.status, type).toBe(200)
          expect(ok.body.data.token_type).toBe("Bearer")
          expect(ok.setCookie).toMatch(/^shiori_session=/)
        }
      }))

    it.effect("POST /auth/register and /auth/register/send-code: the same media types are 415 41501; application/json reaches the endpoint", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const email = `media-${Date.now().toString(36)}@example.com`
        const register = JSON.stringify({
          email,
          pending: "x",
          code: "123456",
          password: "a long enough passphrase",
          name: "Media Type"
        })
        for (const type of NOT_JSON) {
          const refused = yield* send(identity, "POST", "/auth/register", type, register)
          expect({ type, status: refused.status, body: refused.body, setCookie: refused.setCookie })
            .toEqual({ type, status: 415, body: UNSUPPORTED, setCookie: null })
          const code = yield* send(identity, "POST", "/auth/register/send-code", type, JSON.stringify({ email }))
          expect({ type, status: code.status, body: code.body }).toEqual({ type, status: 415, body: UNSUPPORTED })
        }
        // Read and judged by the endpoint: a code is sent, and a made-up one is not the code.
        const sent = yield* send(
          identity,
          "POST",
          "/auth/register/send-code",
          "application/json; charset=utf-8",
          JSON.stringify({ email })
        )
        expect(sent.status, JSON.stringify(sent.body)).toBe(200)
        const wrong = yield* send(identity, "POST", "/auth/register", "application/json; charset=utf-8", register)
        expect(wrong.status).toBe(400)
        expect(wrong.body.code).not.toBe(41501)
        expect(wrong.setCookie).toBeNull()
      }))

    it.effect("the other groups' JSON endpoints (PATCH /auth/me, POST /creator/applications, POST /auth/2fa/enable) are 415 41501 too, and take application/json", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const s = yield* signIn(identity)
        const bearer = { authorization: `Bearer ${s.accessToken}` }
        const statement = "I write visual novels and would like to list them in the catalog."
        for (const type of NOT_JSON) {
          const me = yield* send(identity, "PATCH", "/auth/me", type, JSON.stringify({ name: "Renamed" }), bearer)
          expect({ type, status: me.status, body: me.body }).toEqual({ type, status: 415, body: UNSUPPORTED })
          const applied = yield* send(
            identity,
            "POST",
            "/creator/applications",
            type,
            JSON.stringify({ statement }),
            bearer
          )
          expect({ type, status: applied.status, body: applied.body }).toEqual({ type, status: 415, body: UNSUPPORTED })
          const enable = yield* send(
            identity,
            "POST",
            "/auth/2fa/enable",
            type,
            JSON.stringify({ code: "123456" }),
            bearer
          )
          expect({ type, status: enable.status, body: enable.body }).toEqual({ type, status: 415, body: UNSUPPORTED })
        }
        // A multipart body on a JSON endpoint is one more media type it does not take.
        const multipart = yield* send(
          identity,
          "POST",
          "/creator/applications",
          "multipart/form-data; boundary=x",
          "--x\r\nContent-Disposition: form-data; name=\"statement\"\r\n\r\nhello\r\n--x--\r\n",
          bearer
        )
        expect(multipart).toMatchObject({ status: 415, body: UNSUPPORTED })
        // Nothing was written by the refused requests.
        const mine = yield* promise(() =>
          fetch(`${identity}/api/v1/creator/applications/me`, { headers: bearer }).then((r) => r.json() as any)
        )
        expect(mine).toEqual({ code: 0, message: "ok" })

        const me = yield* send(
          identity,
          "PATCH",
          "/auth/me",
          "application/json; charset=UTF-8",
          "{\"name\":\"Renamed\"}",
          bearer
        )
        expect(me.status, JSON.stringify(me.body)).toBe(200)
        expect(me.body.data.name).toBe("Renamed")
        const applied = yield* send(
          identity,
          "POST",
          "/creator/applications",
          "application/json",
          JSON.stringify({ statement }),
          bearer
        )
        expect(applied.status, JSON.stringify(applied.body)).toBe(200)
        expect(applied.body.data.status).toBe("pending")
      }))

    it.effect("POST /oauth/token takes a form (with charset=utf-8 too) or JSON; text/plain;charset=application/json and other types are 400 invalid_request (RFC 6749 section 5.2)", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient()
        const fields = {
          grant_type: "refresh_token",
          refresh_token: "not-a-refresh-token",
          client_id: client.clientId,
          client_secret: client.secret!
        }
        const form = new URLSearchParams(fields).toString()
        const json = JSON.stringify(fields)
        // Read: the grant itself is judged (an unknown refresh token).
        for (
          const [type, body] of [
            ["application/x-www-form-urlencoded", form],
            ["application/x-www-form-urlencoded; charset=UTF-8", form],
            ["application/json", json],
            ["application/json; charset=utf-8", json]
          ] as const
        ) {
          const res = yield* send(identity, "POST", "/oauth/token", type, body)
          expect({ type, status: res.status, error: res.body.error }).toEqual({
            type,
            status: 400,
            error: "invalid_grant"
          })
        }
        // Refused before anything is read.
        for (
          const [type, body] of [
            ["text/plain;charset=application/json", json],
            ["text/plain;charset=application/x-www-form-urlencoded", form],
            ["application/jsonx", json],
            ["application/x-www-form-urlencoded-evil", form],
            ["application/x-www-form-urlencoded; charset=latin1", form],
            [undefined, json]
          ] as const
        ) {
          const res = yield* send(identity, "POST", "/oauth/token", type, body)
          expect({ type, status: res.status, error: res.body.error }).toEqual({
            type,
            status: 400,
            error: "invalid_request"
          })
        }
      }))
  })
})
