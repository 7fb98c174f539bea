/**
 * Text the database would refuse never reaches it (schema/Text.ts), through real HTTP: a NUL or an
 * unpaired UTF-16 surrogate in any text of a claim or decision body is 422 VALIDATION_FAILED with
 * the JSON pointer (RFC 6901) of the bad value and reason INVALID_FORMAT, never a 500, and writes
 * nothing; a name of only whitespace or zero-width characters is refused the same way
 * (docs/writing.md, "Claims"). The identity server refuses the same texts in its own style (400
 * `INVALID_REQUEST` in the envelope, `invalid_request` on the OAuth endpoints).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Redacted, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { FieldError, ProblemCodes } from "../../schema/Problem.js"
import { DatabaseUrl } from "../../src/platform/Database.js"
import { ClaimsFixture, ClaimsFixtureLive, type ClaimsFixtureShape } from "../support/Claims.js"
import { runCli } from "../support/Cli.js"
import {
  cookiesOf,
  createClient,
  hiddenValue,
  IdentityServers,
  IdentityTestEnv,
  serverLayerOptions as identityLayerOptions,
  signIn
} from "../support/IdentityServers.js"
import { serverLayerOptions } from "../support/TestServers.js"

type Reply = Effect.Success<ReturnType<ClaimsFixtureShape["call"]>>

/** NUL and unpaired surrogates, alone and inside other text (JSON carries them as `\u` escapes). */
const unstorable: ReadonlyArray<(text: string) => string> = [
  (text) => `${text}\u0000`,
  (text) => `\u0000${text}`,
  (text) => `${text}\ud800`,
  (text) => `\udc00${text}`,
  (text) => `${text.slice(0, 1)}\ud800${text.slice(1)}`,
  (text) => `${text.slice(0, 1)}\udc00\ud800${text.slice(1)}`
]

/** Names that show nothing. */
const blankNames = [" ", "   ", "\t\n", "\u3000", "\u200b", "\u200b\u200c\u200d", "\u2060", "\ufeff", " \u200b \ufeff "]

/** 422 VALIDATION_FAILED with `reason` at `pointer`, a problem document. */
const expectInvalid = (res: Reply, pointer: string, reason = "INVALID_FORMAT") => {
  const label = JSON.stringify({ pointer, status: res.status, body: res.body })
  expect(res.status, label).toBe(ProblemCodes.VALIDATION_FAILED.status)
  expect(res.headers.get("content-type")).toBe("application/problem+json")
  expect(res.body.code, label).toBe("VALIDATION_FAILED")
  for (const error of res.body.errors) expect(Schema.is(FieldError)(error), label).toBe(true)
  expect(res.body.errors, label).toContainEqual(expect.objectContaining({ reason, pointer }))
}

/** Row counts of every table a claim write touches. */
const counts = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ works: string; claims: string; events: string; refs: string }>`
    SELECT (SELECT count(*) FROM works)::text AS works,
           (SELECT count(*) FROM claims)::text AS claims,
           (SELECT count(*) FROM claim_events)::text AS events,
           (SELECT count(*) FROM entity_refs)::text AS refs`.pipe(Effect.orDie)
  return rows[0]!
})

describe("catalog writes refuse text the database cannot store (docs/writing.md, \"Claims\")", () => {
  it.layer(ClaimsFixtureLive({ works: 20 }), serverLayerOptions())((it) => {
    it.effect("a NUL or unpaired surrogate in any text of a claim body is 422 at its pointer and writes nothing", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const key = f.siteUser.key
        const before = yield* counts
        for (const bad of unstorable) {
          const cases: ReadonlyArray<readonly [unknown, string]> = [
            [{ site_work_id: "9001", display_name: bad("Minted work") }, "/display_name"],
            [{ refs: [{ source: bad("vndb"), external_id: "v1" }], display_name: "Minted" }, "/refs/0/source"],
            [{ refs: [{ source: "vndb", external_id: bad("v17") }], display_name: "Minted" }, "/refs/0/external_id"],
            [{ site_work_id: bad("9001"), display_name: "Minted" }, "/site_work_id"],
            [
              { field_values: { "catalog.work.display_name": bad("Minted work") } },
              "/field_values/catalog.work.display_name"
            ],
            [
              { field_values: { "catalog.work.display_name": "Minted", "catalog.work.latin": bad("Minted") } },
              "/field_values/catalog.work.latin"
            ],
            // Whatever the key's value should be, a text anywhere inside it is refused first.
            [
              { field_values: { "catalog.work.display_name": "Minted", "catalog.work.length_minutes": [bad("x")] } },
              "/field_values/catalog.work.length_minutes"
            ],
            [
              { field_values: { "catalog.work.display_name": "Minted", "catalog.work.olang": { [bad("k")]: 1 } } },
              "/field_values/catalog.work.olang"
            ]
          ]
          for (const [body, pointer] of cases) {
            expectInvalid(yield* f.call("POST", "/v2/claims", { key, body }), pointer)
          }
        }
        // A key of `field_values` outside the key pattern is a member the map cannot have: 422 at its
        // pointer (RFC 6901: `~` and `/` escaped, anything else as it is).
        for (const bad of unstorable) {
          const name = bad("catalog.work.display_name")
          const badKey = yield* f.call("POST", "/v2/claims", { key, body: { field_values: { [name]: "Minted" } } })
          expect(badKey.status, JSON.stringify(badKey.body)).toBe(422)
          expect(badKey.body.code).toBe("VALIDATION_FAILED")
          expect(badKey.body.errors).toContainEqual(expect.objectContaining({ pointer: `/field_values/${name}` }))
        }
        expect(yield* counts).toEqual(before)
      }))

    it.effect("a display name of only whitespace or zero-width characters is 422 and mints nothing", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const key = f.siteUser.key
        const before = yield* counts
        for (const name of blankNames) {
          expectInvalid(
            yield* f.call("POST", "/v2/claims", { key, body: { site_work_id: "9001", display_name: name } }),
            "/display_name"
          )
          expectInvalid(
            yield* f.call("POST", "/v2/claims", { key, body: { field_values: { "catalog.work.display_name": name } } }),
            "/field_values/catalog.work.display_name"
          )
        }
        // The empty name stays `TOO_SHORT`, reported once.
        const empty = yield* f.call("POST", "/v2/claims", { key, body: { site_work_id: "9001", display_name: "" } })
        expectInvalid(empty, "/display_name", "TOO_SHORT")
        expect(empty.body.errors).toHaveLength(1)
        expect(yield* counts).toEqual(before)
        // A name with one visible character among them is a name.
        const minted = yield* f.call("POST", "/v2/claims", {
          key,
          body: { site_work_id: "9001", display_name: `\u200b Storable ${Date.now()} \ufeff` }
        })
        expect(minted.status, JSON.stringify(minted.body)).toBe(201)
      }))

    it.effect("a NUL or unpaired surrogate in a decision's note is 422 at /note and decides nothing", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const work = f.works[0]!
        const created = yield* f.call("POST", "/v2/claims", { key: f.siteUser.key, body: { work_id: work } })
        expect(created.status, JSON.stringify(created.body)).toBe(201)
        const etag = created.headers.get("etag")!
        const before = yield* counts
        for (const bad of unstorable) {
          for (const decision of ["decline", "approve"]) {
            const res = yield* f.call("POST", `/v2/moderation/claims/${work}/decisions`, {
              key: f.moderator.key,
              body: { decision, note: bad("Not yours.") },
              headers: { "if-match": etag }
            })
            expectInvalid(res, "/note")
          }
        }
        expect(yield* counts).toEqual(before)
        const claim = yield* f.call("GET", `/v2/claims/${work}`, { key: f.siteUser.key })
        expect(claim.body.state).toBe("pending")
      }))

    it.effect("a NUL in a search query is 400 INVALID_PARAMETER, not a 500", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        for (const query of ["q=a%00b", "refs=vndb:v%0017"]) {
          for (const path of ["/v2/catalog/works", "/v2/catalog/search"]) {
            const res = yield* f.call("GET", `${path}?${query}`, { key: f.siteUser.key })
            expect(res.status, `${path}?${query} ${JSON.stringify(res.body)}`).toBe(400)
            expect(res.body.code).toBe("INVALID_PARAMETER")
          }
        }
      }))
  })
})

interface Answer {
  readonly status: number
  readonly body: any
}

const identityCall = (
  issuer: string,
  method: string,
  path: string,
  options: { readonly token?: string; readonly body?: unknown; readonly form?: Record<string, string> } = {}
) =>
  Effect.promise(async (): Promise<Answer> => {
    const res = await fetch(`${issuer}${path}`, {
      method,
      headers: {
        ...(options.body === undefined ? {} : { "content-type": "application/json" }),
        ...(options.form === undefined ? {} : { "content-type": "application/x-www-form-urlencoded" }),
        ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` })
      },
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
      ...(options.form === undefined ? {} : { body: new URLSearchParams(options.form).toString() })
    })
    const text = await res.text()
    return { status: res.status, body: text === "" ? null : JSON.parse(text) }
  })

describe("the identity server refuses text the database cannot store, in its own style", () => {
  it.layer(IdentityTestEnv(), identityLayerOptions)((it) => {
    it.effect("a NUL, an unpaired surrogate or a blank name in the account's fields is 400 INVALID_REQUEST", () =>
      Effect.gen(function*() {
        const { identity, issuer } = yield* IdentityServers
        const { accessToken } = yield* signIn(identity, { name: "Storable Name" })
        const bodies: Array<unknown> = [
          ...unstorable.flatMap((bad) => [{ name: bad("Rin") }, { bio: bad("Reads mysteries.") }]),
          ...blankNames.map((name) => ({ name }))
        ]
        for (const body of bodies) {
          const res = yield* identityCall(issuer, "PATCH", "/auth/me", { token: accessToken, body })
          expect({ body, status: res.status, code: res.body.code }).toEqual({ body, status: 400, code: 40001 })
        }
        const me = yield* identityCall(issuer, "GET", "/auth/me", { token: accessToken })
        expect(me.body.data).toMatchObject({ name: "Storable Name" })
      }))

    it.effect("the account page refuses them too: a page with the form's error, never a 500", () =>
      Effect.gen(function*() {
        const { identity, issuer } = yield* IdentityServers
        const { cookie: session } = yield* signIn(identity, { name: "Page Name" })
        // The page sets the CSRF cookie its forms are bound to.
        const first = yield* Effect.promise(() => fetch(`${issuer}/ui/account`, { headers: { cookie: session } }))
        const cookie = [session, ...cookiesOf(first)].join("; ")
        // A form's percent-decoding never yields an unpaired surrogate (it becomes U+FFFD): NUL it can carry.
        const names = ["Rin\u0000", "\u0000Rin", "R\u0000in", ...blankNames]
        for (const name of names) {
          const page = yield* Effect.promise(() =>
            fetch(`${issuer}/ui/account`, { headers: { cookie } }).then((res) => res.text())
          )
          const res = yield* Effect.promise(() =>
            fetch(`${issuer}/ui/account/profile`, {
              method: "POST",
              redirect: "manual",
              headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
              body: new URLSearchParams({ csrf: hiddenValue(page, "csrf"), name, bio: "" }).toString()
            })
          )
          expect({ name, status: res.status }).toEqual({ name, status: 400 })
          expect(res.headers.get("content-type")).toMatch(/^text\/html/)
        }
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ name: string }>`SELECT name FROM users WHERE name = 'Page Name'`.pipe(Effect.orDie)
        expect(rows).toHaveLength(1)
      }))

    it.effect("registration and sign-in refuse them before any work", () =>
      Effect.gen(function*() {
        const { issuer } = yield* IdentityServers
        for (const bad of unstorable) {
          const register = yield* identityCall(issuer, "POST", "/auth/register", {
            body: {
              email: "new@example.com",
              pending: "A".repeat(43),
              code: "123456",
              password: "a long passphrase",
              name: bad("Rin")
            }
          })
          expect(register.status).toBe(400)
          expect(register.body.code).toBe(40001)
          const login = yield* identityCall(issuer, "POST", "/auth/login", {
            body: { email: bad("reader@example.com"), password: "a long passphrase" }
          })
          expect(login.status).toBe(400)
          expect(login.body.code).toBe(40001)
        }
        for (const name of blankNames) {
          const register = yield* identityCall(issuer, "POST", "/auth/register", {
            body: {
              email: "new@example.com",
              pending: "A".repeat(43),
              code: "123456",
              password: "a long passphrase",
              name
            }
          })
          expect(register.status).toBe(400)
          expect(register.body.code).toBe(40001)
        }
      }))

    it.effect("the operator CLI creates no account with a blank name", () =>
      Effect.gen(function*() {
        const url = yield* DatabaseUrl
        const results = yield* Effect.all(
          ["\u200b", " \ufeff "].map((name) =>
            Effect.promise(() =>
              runCli(
                [
                  "user",
                  "create",
                  "--email",
                  `blank${name.length}@example.com`,
                  "--password",
                  "long enough",
                  "--name",
                  name
                ],
                { DATABASE_URL: Redacted.value(url) }
              )
            )
          ),
          { concurrency: "unbounded" }
        )
        for (const result of results) {
          expect(result.code, result.stdout).toBe(1)
          expect(result.stderr).toMatch(/^error: --name must show something/m)
        }
      }))

    it.effect("the token endpoint answers OAuth invalid_request (RFC 6749 section 5.2)", () =>
      Effect.gen(function*() {
        const { issuer } = yield* IdentityServers
        const client = yield* createClient()
        for (const bad of unstorable) {
          const json = yield* identityCall(issuer, "POST", "/oauth/token", {
            body: { grant_type: "refresh_token", refresh_token: bad("token"), client_id: client.clientId }
          })
          expect(json.status).toBe(400)
          expect(json.body.error).toBe("invalid_request")
        }
        // A form carries NUL (`%00`); its percent-decoding never yields an unpaired surrogate.
        const form = yield* identityCall(issuer, "POST", "/oauth/token", {
          form: { grant_type: "refresh_token", refresh_token: "to\u0000ken", client_id: client.clientId }
        })
        expect(form.status).toBe(400)
        expect(form.body.error).toBe("invalid_request")
      }))
  })
})
