/**
 * A write credential always has a tenant (docs/writing.md, "Who may write"): the operator CLI
 * (`dist/src/cli/main.js`, run as a user would; `npm test` builds first) refuses an OAuth client or
 * an API key that holds a catalog write scope (every catalog scope but `catalog:read`) without a
 * site, with a message on stderr, exit code 1, and nothing registered. Read-only credentials and
 * written ones with a site are registered as before. Starting the CLI costs a second or two, so
 * independent commands run side by side.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { DatabaseUrl } from "../../src/platform/Database.js"
import { runCli } from "../support/Cli.js"
import { TestSqlLive } from "../support/TestDatabase.js"
import { serverLayerOptions } from "../support/TestServers.js"

const cli = (args: ReadonlyArray<string>) =>
  Effect.flatMap(DatabaseUrl, (url) => Effect.promise(() => runCli(args, { DATABASE_URL: Redacted.value(url) })))

/** A failure: exit code 1 and one `error: ...` line on stderr, nothing on stdout. */
const expectFailure = (result: { code: number; stdout: string; stderr: string }, message: RegExp) => {
  expect(result.code, result.stdout).toBe(1)
  expect(result.stdout).toBe("")
  expect(result.stderr).toMatch(/^error: /m)
  expect(result.stderr).toMatch(message)
}

const expectSuccess = (result: { code: number; stdout: string; stderr: string }) => {
  expect(result.code, result.stderr).toBe(0)
  return JSON.parse(result.stdout) as any
}

const writeScopes = [
  "catalog:write",
  "claims:write",
  "moderation",
  "media:write",
  "votes:write",
  "news:write",
  "playtimes:write"
] as const

const clientArgs = (clientId: string) => [
  ...["client", "create", "--client-id", clientId, "--secret", "a-long-enough-client-secret-123"],
  ...["--redirect-uri", `https://${clientId}.example/cb`]
]

const registered = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ clients: string; keys: string }>`
    SELECT (SELECT count(*) FROM oauth_clients)::text AS clients,
           (SELECT count(*) FROM api_keys)::text AS keys`.pipe(Effect.orDie)
  return rows[0]!
})

describe("write credentials belong to a site (docs/writing.md, \"Who may write\")", () => {
  layer(TestSqlLive, serverLayerOptions("180 seconds"))((it) => {
    it.effect("client create with a write scope and no --site is refused; with a site, or read-only, it registers", () =>
      Effect.gen(function*() {
        const before = yield* registered
        const refused = yield* Effect.all([
          ...writeScopes.map((scope, i) => cli([...clientArgs(`no-site-${i}`), "--scope", "openid", "--scope", scope])),
          cli([...clientArgs("blank-site"), "--site", " ", "--scope", "claims:write"])
        ], { concurrency: "unbounded" })
        writeScopes.forEach((scope, i) => expectFailure(refused[i]!, new RegExp(`write scope \\(${scope}\\).*--site`)))
        expectFailure(refused[writeScopes.length]!, /write scope \(claims:write\).*--site/)
        expect(yield* registered).toEqual(before)

        const [withSite, readOnly, defaults] = yield* Effect.all([
          cli([
            ...clientArgs("with-site"),
            "--site",
            "site_a",
            "--scope",
            "openid",
            "--scope",
            "claims:write",
            "--json"
          ]),
          cli([...clientArgs("read-only"), "--scope", "openid", "--scope", "catalog:read", "--json"]),
          cli([...clientArgs("defaults"), "--json"])
        ], { concurrency: "unbounded" })
        expect(expectSuccess(withSite)).toMatchObject({ site: "site_a", scopes: ["openid", "claims:write"] })
        expect(expectSuccess(readOnly)).toMatchObject({ site: null, scopes: ["openid", "catalog:read"] })
        expect(expectSuccess(defaults)).toMatchObject({ site: null })
      }))

    it.effect("client update cannot give a client without a site a write scope", () =>
      Effect.gen(function*() {
        expectSuccess(yield* cli([...clientArgs("update-no-site"), "--json"]))
        expectSuccess(yield* cli([...clientArgs("update-site"), "--site", "site_b", "--json"]))
        const [refused, widened, narrowed] = yield* Effect.all([
          cli(["client", "update", "--client-id", "update-no-site", "--scope", "openid", "--scope", "moderation"]),
          cli([
            "client",
            "update",
            "--client-id",
            "update-site",
            "--scope",
            "openid",
            "--scope",
            "votes:write",
            "--json"
          ]),
          cli(["client", "update", "--client-id", "update-no-site", "--scope", "openid", "--json"])
        ], { concurrency: "unbounded" })
        expectFailure(refused, /write scope \(moderation\).*--site/)
        expect(expectSuccess(widened)).toMatchObject({ site: "site_b", scopes: ["openid", "votes:write"] })
        expect(expectSuccess(narrowed)).toMatchObject({ site: null, scopes: ["openid"] })
      }))

    it.effect("api-key create with a write scope and no --site is refused; every key needs a site", () =>
      Effect.gen(function*() {
        const before = yield* registered
        const [noSite, blankSite, readOnlyNoSite] = yield* Effect.all([
          cli(["api-key", "create", "--scopes", "catalog:read,claims:write,moderation"]),
          cli(["api-key", "create", "--site", "", "--scopes", "playtimes:write"]),
          cli(["api-key", "create", "--scopes", "catalog:read"])
        ], { concurrency: "unbounded" })
        expectFailure(noSite, /write scope \(claims:write, moderation\).*--site/)
        expectFailure(blankSite, /write scope \(playtimes:write\).*--site/)
        expectFailure(readOnlyNoSite, /--site is required/)
        expect(yield* registered).toEqual(before)
        const created = expectSuccess(
          yield* cli(["api-key", "create", "--site", "site_a", "--scopes", "catalog:read,claims:write", "--json"])
        )
        expect(created).toMatchObject({ site: "site_a", scopes: ["catalog:read", "claims:write"] })
      }))
  })
})
