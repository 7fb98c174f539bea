/**
 * The news source commands (`news-source create`, `news-source disable`; docs/writing.md, "News"),
 * run as an operator runs them (`dist/src/cli/main.js`; `npm test` builds first) against the test
 * servers' database: a source created here is one the site's bot posts under, a disabled one refuses
 * the next post, and failures are a message on stderr with exit code 1.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { DatabaseUrl } from "../../src/platform/Database.js"
import { ClaimsFixture, ClaimsFixtureLive } from "../support/Claims.js"
import { runCli } from "../support/Cli.js"
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

describe("news CLI: news-source create, news-source disable (docs/writing.md, \"News\")", () => {
  layer(ClaimsFixtureLive({ works: 10 }), serverLayerOptions("180 seconds"))((it) => {
    it.effect("a created source takes the site's posts; a disabled one refuses them", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const bot = yield* f.makeKey("site_a", ["catalog:read", "news:write"], null)
        const post = (source: string, n: number) =>
          f.call("POST", "/v2/news", {
            key: bot,
            body: { source, title: "CLI", summary: "s", source_url: `https://news.example.test/cli/${n}` }
          })

        const created = yield* cli(["news-source", "create", "--source", "cli_news", "--site", "site_a", "--json"])
        expect(created.code, created.stderr).toBe(0)
        expect(JSON.parse(created.stdout)).toMatchObject({ source: "cli_news", site: "site_a", active: true })
        const human = yield* cli(["news-source", "create", "--source", "cli_other", "--site", "site_b"])
        expect(human.code, human.stderr).toBe(0)
        expect(human.stdout).toContain("Created news source cli_other for site site_b.")

        const posted = yield* post("cli_news", 1)
        expect(posted.status, JSON.stringify(posted.body)).toBe(201)
        // Bound to site_b: not site_a's to post under.
        const ofB = yield* post("cli_other", 2)
        expect(ofB.status).toBe(422)
        expect(ofB.body.errors).toEqual([expect.objectContaining({ reason: "NOT_PERMITTED", pointer: "/source" })])

        const [again, badName, badSite, unknown] = yield* Effect.all([
          cli(["news-source", "create", "--source", "cli_news", "--site", "site_b"]),
          cli(["news-source", "create", "--source", "Not-A-Source", "--site", "site_a"]),
          cli(["news-source", "create", "--source", "cli_x", "--site", "Not A Site"]),
          cli(["news-source", "disable", "--source", "no_such_source"])
        ], { concurrency: "unbounded" })
        expectFailure(again, /news source cli_news already exists/)
        expectFailure(badName, /not a news source name/)
        expectFailure(badSite, /not a site name/)
        expectFailure(unknown, /no news source no_such_source/)

        const disabled = yield* cli(["news-source", "disable", "--source", "cli_news", "--json"])
        expect(disabled.code, disabled.stderr).toBe(0)
        expect(JSON.parse(disabled.stdout)).toMatchObject({ source: "cli_news", site: "site_a", active: false })
        const refused = yield* post("cli_news", 3)
        expect(refused.status).toBe(422)
        expect(refused.body.errors).toEqual([expect.objectContaining({ reason: "NOT_PERMITTED", pointer: "/source" })])
        // What was posted before stays.
        const kept = yield* f.call("GET", `/v2/news/${posted.body.id}`, { key: bot })
        expect(kept.status).toBe(200)
      }))
  })
})
