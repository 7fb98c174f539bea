/**
 * The creator application takes what the README says and nothing else (README, "Creator
 * applications": `{statement, portfolio_url?}`, anything else in a JSON body 400 envelope 17004):
 * a member it does not name (`"status": "approved"`) is refused, not ignored, and a statement of
 * unpaired UTF-16 surrogates, which PostgreSQL would store as U+FFFD (schema/Text.ts), is refused
 * whatever its length. Real servers, real HTTP; nothing refused is stored.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { IdentityServers, IdentityTestEnv, serverLayerOptions, signIn } from "../support/IdentityServers.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const statement = "I have translated three visual novels and would like to publish my own short stories."

/** POST /creator/applications with `body` as JSON text, written out by hand (lone surrogates as `\ud800` escapes). */
const apply = (identity: string, token: string, json: string) =>
  promise(async () => {
    const res = await fetch(`${identity}/api/v1/creator/applications`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: json
    })
    return { status: res.status, body: await res.json() as any }
  })

const INVALID = { code: 17004, message: "Statement invalid", data: null }

describe("POST /creator/applications takes {statement, portfolio_url?} only (README, \"Creator applications\")", () => {
  it.layer(IdentityTestEnv(), serverLayerOptions)((it) => {
    it.effect("a member the README does not name is 400 17004, and nothing is stored", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const s = yield* signIn(identity)
        for (
          const extra of [
            "\"status\":\"approved\"",
            "\"decided_at\":0",
            "\"id\":\"00000000-0000-0000-0000-000000000000\"",
            "\"user_id\":1",
            `"Statement":${JSON.stringify(statement)}`,
            "\"__proto__\":{\"status\":\"approved\"}"
          ]
        ) {
          const json = `{"statement":${JSON.stringify(statement)},${extra}}`
          expect({ json, ...(yield* apply(identity, s.accessToken, json)) }).toEqual({
            json,
            status: 400,
            body: INVALID
          })
        }
        const sql = yield* SqlClient.SqlClient
        expect(yield* sql`SELECT count(*)::int AS n FROM creator_applications WHERE user_id = ${s.user.id}`)
          .toEqual([{ n: 0 }])
        // The same statement alone is accepted, and pending.
        const ok = yield* apply(identity, s.accessToken, JSON.stringify({ statement, portfolio_url: null }))
        expect(ok.status, JSON.stringify(ok.body)).toBe(200)
        expect(ok.body.data.status).toBe("pending")
      }))

    it.effect("25 lone surrogates (or one inside a long enough statement) are 400 17004, not stored as U+FFFD", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const s = yield* signIn(identity)
        for (
          const json of [
            `{"statement":"${"\\ud800".repeat(25)}"}`,
            `{"statement":"${"\\udfff".repeat(25)}"}`,
            `{"statement":"${statement}\\udc00"}`,
            `{"statement":"${statement}","portfolio_url":"https://portfolio.example/\\ud800"}`
          ]
        ) {
          expect({ json, ...(yield* apply(identity, s.accessToken, json)) }).toEqual({
            json,
            status: 400,
            body: INVALID
          })
        }
        const sql = yield* SqlClient.SqlClient
        expect(yield* sql`SELECT count(*)::int AS n FROM creator_applications WHERE user_id = ${s.user.id}`)
          .toEqual([{ n: 0 }])
        // A pair is one character: 20 of them outside the BMP are a statement.
        const ok = yield* apply(identity, s.accessToken, `{"statement":"${"\\ud83d\\udcd6".repeat(20)}"}`)
        expect(ok.status, JSON.stringify(ok.body)).toBe(200)
        expect(ok.body.data.statement).toBe("\u{1F4D6}".repeat(20))
      }))
  })
})
