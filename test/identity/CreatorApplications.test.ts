/**
 * Creator applications through real HTTP (`POST /creator/applications`, `GET
 * /creator/applications/me`) and the operator CLI (`creator list`, `creator decide`, run as a user
 * would: `dist/src/cli/main.js`; `npm test` builds first), over the test servers' database
 * (src/identity/creator/CreatorApplications.ts).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import * as Jose from "jose"
import { Users } from "../../src/identity/users/Users.js"
import { DatabaseUrl } from "../../src/platform/Database.js"
import { runCli } from "../support/Cli.js"
import { identityClient, mailTo } from "../support/Clients.js"
import { IdentityServers, IdentityTestEnv, login, serverLayerOptions, signIn } from "../support/IdentityServers.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  readonly body: any
}

const answer = async (res: Response): Promise<Answer> => {
  const text = await res.text()
  return { status: res.status, headers: res.headers, text, body: text === "" ? null : JSON.parse(text) }
}

const bearer = (token: string | undefined): Record<string, string> =>
  token === undefined ? {} : { authorization: `Bearer ${token}` }

/** POST /creator/applications; a string body is sent as is. */
const apply = (
  issuer: string,
  token: string | undefined,
  body: unknown,
  headers: Record<string, string> = {}
) =>
  promise(() =>
    fetch(`${issuer}/creator/applications`, {
      method: "POST",
      headers: { "content-type": "application/json", ...bearer(token), ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body)
    }).then(answer)
  )

const mine = (issuer: string, token: string | undefined) =>
  promise(() => fetch(`${issuer}/creator/applications/me`, { headers: bearer(token) }).then(answer))

/** `GET /creator/applications/me` through the typed identity client: the decoded envelope. */
const myApplication = (issuer: string, token: string) =>
  Effect.flatMap(identityClient(new URL(issuer).origin, token), (client) => client.creator.mine())

const cli = (args: ReadonlyArray<string>) =>
  Effect.flatMap(DatabaseUrl, (url) => promise(() => runCli(args, { DATABASE_URL: Redacted.value(url) })))

const cliJson = (args: ReadonlyArray<string>) =>
  Effect.map(cli([...args, "--json"]), (result) => {
    expect(result.code, result.stderr).toBe(0)
    return JSON.parse(result.stdout) as any
  })

const statement = "I have translated three visual novels and would like to publish my own short stories."
const THIRTY_DAYS = 30 * 86_400

const expectRefused = (res: Answer, status: number, code: number) => {
  expect(res.status, res.text).toBe(status)
  expect(res.body).toMatchObject({ code, data: null })
  expect(res.headers.get("cache-control")).toBe("no-store")
}

describe("creator applications", () => {
  it.layer(IdentityTestEnv(), serverLayerOptions)((it) => {
    it.effect("GET me before applying is {code: 0, message: \"ok\"} with no data key; apply answers the pending application, which GET me then shows (README, \"Creator applications\")", () =>
      Effect.gen(function*() {
        const { identity, issuer } = yield* IdentityServers
        const { accessToken } = yield* signIn(identity)

        const before = yield* mine(issuer, accessToken)
        expect(before.status).toBe(200)
        expect(before.body).toEqual({ code: 0, message: "ok" })
        expect(Object.keys(before.body)).not.toContain("data")
        expect(before.headers.get("cache-control")).toBe("no-store")

        const started = Math.floor(Date.now() / 1000)
        // Sent raw: the server must trim the statement, and a typed request (whose Type side is the
        // trimmed statement) cannot carry the spaces.
        const created = yield* apply(issuer, accessToken, {
          statement: `  ${statement}\n`,
          portfolio_url: "https://portfolio.example/me?tab=works"
        })
        expect(created.status, created.text).toBe(200)
        expect(created.body).toEqual({
          code: 0,
          message: "ok",
          data: {
            id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/),
            status: "pending",
            // Stored trimmed.
            statement,
            portfolio_url: "https://portfolio.example/me?tab=works",
            created_at: expect.any(Number),
            decided_at: null
          }
        })
        expect(Number.isInteger(created.body.data.created_at)).toBe(true)
        expect(Math.abs(created.body.data.created_at - started)).toBeLessThan(60)

        expect(yield* myApplication(issuer, accessToken)).toEqual(created.body)
      }))

    it.effect("both endpoints are in /api/v1/openapi.json; the request documents its bounds (README, \"Identity provider\")", () =>
      Effect.gen(function*() {
        const { issuer } = yield* IdentityServers
        const doc = yield* promise(() => fetch(`${issuer}/openapi.json`).then((res) => res.json() as Promise<any>))
        expect(doc.paths["/api/v1/creator/applications"].post.summary).toEqual(expect.any(String))
        expect(doc.paths["/api/v1/creator/applications/me"].get.summary).toEqual(expect.any(String))
        const request = doc.components.schemas.CreatorApplicationRequest
        expect(request.required).toEqual(["statement"])
        expect(request.properties.statement).toMatchObject({ type: "string", minLength: 20, maxLength: 4000 })
        expect(JSON.stringify(request.properties.portfolio_url)).toContain("\"maxLength\":2048")
        expect(doc.components.schemas.MyCreatorApplicationResponse.required).toEqual(["code", "message"])
      }))

    it.effect("applying again while an application is pending is 409 envelope 17002 (README, \"Creator applications\")", () =>
      Effect.gen(function*() {
        const { identity, issuer } = yield* IdentityServers
        const { accessToken } = yield* signIn(identity)
        // No portfolio: absent and null both mean none.
        const first = yield* apply(issuer, accessToken, { statement, portfolio_url: null })
        expect(first.status, first.text).toBe(200)
        expect(first.body.data.portfolio_url).toBeNull()
        const again = yield* apply(issuer, accessToken, { statement })
        expectRefused(again, 409, 17002)
        expect(again.body.message).toBe("Application still pending")
        expect((yield* myApplication(issuer, accessToken)).data?.id).toBe(first.body.data.id)
      }))

    it.effect("a statement or portfolio_url outside the bounds is 400 envelope 17004 (not 40001); a body that is not JSON is 40001 (README, \"Creator applications\")", () =>
      Effect.gen(function*() {
        const { identity, issuer } = yield* IdentityServers
        const { accessToken } = yield* signIn(identity)
        const invalid: ReadonlyArray<unknown> = [
          {},
          { portfolio_url: "https://portfolio.example/" },
          { statement: null },
          { statement: 42 },
          { statement: "too short" },
          // 19 characters once trimmed.
          { statement: `   ${"x".repeat(19)}   ` },
          { statement: "x".repeat(4001) },
          // 19 characters outside the BMP (38 UTF-16 units): characters are counted, as the table counts them.
          { statement: "\u{1F4D6}".repeat(19) },
          { statement: `${statement}\u0000` },
          { statement, portfolio_url: "ftp://files.example/portfolio" },
          { statement, portfolio_url: "javascript:alert(1)" },
          { statement, portfolio_url: "not a url" },
          { statement, portfolio_url: "" },
          { statement, portfolio_url: "https://portfolio.example/a b" },
          { statement, portfolio_url: `https://portfolio.example/${"p".repeat(2049 - 26)}` },
          { statement, portfolio_url: 7 },
          [statement],
          "\"a JSON string\""
        ]
        for (const body of invalid) {
          const res = yield* apply(issuer, accessToken, body)
          expectRefused(res, 400, 17004)
          expect(res.body.message).toBe("Statement invalid")
        }
        const notJson = yield* apply(issuer, accessToken, "{\"statement\": ")
        expectRefused(notJson, 400, 40001)
        const form = yield* apply(issuer, accessToken, new URLSearchParams({ statement }).toString(), {
          "content-type": "application/x-www-form-urlencoded"
        })
        // Not sent as application/json: 415 41501 (README, "Request bodies").
        expectRefused(form, 415, 41501)
        // Larger than IDENTITY_MAX_BODY_BYTES (64 KiB): 413 envelope 41301, not read.
        expectRefused(yield* apply(issuer, accessToken, { statement: "z".repeat(70_000) }), 413, 41301)
        // Nothing was written.
        expect((yield* mine(issuer, accessToken)).body).toEqual({ code: 0, message: "ok" })

        // The bounds themselves are accepted: 20 characters (here outside the BMP) and 4000, a 2048-character URL.
        const [shortest, longest] = yield* Effect.all([signIn(identity), signIn(identity)])
        const twenty = yield* apply(issuer, shortest.accessToken, { statement: "\u{1F4D6}".repeat(20) })
        expect(twenty.status, twenty.text).toBe(200)
        const url = `http://portfolio.example/${"p".repeat(2048 - 25)}`
        expect(url.length).toBe(2048)
        const max = yield* apply(issuer, longest.accessToken, { statement: "y".repeat(4000), portfolio_url: url })
        expect(max.status, max.text).toBe(200)
        expect(max.body.data.statement).toHaveLength(4000)
        expect(max.body.data.portfolio_url).toBe(url)
      }))

    it.effect("a user who already holds creator is 409 envelope 17003 (README, \"Creator applications\")", () =>
      Effect.gen(function*() {
        const { identity, issuer } = yield* IdentityServers
        const { accessToken } = yield* signIn(identity, { roles: ["creator"] })
        const res = yield* apply(issuer, accessToken, { statement })
        expectRefused(res, 409, 17003)
        expect(res.body.message).toBe("Already a creator")
        expect((yield* mine(issuer, accessToken)).body).toEqual({ code: 0, message: "ok" })
      }))

    it.effect("RFC 6750 section 3: without a Bearer token both endpoints are 401 envelope 10001 with a Bearer challenge; a bad token is 10002", () =>
      Effect.gen(function*() {
        const { issuer } = yield* IdentityServers
        for (const res of [yield* apply(issuer, undefined, { statement }), yield* mine(issuer, undefined)]) {
          expectRefused(res, 401, 10001)
          expect(res.headers.get("www-authenticate")).toBe(`Bearer realm="shiori"`)
        }
        for (const res of [yield* apply(issuer, "not-a-token", { statement }), yield* mine(issuer, "not-a-token")]) {
          expectRefused(res, 401, 10002)
          expect(res.headers.get("www-authenticate")).toMatch(/^Bearer realm="shiori", error="invalid_token"/)
        }
        // Authentication is checked before the body.
        expectRefused(yield* apply(issuer, undefined, "{"), 401, 10001)
      }))

    it.effect("eight simultaneous applications of one user create exactly one (one 200, seven 17002, one row) (README, \"Creator applications\")", () =>
      Effect.gen(function*() {
        const { identity, issuer } = yield* IdentityServers
        const sql = yield* SqlClient.SqlClient
        // A few users, so some requests pass the check together and meet the table's unique index.
        for (let round = 0; round < 3; round++) {
          const { accessToken, user } = yield* signIn(identity)
          const answers = yield* Effect.all(
            Array.from({ length: 8 }, (_, i) => apply(issuer, accessToken, { statement: `${statement} (${i})` })),
            { concurrency: "unbounded" }
          )
          const ok = answers.filter((res) => res.status === 200)
          expect(ok).toHaveLength(1)
          for (const res of answers.filter((res) => res.status !== 200)) expectRefused(res, 409, 17002)
          const rows = yield* sql<{ id: string }>`SELECT id FROM creator_applications WHERE user_id = ${user.id}`
          expect(rows.map((row) => row.id)).toEqual([ok[0]!.body.data.id])
        }
      }))

    it.effect("after `creator decide --decline`, applying again is 409 envelope 17001 with Retry-After until 30 days after the decision; the applicant is mailed; deciding again changes nothing (README, \"Creator applications\")", () =>
      Effect.gen(function*() {
        const { identity, issuer } = yield* IdentityServers
        const sql = yield* SqlClient.SqlClient
        const { accessToken, user } = yield* signIn(identity, { name: "Declined <Dora>" })
        const applied = yield* apply(issuer, accessToken, { statement })
        expect(applied.status, applied.text).toBe(200)
        const id: string = applied.body.data.id

        const pending = yield* cliJson(["creator", "list", "--pending"])
        expect(pending.items).toContainEqual(expect.objectContaining({
          id,
          user_id: user.id,
          email: user.email,
          status: "pending",
          statement,
          portfolio_url: null,
          decided_at: null,
          decided_by: null
        }))

        const declined = yield* cliJson(["creator", "decide", id, "--decline"])
        expect(declined).toMatchObject({
          id,
          user_id: user.id,
          status: "declined",
          decided_by: expect.stringMatching(/^cli/)
        })
        const shown = (yield* myApplication(issuer, accessToken)).data
        expect(shown).toMatchObject({ id, status: "declined", decided_at: expect.any(Number) })
        expect(Number.isInteger(shown?.decided_at)).toBe(true)

        const again = yield* apply(issuer, accessToken, { statement })
        expectRefused(again, 409, 17001)
        expect(again.body.message).toBe("Already applied")
        const wait = Number(again.headers.get("retry-after"))
        expect(Number.isInteger(wait)).toBe(true)
        expect(wait).toBeGreaterThan(THIRTY_DAYS - 120)
        expect(wait).toBeLessThanOrEqual(THIRTY_DAYS)

        const mail = (yield* mailTo(issuer, user.email)).filter((m) => /creator application/.test(m.subject))
        expect(mail).toHaveLength(1)
        expect(mail[0].subject).toBe("Your creator application was declined")
        expect(mail[0].text).toMatch(/not approved/)
        expect(mail[0].text).toMatch(/apply again from \d{4}-\d{2}-\d{2}/)
        // The name is escaped in the HTML alternative.
        expect(mail[0].html).toContain("Declined &lt;Dora&gt;")
        expect(mail[0].html).not.toContain("<Dora>")

        // A decided application stays decided: non-zero, a message, nothing changed, no second mail.
        const [twice, approveLater] = yield* Effect.all([
          cli(["creator", "decide", id, "--decline"]),
          cli(["creator", "decide", id, "--approve"])
        ], { concurrency: "unbounded" })
        for (const result of [twice, approveLater]) {
          expect(result.code).not.toBe(0)
          expect(result.stderr).toMatch(/^error: application .* was already declined/m)
        }
        const users = yield* Users
        expect(Option.map(yield* users.findById(user.id), (u) => u.roles)).toEqual(Option.some([]))
        expect((yield* mailTo(issuer, user.email)).filter((m) => /creator application/.test(m.subject)))
          .toHaveLength(1)
        expect((yield* cliJson(["creator", "list", "--pending"])).items.map((item: any) => item.id)).not.toContain(id)
        expect((yield* cliJson(["creator", "list"])).items).toContainEqual(
          expect.objectContaining({ id, status: "declined" })
        )

        // 30 days after the decision a new application is accepted, and GET me shows the newest.
        yield* sql`
          UPDATE creator_applications SET decided_at = now() - interval '31 days', created_at = now() - interval '32 days'
          WHERE id = ${id}
        `
        const later = yield* apply(issuer, accessToken, { statement: `${statement} Again.` })
        expect(later.status, later.text).toBe(200)
        expect(later.body.data.id).not.toBe(id)
        expect((yield* myApplication(issuer, accessToken)).data).toMatchObject({
          id: later.body.data.id,
          status: "pending"
        })
      }))

    it.effect("`creator decide --approve` grants creator (in new tokens) and mails the applicant; applying again is then 17003 (README, \"Creator applications\")", () =>
      Effect.gen(function*() {
        const { identity, issuer } = yield* IdentityServers
        const { accessToken, user } = yield* signIn(identity, { name: "Ana" })
        const applied = yield* apply(issuer, accessToken, { statement, portfolio_url: "http://ana.example/" })
        expect(applied.status, applied.text).toBe(200)
        const id: string = applied.body.data.id

        const approved = yield* cliJson(["creator", "decide", id, "--approve"])
        expect(approved).toMatchObject({
          id,
          user_id: user.id,
          email: user.email,
          status: "approved",
          portfolio_url: "http://ana.example/",
          decided_at: expect.any(String)
        })

        const users = yield* Users
        expect(Option.map(yield* users.findById(user.id), (u) => u.roles)).toEqual(Option.some(["creator"]))
        const fresh = yield* promise(() => login(identity, user))
        expect(Jose.decodeJwt(fresh.accessToken).roles).toEqual(["creator"])
        expect((yield* myApplication(issuer, accessToken)).data).toMatchObject({
          id,
          status: "approved",
          decided_at: expect.any(Number)
        })

        const mail = (yield* mailTo(issuer, user.email)).filter((m) => /creator application/.test(m.subject))
        expect(mail).toHaveLength(1)
        expect(mail[0]).toMatchObject({ to: user.email, subject: "Your creator application was approved" })
        expect(mail[0].text).toMatch(/^Hello Ana,/)
        expect(mail[0].text).toMatch(/creator role/)
        expect(mail[0].html).toMatch(/^<p>Hello Ana,<\/p>/)

        expectRefused(yield* apply(issuer, accessToken, { statement }), 409, 17003)
        const again = yield* cli(["creator", "decide", id, "--decline"])
        expect(again.code).not.toBe(0)
        expect(again.stderr).toMatch(/already approved/)
        expect(Option.map(yield* users.findById(user.id), (u) => u.roles)).toEqual(Option.some(["creator"]))
      }))

    it.effect("`creator decide` of an unknown id exits non-zero with \"no such application\" (17005); --approve with --decline, or neither, is a usage error (README, \"Operator CLI\")", () =>
      Effect.gen(function*() {
        const { identity, issuer } = yield* IdentityServers
        const { accessToken } = yield* signIn(identity)
        const applied = yield* apply(issuer, accessToken, { statement })
        expect(applied.status, applied.text).toBe(200)
        const id: string = applied.body.data.id
        const [unknown, malformed, both, neither, human] = yield* Effect.all([
          cli(["creator", "decide", "00000000-0000-4000-8000-000000000000", "--approve"]),
          cli(["creator", "decide", "not-an-id", "--decline"]),
          cli(["creator", "decide", id, "--approve", "--decline"]),
          cli(["creator", "decide", id]),
          cli(["creator", "list", "--pending"])
        ], { concurrency: "unbounded" })
        for (const result of [unknown, malformed]) {
          expect(result.code).toBe(1)
          expect(result.stderr).toMatch(/^error: no such application/m)
        }
        for (const result of [both, neither]) {
          // Like any other bad argument (src/cli/main.ts): usage errors exit 2.
          expect(result.code).toBe(2)
          expect(result.stderr + result.stdout).toMatch(/exactly one of --approve or --decline/)
        }
        expect(human.code, human.stderr).toBe(0)
        expect(human.stdout).toContain(id)
        // Still pending: nothing was decided.
        expect((yield* myApplication(issuer, accessToken)).data).toMatchObject({ id, status: "pending" })
      }))
  })
})
