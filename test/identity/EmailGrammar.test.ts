/**
 * One grammar for email addresses (README, "Self-service accounts"): the WHATWG HTML Standard's
 * "valid email address" (https://html.spec.whatwg.org/multipage/input.html#valid-e-mail-address),
 * at most 254 characters, applied by the one `Email` schema (schema/Identity/User.ts) wherever an
 * address is taken. `<svg/onload=alert(1)>"'@evil.test` is refused at registration, at an email
 * change, on the pages and by the operator CLI, instead of being stored and marked verified.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Redacted, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { SendCodeRequest } from "../../schema/Identity/Me.js"
import { Email, isEmailAddress } from "../../schema/Identity/User.js"
import { DatabaseUrl } from "../../src/platform/Database.js"
import { runCli } from "../support/Cli.js"
import { identityClient, mailTo } from "../support/Clients.js"
import {
  cookiesOf,
  hiddenValue,
  IdentityServers,
  IdentityTestEnv,
  serverLayerOptions,
  signIn
} from "../support/IdentityServers.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const XSS = "<svg/onload=alert(1)>\"'@evil.test"

const label63 = "l".repeat(63)

const VALID: ReadonlyArray<string> = [
  "reader@example.com",
  "first.last+tag@mail.example.co.uk",
  "o'brien@example.com",
  "x!#$%&'*+/=?^_`{|}~-@example.com",
  "UPPER.case@Example.COM",
  "user@xn--bcher-kva.example",
  "user@123.example",
  "user@a-b.c-d.example",
  "localhost-only@intranet",
  `a@${label63}.example`,
  // 254 characters: 64 + "@" + 63 + "." + 63 + "." + 61.
  `${"a".repeat(64)}@${label63}.${label63}.${"d".repeat(61)}`
]

const INVALID: ReadonlyArray<string> = [
  XSS,
  "",
  "plainaddress",
  "@example.com",
  "user@",
  "user@@example.com",
  "a@b@example.com",
  "user name@example.com",
  " user@example.com",
  "user@example.com ",
  "user\n@example.com",
  "\"quoted\"@example.com",
  "user(comment)@example.com",
  "<user>@example.com",
  "user@[127.0.0.1]",
  "user@-example.com",
  "user@example-.com",
  "user@example..com",
  "user@.example.com",
  "user@example.com.",
  "user@exa_mple.com",
  "üser@example.com",
  "user@bücher.example",
  "user@example.com\u0000",
  "user\ud800@example.com",
  `a@${"l".repeat(64)}.example`,
  // 255 characters.
  `${"a".repeat(65)}@${label63}.${label63}.${"d".repeat(61)}`
]

describe("Email: the WHATWG HTML valid email address, at most 254 characters", () => {
  it("accepts ordinary addresses: plus tags, dots, subdomains, punycode domains, the longest", () => {
    for (const address of VALID) {
      expect(isEmailAddress(address), address).toBe(true)
      expect(Schema.is(Email)(address), address).toBe(true)
    }
    expect(VALID.at(-1)!.length).toBe(254)
  })

  it("refuses markup, quoting, spaces, bad labels, non-ASCII and anything longer than 254 characters", () => {
    for (const address of INVALID) {
      expect(isEmailAddress(address), JSON.stringify(address)).toBe(false)
      expect(Schema.is(Email)(address), JSON.stringify(address)).toBe(false)
    }
    expect(INVALID.at(-1)!.length).toBe(255)
  })

  it("states the grammar in the OpenAPI document's description of the field", () => {
    const description = Email.ast.annotations?.description
    expect(description).toContain("https://html.spec.whatwg.org/multipage/input.html#valid-e-mail-address")
    expect(description).toContain("254")
  })
})

interface Answer {
  readonly status: number
  readonly body: any
}

const call = (identity: string, method: string, path: string, body: unknown, token?: string) =>
  promise(async (): Promise<Answer> => {
    const res = await fetch(`${identity}/api/v1${path}`, {
      method,
      headers: {
        "content-type": "application/json",
        ...(token === undefined ? {} : { authorization: `Bearer ${token}` })
      },
      body: JSON.stringify(body)
    })
    return { status: res.status, body: await res.json() }
  })

const INVALID_REQUEST = { code: 40001, message: "Invalid request", data: null }

describe("the address grammar at every door (real servers)", () => {
  it.layer(IdentityTestEnv(), serverLayerOptions)((it) => {
    it.effect("register/send-code and register refuse the XSS address (40001) and mail nothing; ordinary addresses get a code", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        expect(yield* call(identity, "POST", "/auth/register/send-code", { email: XSS }))
          .toEqual({ status: 400, body: INVALID_REQUEST })
        const register = yield* call(identity, "POST", "/auth/register", {
          email: XSS,
          pending: "x",
          code: "123456",
          password: "a long enough passphrase",
          name: "Evil"
        })
        expect(register).toEqual({ status: 400, body: INVALID_REQUEST })
        expect((yield* mailTo(identity, XSS)).length).toBe(0)
        const anonymous = yield* identityClient(identity)
        const stamp = Date.now().toString(36)
        for (
          const address of [
            `first.last+${stamp}@mail.example.co.uk`,
            `o'brien.${stamp}@example.com`,
            `reader.${stamp}@xn--bcher-kva.example`
          ]
        ) {
          const sent = yield* anonymous.account.sendRegistrationCode({
            payload: new SendCodeRequest({ email: address })
          })
          expect(sent.code, address).toBe(0)
        }
        // Sign-in refuses a malformed address early, like any malformed field.
        expect(yield* call(identity, "POST", "/auth/login", { email: XSS, password: "whatever it is" }))
          .toEqual({ status: 400, body: INVALID_REQUEST })
      }))

    it.effect("an email change to the XSS address is refused at send-code and at the change (40001); the account keeps its address", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const s = yield* signIn(identity)
        expect(yield* call(identity, "POST", "/auth/email/send-code", { email: XSS }, s.accessToken))
          .toEqual({ status: 400, body: INVALID_REQUEST })
        expect(yield* call(identity, "PUT", "/auth/email", { email: XSS, code: "123456" }, s.accessToken))
          .toEqual({ status: 400, body: INVALID_REQUEST })
        expect((yield* mailTo(identity, XSS)).length).toBe(0)
        const me = yield* (yield* identityClient(identity, s.accessToken)).account.me()
        expect(me.data.email).toBe(s.user.email)
        const sql = yield* SqlClient.SqlClient
        expect(yield* sql`SELECT count(*)::int AS n FROM users WHERE email = ${XSS}`).toEqual([{ n: 0 }])
      }))

    it.effect("the registration page refuses the XSS address with its field error and mails nothing", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const page = yield* promise(() => fetch(`${identity}/api/v1/ui/register`))
        const html = yield* promise(() => page.text())
        const res = yield* promise(() =>
          fetch(`${identity}/api/v1/ui/register/send-code`, {
            method: "POST",
            redirect: "manual",
            headers: {
              cookie: cookiesOf(page).join("; "),
              "content-type": "application/x-www-form-urlencoded"
            },
            body: new URLSearchParams({ csrf: hiddenValue(html, "csrf"), email: XSS }).toString()
          })
        )
        const answer = yield* promise(() => res.text())
        expect(res.status).toBe(400)
        expect(res.headers.get("content-type")).toMatch(/^text\/html/)
        expect(answer).not.toContain("<svg/onload")
        expect((yield* mailTo(identity, XSS)).length).toBe(0)
      }))

    it.effect("the operator CLI's user create refuses the XSS address and creates nobody", () =>
      Effect.gen(function*() {
        const url = Redacted.value(yield* DatabaseUrl)
        const result = yield* promise(() =>
          runCli(
            ["user", "create", "--email", XSS, "--password", "a long enough passphrase", "--name", "Evil"],
            { DATABASE_URL: url }
          )
        )
        expect(result.code).not.toBe(0)
        expect(result.stderr).toContain("not an email address")
        const sql = yield* SqlClient.SqlClient
        expect(yield* sql`SELECT count(*)::int AS n FROM users WHERE email = ${XSS}`).toEqual([{ n: 0 }])
        const ok = yield* promise(() =>
          runCli(
            [
              "user",
              "create",
              "--email",
              `cli.${Date.now().toString(36)}+tag@sub.example.org`,
              "--password",
              "a long enough passphrase",
              "--name",
              "Operator Made",
              "--json"
            ],
            { DATABASE_URL: url }
          )
        )
        expect(ok.code, ok.stderr).toBe(0)
      }))
  })
})
