/**
 * `cli merge <object> <from_id> <into_id>` (README, "Operator CLI"; docs/decisions.md,
 * "Catalog reads"): one transaction that produces the redirect and the `gone` change
 * (docs/change-feed.md, "What a mirror can rely on"), moves or re-points what belongs with the
 * survivor, keeps the gated work counts right (docs/api-contract.md, "Credentials, scopes and the
 * content limit") and refuses bad merges.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import type { TargetObject } from "../../schema/Catalog/Change.js"
import { entityTables } from "../../src/catalog/merge/MergeRepo.js"
import { Merges } from "../../src/catalog/merge/Merges.js"
import { DatabaseUrl } from "../../src/platform/Database.js"
import { SeededCatalogLive } from "../support/Catalog.js"
import { runCli } from "../support/Cli.js"

const Env = Merges.layer.pipe(Layer.provideMerge(SeededCatalogLive({ works: 300, seed: 5 })))

const cli = (args: ReadonlyArray<string>) =>
  Effect.flatMap(DatabaseUrl, (url) => Effect.promise(() => runCli(args, { DATABASE_URL: Redacted.value(url) })))

/**
 * Companies, tags and engines whose stored gated counts differ from a full recount, and works whose
 * search row (migrations/0006) or facet row (migrations/0008) differ from the work and its links.
 */
const countMismatches = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return yield* sql<{ object: string; id: string }>`
    SELECT 'company' AS object, c.id::text AS id FROM companies c, LATERAL (
      SELECT count(w.id)::int AS n, (count(w.id) FILTER (WHERE NOT w.nsfw))::int AS s
      FROM work_companies wc JOIN works w ON w.id = wc.work_id AND w.live WHERE wc.company_id = c.id) x
    WHERE (c.work_count, c.work_count_sfw) IS DISTINCT FROM (x.n, x.s)
    UNION ALL
    SELECT 'tag', t.id::text FROM tags t, LATERAL (
      SELECT count(w.id)::int AS n, (count(w.id) FILTER (WHERE NOT w.nsfw))::int AS s
      FROM work_tags wt JOIN works w ON w.id = wt.work_id AND w.live WHERE wt.tag_id = t.id) x
    WHERE (t.work_count, t.work_count_sfw) IS DISTINCT FROM (x.n, x.s)
    UNION ALL
    SELECT 'engine', e.id::text FROM engines e, LATERAL (
      SELECT count(w.id)::int AS n, (count(w.id) FILTER (WHERE NOT w.nsfw))::int AS s
      FROM works w WHERE w.engine_id = e.id AND w.live) x
    WHERE (e.work_count, e.work_count_sfw) IS DISTINCT FROM (x.n, x.s)
    UNION ALL
    SELECT 'work_search', s.work_id::text FROM work_search s JOIN works w ON w.id = s.work_id
    WHERE (s.popularity, s.live, s.nsfw) IS DISTINCT FROM (w.popularity, w.live, w.nsfw)
    UNION ALL
    SELECT 'work_facets', w.id::text FROM works w LEFT JOIN work_facets f ON f.work_id = w.id
    WHERE f.work_id IS NULL OR (f.olang, f.media, f.platforms) IS DISTINCT FROM (w.olang, w.media, w.platforms)
      OR f.tag_ids IS DISTINCT FROM ARRAY(SELECT x.tag_id FROM work_tags x WHERE x.work_id = w.id ORDER BY 1)
      OR f.company_ids IS DISTINCT FROM ARRAY(SELECT x.company_id FROM work_companies x WHERE x.work_id = w.id ORDER BY 1)
  `
})

const liveIds = (object: TargetObject, n: number) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql<{ id: string }>`
        SELECT id::text AS id FROM ${sql(entityTables[object])} WHERE live ORDER BY id LIMIT ${n}
      `
  ).pipe(Effect.map((rows) => rows.map((r) => r.id)))

describe("merge (docs/decisions.md, \"Catalog reads\")", () => {
  it.layer(Env, { timeout: "180 seconds" })((it) => {
    it.effect("CLI merge work: one transaction marks the loser, writes redirect and gone change, moves its rows", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        expect(yield* countMismatches).toEqual([])
        // A loser with companies, tags and releases the survivor lacks.
        const [pair] = yield* sql<{ from_id: string; into_id: string }>`
          SELECT a.id::text AS from_id, b.id::text AS into_id FROM works a, works b
          WHERE a.live AND b.live AND a.id <> b.id AND NOT a.nsfw AND NOT b.nsfw
            AND EXISTS (SELECT 1 FROM releases r WHERE r.work_id = a.id)
            AND EXISTS (SELECT 1 FROM work_companies x WHERE x.work_id = a.id
              AND x.company_id NOT IN (SELECT company_id FROM work_companies WHERE work_id = b.id))
            AND EXISTS (SELECT 1 FROM work_tags x WHERE x.work_id = a.id
              AND x.tag_id NOT IN (SELECT tag_id FROM work_tags WHERE work_id = b.id))
          ORDER BY a.id, b.id LIMIT 1
        `
        const { from_id: a, into_id: b } = pair!
        const companiesOfA = yield* sql<{ id: string }>`
          SELECT company_id::text AS id FROM work_companies WHERE work_id = ${a}`
        const tagsOfA = yield* sql<{ id: string }>`SELECT tag_id::text AS id FROM work_tags WHERE work_id = ${a}`
        const releasesOfA = yield* sql<{ id: string }>`SELECT id::text AS id FROM releases WHERE work_id = ${a}`

        const result = yield* cli(["merge", "work", a, b, "--json"])
        expect(result.code, result.stderr).toBe(0)
        const out = JSON.parse(result.stdout)
        expect(out).toMatchObject({ object: "work", from_id: a, into_id: b, redirects_repointed: 0 })
        expect(out.moved.releases).toBe(releasesOfA.length)
        expect(out.touched).toBeGreaterThanOrEqual(2 + releasesOfA.length)

        const [work] = yield* sql<{ merged_into: string; live: boolean }>`
          SELECT merged_into::text AS merged_into, live FROM works WHERE id = ${a}`
        expect(work).toEqual({ merged_into: b, live: false })
        // Loser gone, survivor changed, redirect written: all stamped by the same transaction.
        const stamps = yield* sql<{ what: string; gone: boolean | null; txid: string }>`
          SELECT 'loser' AS what, gone, xmin::text AS txid FROM catalog_changes WHERE target_object = 'work' AND id = ${a}
          UNION ALL SELECT 'survivor', gone, xmin::text FROM catalog_changes WHERE target_object = 'work' AND id = ${b}
          UNION ALL SELECT 'redirect', NULL, xmin::text FROM catalog_redirects
            WHERE target_object = 'work' AND from_id = ${a} AND current_id = ${b}
        `
        expect(stamps.map((s) => [s.what, s.gone])).toEqual([["loser", true], ["survivor", false], ["redirect", null]])
        expect(new Set(stamps.map((s) => s.txid)).size).toBe(1)
        // Companies, tags and releases now belong to the survivor.
        const companiesOfB = new Set(
          (yield* sql<{ id: string }>`SELECT company_id::text AS id FROM work_companies WHERE work_id = ${b}`).map((
            r
          ) => r.id)
        )
        for (const { id } of companiesOfA) expect(companiesOfB.has(id), `company ${id}`).toBe(true)
        const tagsOfB = new Set(
          (yield* sql<{ id: string }>`SELECT tag_id::text AS id FROM work_tags WHERE work_id = ${b}`).map((r) => r.id)
        )
        for (const { id } of tagsOfA) expect(tagsOfB.has(id), `tag ${id}`).toBe(true)
        const moved = yield* sql<{ id: string }>`
          SELECT id::text AS id FROM releases WHERE work_id = ${b} AND id = ANY(${
          releasesOfA.map((r) => r.id)
        }::bigint[])`
        expect(moved).toHaveLength(releasesOfA.length)
        // Titles stay with the loser.
        const titles = yield* sql`SELECT 1 FROM work_titles WHERE work_id = ${a}`
        expect(titles.length).toBeGreaterThan(0)
        // The targeted count refresh leaves every count equal to a full recount.
        expect(yield* countMismatches).toEqual([])
      }))

    it.effect("a work merge moves players' reports (the larger of two kept), news links and votes on a shared cover to the survivor, its playtime aggregate equal to a recount (docs/writing.md, \"Playtimes\", \"News\", \"Cover votes\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const [a, b] = yield* sql<{ id: string }>`
          SELECT id::text AS id FROM works w WHERE live
            AND NOT EXISTS (SELECT 1 FROM playtimes p WHERE p.work_id = w.id) ORDER BY id DESC LIMIT 2`.pipe(
          Effect.map((rows) => rows.map((r) => r.id))
        )
        // Reports: users 1-3 on the loser, users 3-5 on the survivor (user 3 on both: 900 beats 100).
        const reports: ReadonlyArray<readonly [number, string, number]> = [
          [1, a!, 30],
          [2, a!, 480],
          [3, a!, 900],
          [3, b!, 100],
          [4, b!, 250],
          [5, b!, 7000]
        ]
        for (const [user, work, minutes] of reports) {
          yield* sql`INSERT INTO playtimes (user_id, work_id, minutes) VALUES (${user}, ${work}, ${minutes})`
        }
        // The aggregates as the writer keeps them, counted here from the reports.
        yield* sql`
          INSERT INTO work_playtime_minutes (work_id, minutes, players)
          SELECT work_id, minutes, count(*) FROM playtimes WHERE work_id IN (${a}, ${b}) GROUP BY 1, 2`
        yield* sql`
          INSERT INTO work_playtime_buckets (work_id, bucket, players)
          SELECT work_id, minutes / 250, count(*) FROM playtimes WHERE work_id IN (${a}, ${b}) GROUP BY 1, 2`
        yield* sql`
          INSERT INTO work_playtimes (work_id, players, median_minutes)
          SELECT work_id, count(*), percentile_cont(0.5) WITHIN GROUP (ORDER BY minutes) FROM playtimes
          WHERE work_id IN (${a}, ${b}) GROUP BY 1`
        // Two news items: one names the loser, one names both.
        yield* sql`INSERT INTO news_sources (source, site) VALUES ('merge_news', 'site_a') ON CONFLICT DO NOTHING`
        const items = yield* sql<{ id: string }>`
          INSERT INTO news_items (source, site, title, summary, source_url, lane, published_at)
          VALUES ('merge_news', 'site_a', 'One', 'One', ${`https://news.example/${a}/1`}, 'news', now()),
                 ('merge_news', 'site_a', 'Two', 'Two', ${`https://news.example/${a}/2`}, 'news', now())
          RETURNING id::text AS id`
        yield* sql`
          INSERT INTO news_item_works (news_id, work_id, position) VALUES
            (${items[0]!.id}, ${a}, 0), (${items[1]!.id}, ${b}, 0), (${items[1]!.id}, ${a}, 1)`
        // The same image as a cover of both works; votes on the loser's by users x and y, on the
        // survivor's by y.
        const [image] = yield* sql<{ hash: string }>`SELECT hash FROM images ORDER BY hash LIMIT 1`
        const covers = yield* sql<{ id: string }>`
          INSERT INTO covers (work_id, image_hash) VALUES (${a}, ${image!.hash}), (${b}, ${image!.hash})
          RETURNING id::text AS id`
        const [fromCover, intoCover] = [covers[0]!.id, covers[1]!.id]
        yield* sql`
          INSERT INTO cover_votes (cover_id, uid) VALUES (${fromCover}, 'x'), (${fromCover}, 'y'), (${intoCover}, 'y')`
        yield* sql`UPDATE covers SET vote_count = 2 WHERE id = ${fromCover}`
        yield* sql`UPDATE covers SET vote_count = 1 WHERE id = ${intoCover}`

        const result = yield* cli(["merge", "work", a!, b!, "--json"])
        expect(result.code, result.stderr).toBe(0)
        expect(JSON.parse(result.stdout).moved).toMatchObject({ playtimes: 3, news: 1, cover_votes: 1 })

        const survivorReports = yield* sql<{ user_id: string; minutes: number }>`
          SELECT user_id::text AS user_id, minutes FROM playtimes WHERE work_id IN (${a}, ${b})
          ORDER BY user_id`
        expect(survivorReports.map((r) => [r.user_id, r.minutes])).toEqual([
          ["1", 30],
          ["2", 480],
          ["3", 900],
          ["4", 250],
          ["5", 7000]
        ])
        expect(yield* sql`SELECT 1 FROM playtimes WHERE work_id = ${a}`).toHaveLength(0)
        // The stored aggregate and histograms equal a recount of the survivor's reports.
        const [recount] = yield* sql<{ players: number; median: number; stored: number; median_stored: number }>`
          SELECT count(*)::int AS players,
                 percentile_cont(0.5) WITHIN GROUP (ORDER BY minutes) AS median,
                 (SELECT players FROM work_playtimes WHERE work_id = ${b}) AS stored,
                 (SELECT median_minutes FROM work_playtimes WHERE work_id = ${b}) AS median_stored
          FROM playtimes WHERE work_id = ${b}`
        expect(recount).toEqual({ players: 5, median: 480, stored: 5, median_stored: 480 })
        const histogramDrift = yield* sql`
          SELECT minutes FROM (
            SELECT minutes, count(*)::int AS n FROM playtimes WHERE work_id = ${b} GROUP BY minutes) r
          FULL JOIN (SELECT minutes, players AS n FROM work_playtime_minutes WHERE work_id = ${b} AND players <> 0) h
            USING (minutes)
          WHERE r.n IS DISTINCT FROM h.n`
        expect(histogramDrift).toEqual([])
        const [loser] = yield* sql<{ players: number; median_minutes: number | null }>`
          SELECT players, median_minutes FROM work_playtimes WHERE work_id = ${a}`
        expect(loser).toEqual({ players: 0, median_minutes: null })
        // Both items name the survivor, once each.
        const links = yield* sql<{ news_id: string; work_id: string }>`
          SELECT news_id::text AS news_id, work_id::text AS work_id FROM news_item_works
          WHERE news_id IN (${items[0]!.id}, ${items[1]!.id}) ORDER BY news_id, position`
        expect(links).toEqual([{ news_id: items[0]!.id, work_id: b }, { news_id: items[1]!.id, work_id: b }])
        // x's vote now counts on the survivor's cover; y voted there already.
        const voters = yield* sql<
          { uid: string }
        >`SELECT uid FROM cover_votes WHERE cover_id = ${intoCover} ORDER BY uid`
        expect(voters.map((v) => v.uid)).toEqual(["x", "y"])
        const [count] = yield* sql<{ vote_count: number }>`SELECT vote_count FROM covers WHERE id = ${intoCover}`
        expect(count!.vote_count).toBe(2)
      }))

    it.effect("chains are flattened to the final survivor (docs/change-feed.md, \"What a mirror can rely on\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const merges = yield* Merges
        const [x, y, z] = yield* liveIds("engine", 3)
        yield* merges.merge("engine", x!, y!)
        const second = yield* merges.merge("engine", y!, z!)
        // x's entry, plus any the seed had merged into y.
        expect(second.redirectsRepointed).toBeGreaterThanOrEqual(1)
        const rows = yield* sql<{ from_id: string; into_id: string; current_id: string }>`
          SELECT from_id::text AS from_id, into_id::text AS into_id, current_id::text AS current_id
          FROM catalog_redirects WHERE target_object = 'engine' AND from_id IN (${x}, ${y}) ORDER BY from_id
        `
        expect(rows).toEqual(
          [
            { from_id: x, into_id: y, current_id: z },
            { from_id: y, into_id: z, current_id: z }
          ].sort((p, q) => Number(p.from_id) - Number(q.from_id))
        )
        const onOld = yield* sql`SELECT 1 FROM works WHERE engine_id IN (${x}, ${y})`
        expect(onOld).toEqual([])
        expect(yield* countMismatches).toEqual([])
      }))

    it.effect("CLI refuses: into itself, unknown ids, a merged or withdrawn target, a cycle, an unknown object", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const merges = yield* Merges
        const [p, q, r, s] = yield* liveIds("tag", 4)
        yield* merges.merge("tag", p!, q!)
        const [live, withdrawn] = yield* liveIds("work", 2)
        yield* sql`UPDATE works SET withdrawn = true WHERE id = ${withdrawn!}`.pipe(
          Effect.andThen(sql`SELECT catalog_refresh_work_counts()`),
          sql.withTransaction
        )
        const cases: ReadonlyArray<readonly [ReadonlyArray<string>, string]> = [
          [["merge", "tag", r!, r!], "into itself"],
          [["merge", "tag", "999999999", r!], "No tag with id 999999999"],
          [["merge", "tag", r!, p!], `is merged into ${q}`],
          [["merge", "tag", q!, p!], "cycle"],
          [["merge", "work", live!, withdrawn!], "withdrawn"],
          // effect/cli's refusal of a value outside the choices names them: `Expected: "work" | ...`.
          [["merge", "trait", r!, s!], "Expected: \"work\""]
        ]
        const results = yield* Effect.all(cases.map(([args]) => cli(args)), { concurrency: 3 })
        results.forEach((result, i) => {
          const [args, message] = cases[i]!
          expect(result.code, args.join(" ")).not.toBe(0)
          expect(result.stderr + result.stdout, args.join(" ")).toContain(message)
        })
        const refusals: ReadonlyArray<readonly [readonly [TargetObject, string, string], string]> = [
          [["tag", p!, s!], "already_merged"],
          [["tag", r!, "999999999"], "unknown_id"],
          [["tag", "12x", r!], "unknown_id"]
        ]
        for (const [[object, from, into], reason] of refusals) {
          const refused = yield* Effect.flip(merges.merge(object, from, into))
          expect(refused.reason, `${object} ${from} ${into}`).toBe(reason)
        }
        // Nothing was written by the refused merges.
        const redirects =
          yield* sql`SELECT 1 FROM catalog_redirects WHERE target_object = 'tag' AND from_id IN (${q}, ${r})`
        expect(redirects).toEqual([])
      }))

    it.effect("every entity type merges; no live row refers to a merged-away entity afterwards", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const merges = yield* Merges
        const objects: ReadonlyArray<TargetObject> = [
          "work",
          "release",
          "character",
          "credit_name",
          "person",
          "company",
          "tag",
          "engine"
        ]
        for (const object of objects) {
          const [loser, survivor] = yield* liveIds(object, 2)
          expect(survivor, object).toBeDefined()
          const exit = yield* Effect.exit(merges.merge(object, loser!, survivor!))
          expect(Exit.isSuccess(exit), `${object}: ${JSON.stringify(exit)}`).toBe(true)
          const [row] = yield* sql<{ merged_into: string }>`
            SELECT merged_into::text AS merged_into FROM ${sql(entityTables[object])} WHERE id = ${loser}`
          expect(row!.merged_into, object).toBe(survivor)
          const [change] = yield* sql<{ gone: boolean }>`
            SELECT gone FROM catalog_changes WHERE target_object = ${object} AND id = ${loser}`
          expect(change!.gone, object).toBe(true)
        }
        const dangling = yield* sql<{ what: string; n: number }>`
          SELECT 'work_companies' AS what, count(*)::int AS n FROM work_companies x
            JOIN companies c ON c.id = x.company_id JOIN works w ON w.id = x.work_id WHERE w.live AND NOT c.live
          UNION ALL SELECT 'release_companies', count(*)::int FROM release_companies x
            JOIN companies c ON c.id = x.company_id JOIN releases r ON r.id = x.release_id WHERE r.live AND NOT c.live
          UNION ALL SELECT 'work_tags', count(*)::int FROM work_tags x
            JOIN tags t ON t.id = x.tag_id JOIN works w ON w.id = x.work_id WHERE w.live AND NOT t.live
          UNION ALL SELECT 'work_characters', count(*)::int FROM work_characters x
            JOIN characters c ON c.id = x.character_id JOIN works w ON w.id = x.work_id WHERE w.live AND NOT c.live
          UNION ALL SELECT 'credits', count(*)::int FROM credits x
            JOIN credit_names n ON n.id = x.credit_name_id JOIN works w ON w.id = x.work_id WHERE w.live AND NOT n.live
          UNION ALL SELECT 'credit_names', count(*)::int FROM credit_names x
            JOIN persons p ON p.id = x.person_id WHERE x.live AND NOT p.live
          UNION ALL SELECT 'engines', count(*)::int FROM works w JOIN engines e ON e.id = w.engine_id
            WHERE w.live AND NOT e.live
          UNION ALL SELECT 'releases', count(*)::int FROM releases r JOIN works w ON w.id = r.work_id
            WHERE r.live AND w.merged_into IS NOT NULL
        `
        // The seed's own merged-away entities are unreferenced too, so every count is zero.
        expect(dangling.filter((d) => d.n > 0)).toEqual([])
        expect(yield* countMismatches).toEqual([])
      }))
  })
})
