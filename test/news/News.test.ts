/**
 * News through real HTTP (docs/writing.md, "News"; "Who may write" and "The write runner" for the
 * rules every write shares): who may post under a news source, every field's rule (the summary's
 * length counted in Unicode code points), one item per `source_url` also when two posts race, the
 * reads (newest published first, filters, cursor pages, the `ETag` and 304 of RFC 9110 sections 8.8.3
 * and 13.1.2) and the content gate (docs/api-contract.md, the content limit).
 *
 * Every test posts under news sources of its own, so none depends on another's items.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { Merges } from "../../src/catalog/merge/Merges.js"
import { ClaimsFixture, ClaimsFixtureLive, type ClaimsFixtureShape } from "../support/Claims.js"
import { expectProblemCode, expectStatus, type Reply } from "../support/Proposals.js"
import { serverLayerOptions } from "../support/TestServers.js"

/** A 422 `VALIDATION_FAILED` whose `errors` are exactly `errors` (each with some `detail`). */
const expectErrors = (
  res: Reply,
  errors: ReadonlyArray<{ readonly reason: string; readonly pointer: string; readonly params?: unknown }>
) => {
  const body = expectProblemCode(res, 422, "VALIDATION_FAILED")
  expect(body.errors).toEqual(errors.map((e) => ({ detail: expect.any(String), ...e })))
}

let sources = 0
/** A new news source bound to `site` (active unless `active` is false). */
const newSource = (site: string, active = true) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const source = `src_${++sources}_${site}`
    yield* sql`INSERT INTO news_sources (source, site, active) VALUES (${source}, ${site}, ${active})`
    return source
  }).pipe(Effect.orDie)

let urls = 0
const newUrl = () => `https://news.example.test/articles/${++urls}-${Date.now()}`

/** How many items hold `source_url`. */
const itemsAt = (url: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql<{ n: number }>`SELECT count(*)::int AS n FROM news_items WHERE source_url = ${url}`
  ).pipe(
    Effect.map(([row]) => row!.n),
    Effect.orDie
  )

/** Live works, sfw unless `nsfw`, that no test took before. */
const taken = new Set<string>()
const takeWork = (nsfw = false) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ id: string }>`
      SELECT id::text AS id FROM works
      WHERE live AND nsfw = ${nsfw} AND NOT (id::text = ANY(${[...taken]}::text[])) ORDER BY id LIMIT 1`
    expect(row, "a work for this test").toBeDefined()
    taken.add(row!.id)
    return row!.id
  }).pipe(Effect.orDie)

const keys = (f: ClaimsFixtureShape) =>
  Effect.gen(function*() {
    return {
      /** site_a's bot: no user. */
      bot: yield* f.makeKey("site_a", ["catalog:read", "news:write"], null),
      /** site_a's bot with the nsfw content limit. */
      botNsfw: yield* f.makeKeyWithLimit("site_a", ["catalog:read", "news:write"], null, "nsfw"),
      /** A user of site_a. */
      user: yield* f.makeKey("site_a", ["catalog:read", "news:write"], f.siteUser.id),
      /** site_b's bot. */
      otherBot: yield* f.makeKey("site_b", ["catalog:read", "news:write"], null),
      reader: yield* f.makeKey("site_b", ["catalog:read"], null),
      readerNsfw: yield* f.makeKeyWithLimit("site_b", ["catalog:read"], null, "nsfw")
    }
  })

const Env = Merges.layer.pipe(Layer.provideMerge(ClaimsFixtureLive({ works: 60 })))

describe("news (docs/writing.md, \"News\")", () => {
  it.layer(Env, serverLayerOptions("240 seconds"))((it) => {
    const post = (key: string, body: Record<string, unknown>, idempotencyKey?: string) =>
      Effect.flatMap(ClaimsFixture, (f) =>
        f.call("POST", "/v2/news", {
          key,
          body,
          ...(idempotencyKey === undefined ? {} : { headers: { "idempotency-key": idempotencyKey } })
        }))

    it.effect("a site's bot posts under its source: 201 with Location, the record, the defaults", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const k = yield* keys(f)
        const source = yield* newSource("site_a")
        const url = newUrl()
        const work = yield* takeWork()
        const res = yield* post(k.bot, {
          source,
          title: "新作発表",
          summary: "要約",
          source_url: url,
          work_ids: [work]
        })
        const body = expectStatus(res, 201)
        expect(res.headers.get("location")).toBe(`/v2/news/${body.id}`)
        expect(body).toEqual({
          object: "news_item",
          id: expect.stringMatching(/^[0-9]+$/),
          source,
          site: "site_a",
          title: "新作発表",
          summary: "要約",
          source_url: url,
          lane: "news",
          published_at: body.created_at,
          banner_hash: null,
          work_ids: [work],
          created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/)
        })
        // The links are `manual` (docs/writing.md, "News").
        const sql = yield* SqlClient.SqlClient
        const links = yield* sql<{ confidence: string }>`
          SELECT confidence FROM news_item_works WHERE news_id = ${body.id}::bigint`
        expect(links).toEqual([{ confidence: "manual" }])
        // One item by id, with a strong ETag; If-None-Match naming it is 304.
        const one = yield* f.call("GET", `/v2/news/${body.id}`, { key: k.reader })
        expect(expectStatus(one, 200)).toEqual(body)
        const etag = one.headers.get("etag")
        expect(etag).toMatch(/^"[^"]+"$/)
        const again = yield* f.call("GET", `/v2/news/${body.id}`, {
          key: k.reader,
          headers: { "if-none-match": etag! }
        })
        expect(again.status).toBe(304)
        expectProblemCode(yield* f.call("GET", "/v2/news/99999999999", { key: k.reader }), 404, "NOT_FOUND")
        // A user of the site may post too; lane, published_at (an offset, answered in UTC) and banner_hash as given.
        const hash = "ab".repeat(32)
        const byUser = expectStatus(
          yield* post(k.user, {
            source,
            title: "コラム",
            summary: "column",
            source_url: newUrl(),
            lane: "column",
            published_at: "2025-06-01T18:30:00+09:00",
            banner_hash: hash
          }),
          201
        )
        expect(byUser).toMatchObject({
          lane: "column",
          published_at: "2025-06-01T09:30:00.000000Z",
          banner_hash: hash,
          work_ids: []
        })
        // An empty banner_hash is none.
        const noBanner = expectStatus(
          yield* post(k.bot, { source, title: "t", summary: "s", source_url: newUrl(), banner_hash: "" }),
          201
        )
        expect(noBanner.banner_hash).toBeNull()
      }))

    it.effect("the summary holds at most 200 Unicode code points, in any script; a refusal stores nothing", () =>
      Effect.gen(function*() {
        const k = yield* keys(yield* ClaimsFixture)
        const source = yield* newSource("site_a")
        const ja200 = "あ".repeat(200)
        const ok = expectStatus(yield* post(k.bot, { source, title: "t", summary: ja200, source_url: newUrl() }), 201)
        expect([...ok.summary]).toHaveLength(200)
        const url = newUrl()
        expectErrors(yield* post(k.bot, { source, title: "t", summary: "あ".repeat(201), source_url: url }), [
          { reason: "TOO_LONG", pointer: "/summary", params: { max_length: 200 } }
        ])
        expect(yield* itemsAt(url)).toBe(0)
        // 200 characters outside the BMP are 400 UTF-16 units and still 200 code points.
        expectStatus(yield* post(k.bot, { source, title: "t", summary: "😀".repeat(200), source_url: newUrl() }), 201)
        expectErrors(yield* post(k.bot, { source, title: "t", summary: "😀".repeat(201), source_url: newUrl() }), [
          { reason: "TOO_LONG", pointer: "/summary", params: { max_length: 200 } }
        ])
      }))

    it.effect("only an active source bound to the credential's site: otherwise 422 NOT_PERMITTED at /source", () =>
      Effect.gen(function*() {
        const k = yield* keys(yield* ClaimsFixture)
        const ofB = yield* newSource("site_b")
        const disabled = yield* newSource("site_a", false)
        for (const source of [ofB, disabled, "no_such_source"]) {
          const url = newUrl()
          expectErrors(yield* post(k.bot, { source, title: "t", summary: "s", source_url: url }), [
            { reason: "NOT_PERMITTED", pointer: "/source" }
          ])
          expect(yield* itemsAt(url)).toBe(0)
        }
        // site_b's own bot may post under its source.
        expectStatus(yield* post(k.otherBot, { source: ofB, title: "t", summary: "s", source_url: newUrl() }), 201)
        // A source disabled after posts refuses the next one.
        const sql = yield* SqlClient.SqlClient
        const source = yield* newSource("site_a")
        expectStatus(yield* post(k.bot, { source, title: "t", summary: "s", source_url: newUrl() }), 201)
        yield* sql`UPDATE news_sources SET active = false WHERE source = ${source}`.pipe(Effect.orDie)
        expectErrors(yield* post(k.bot, { source, title: "t", summary: "s", source_url: newUrl() }), [
          { reason: "NOT_PERMITTED", pointer: "/source" }
        ])
      }))

    it.effect("work_ids: unknown, invisible and repeated ids are refused at their index", () =>
      Effect.gen(function*() {
        const k = yield* keys(yield* ClaimsFixture)
        const source = yield* newSource("site_a")
        const sfw = yield* takeWork()
        const nsfw = yield* takeWork(true)
        const url = newUrl()
        expectErrors(
          yield* post(k.bot, {
            source,
            title: "t",
            summary: "s",
            source_url: url,
            work_ids: [sfw, "99999999999", nsfw, "99999999999999999999", sfw]
          }),
          [
            { reason: "DUPLICATE_ITEM", pointer: "/work_ids/4" },
            { reason: "UNKNOWN_REFERENCE", pointer: "/work_ids/1" },
            { reason: "UNKNOWN_REFERENCE", pointer: "/work_ids/2" },
            { reason: "UNKNOWN_REFERENCE", pointer: "/work_ids/3" }
          ]
        )
        expect(yield* itemsAt(url)).toBe(0)
        // A credential that sees nsfw works may link one.
        const linked = expectStatus(
          yield* post(k.botNsfw, { source, title: "t", summary: "s", source_url: url, work_ids: [nsfw, sfw] }),
          201
        )
        expect(linked.work_ids).toEqual([nsfw, sfw])
        // More than 100 is refused by the schema.
        const many = Array.from({ length: 101 }, () => sfw)
        expectErrors(yield* post(k.bot, { source, title: "t", summary: "s", source_url: newUrl(), work_ids: many }), [
          { reason: "TOO_MANY_ITEMS", pointer: "/work_ids", params: { max_items: 100 } }
        ])
      }))

    it.effect("each field's format: required members, lane, published_at, banner_hash, source_url, storable text", () =>
      Effect.gen(function*() {
        const k = yield* keys(yield* ClaimsFixture)
        const source = yield* newSource("site_a")
        expectErrors(yield* post(k.bot, {}), [
          { reason: "REQUIRED", pointer: "/source" },
          { reason: "REQUIRED", pointer: "/title" },
          { reason: "REQUIRED", pointer: "/summary" },
          { reason: "REQUIRED", pointer: "/source_url" }
        ])
        const base = { source, title: "t", summary: "s" }
        for (
          const [member, value, reason] of [
            ["banner_hash", "AB".repeat(32), "INVALID_FORMAT"],
            ["banner_hash", "a".repeat(63), "INVALID_FORMAT"],
            ["published_at", "2025-02-30T00:00:00Z", "INVALID_FORMAT"],
            ["published_at", "2025-06-01 09:30:00", "INVALID_FORMAT"],
            ["source_url", "ftp://example.test/a", "INVALID_FORMAT"],
            ["title", "nul\u0000", "INVALID_FORMAT"],
            ["title", "", "TOO_SHORT"],
            ["source", "Not-A-Source", "INVALID_FORMAT"]
          ] as const
        ) {
          const res = yield* post(k.bot, { ...base, source_url: newUrl(), [member]: value })
          const body = expectProblemCode(res, 422, "VALIDATION_FAILED")
          expect(body.errors.map((e: any) => [e.reason, e.pointer]), `${member}: ${value}`).toContainEqual([
            reason,
            `/${member}`
          ])
        }
        const lane = expectProblemCode(
          yield* post(k.bot, { ...base, source_url: newUrl(), lane: "opinion" }),
          422,
          "VALIDATION_FAILED"
        )
        expect(lane.errors[0]).toMatchObject({ reason: "UNKNOWN_VALUE", pointer: "/lane" })
        const extra = expectProblemCode(
          yield* post(k.bot, { ...base, source_url: newUrl(), author: "x" }),
          422,
          "VALIDATION_FAILED"
        )
        expect(extra.errors[0]).toMatchObject({ reason: "UNKNOWN_VALUE", pointer: "/author" })
      }))

    it.effect("one item per source_url: a second post is 409, and of two racing posts exactly one is 201", () =>
      Effect.gen(function*() {
        const k = yield* keys(yield* ClaimsFixture)
        const source = yield* newSource("site_a")
        const url = newUrl()
        const body = { source, title: "t", summary: "s", source_url: url }
        const first = expectStatus(yield* post(k.bot, body, "dup-1"), 201)
        expectProblemCode(yield* post(k.bot, body, "dup-2"), 409, "ALREADY_EXISTS")
        // The same key and body replay the first answer.
        const replay = yield* post(k.bot, body, "dup-1")
        expect(expectStatus(replay, 201)).toEqual(first)
        expect(replay.headers.get("idempotent-replayed")).toBe("true")
        expect(yield* itemsAt(url)).toBe(1)
        // A race: the same body under two keys at once.
        for (let round = 0; round < 5; round++) {
          const raced = newUrl()
          const both = yield* Effect.all(
            [
              post(k.bot, { ...body, source_url: raced }, `race-${round}-a`),
              post(k.bot, { ...body, source_url: raced }, `race-${round}-b`)
            ],
            { concurrency: "unbounded" }
          )
          expect(both.map((r) => r.status).sort()).toEqual([201, 409])
          expect(both.find((r) => r.status === 409)!.body.code).toBe("ALREADY_EXISTS")
          expect(yield* itemsAt(raced)).toBe(1)
        }
      }))

    it.effect("the list: newest published first, lane= source= work_id= filters, cursor pages", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const k = yield* keys(f)
        const source = yield* newSource("site_a")
        const other = yield* newSource("site_a")
        const work = yield* takeWork()
        const posted: Array<{ id: string; lane: string }> = []
        for (const [day, lane] of [[3, "news"], [1, "column"], [5, "news"], [2, "column"], [4, "news"]] as const) {
          const res = yield* post(k.bot, {
            source,
            title: `day ${day}`,
            summary: "s",
            source_url: newUrl(),
            lane,
            published_at: `2020-01-0${day}T00:00:00Z`,
            work_ids: day % 2 === 1 ? [work] : []
          })
          posted.push({ id: expectStatus(res, 201).id, lane })
        }
        expectStatus(
          yield* post(k.bot, { source: other, title: "other", summary: "s", source_url: newUrl(), work_ids: [work] }),
          201
        )
        const titles = (res: Reply) => expectStatus(res, 200).items.map((i: any) => i.title)
        const all = yield* f.call("GET", `/v2/news?source=${source}`, { key: k.reader })
        expect(titles(all)).toEqual(["day 5", "day 4", "day 3", "day 2", "day 1"])
        expect(all.body.next_cursor).toBeUndefined()
        expect(titles(yield* f.call("GET", `/v2/news?source=${source}&lane=column`, { key: k.reader }))).toEqual([
          "day 2",
          "day 1"
        ])
        expect(titles(yield* f.call("GET", `/v2/news?work_id=${work}`, { key: k.reader }))).toEqual([
          "other",
          "day 5",
          "day 3",
          "day 1"
        ])
        expect(titles(yield* f.call("GET", `/v2/catalog/works/${work}/news?lane=news`, { key: k.reader }))).toEqual([
          "other",
          "day 5",
          "day 3"
        ])
        // Cursor pages walk the same order; a cursor is bound to its filters.
        const seen: Array<string> = []
        let cursor: string | undefined
        do {
          const page = yield* f.call(
            "GET",
            `/v2/news?source=${source}&limit=2${cursor === undefined ? "" : `&cursor=${cursor}`}`,
            { key: k.reader }
          )
          const body = expectStatus(page, 200)
          expect(body.items.length).toBeLessThanOrEqual(2)
          seen.push(...body.items.map((i: any) => i.title))
          if (cursor === undefined) {
            expectProblemCode(
              yield* f.call("GET", `/v2/news?source=${other}&limit=2&cursor=${body.next_cursor}`, { key: k.reader }),
              400,
              "INVALID_CURSOR"
            )
          }
          cursor = body.next_cursor
        } while (cursor !== undefined)
        expect(seen).toEqual(["day 5", "day 4", "day 3", "day 2", "day 1"])
        expectProblemCode(yield* f.call("GET", "/v2/news?lane=opinion", { key: k.reader }), 400, "INVALID_PARAMETER")
      }))

    it.effect("the content gate: an sfw credential is not shown links to nsfw works nor an nsfw work's news", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const k = yield* keys(f)
        const source = yield* newSource("site_a")
        const sfw = yield* takeWork()
        const nsfw = yield* takeWork(true)
        const item = expectStatus(
          yield* post(k.botNsfw, { source, title: "t", summary: "s", source_url: newUrl(), work_ids: [nsfw, sfw] }),
          201
        )
        expect(item.work_ids).toEqual([nsfw, sfw])
        const one = (key: string) =>
          Effect.map(f.call("GET", `/v2/news/${item.id}`, { key }), (r) => expectStatus(r, 200))
        expect((yield* one(k.reader)).work_ids).toEqual([sfw])
        expect((yield* one(k.readerNsfw)).work_ids).toEqual([nsfw, sfw])
        const listed = expectStatus(yield* f.call("GET", `/v2/news?source=${source}`, { key: k.reader }), 200)
        expect(listed.items.map((i: any) => i.work_ids)).toEqual([[sfw]])
        // The nsfw work's news: 404 for an sfw credential, listed for an nsfw one.
        expectProblemCode(yield* f.call("GET", `/v2/catalog/works/${nsfw}/news`, { key: k.reader }), 404, "NOT_FOUND")
        const ofNsfw = expectStatus(yield* f.call("GET", `/v2/catalog/works/${nsfw}/news`, { key: k.readerNsfw }), 200)
        expect(ofNsfw.items.map((i: any) => i.id)).toEqual([item.id])
        expect(expectStatus(yield* f.call("GET", `/v2/news?work_id=${nsfw}`, { key: k.reader }), 200).items).toEqual([])
        // The sfw work's news shows the item, without the nsfw link.
        const ofSfw = expectStatus(yield* f.call("GET", `/v2/catalog/works/${sfw}/news`, { key: k.reader }), 200)
        expect(ofSfw.items.map((i: any) => i.work_ids)).toEqual([[sfw]])
      }))

    it.effect("a work's news: an unknown work is 404, a merged-away one 404 ENTITY_MERGED naming the survivor", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const k = yield* keys(f)
        expectProblemCode(
          yield* f.call("GET", "/v2/catalog/works/99999999999/news", { key: k.reader }),
          404,
          "NOT_FOUND"
        )
        const loser = yield* takeWork()
        const survivor = yield* takeWork()
        yield* (yield* Merges).merge("work", loser, survivor)
        const merged = expectProblemCode(
          yield* f.call("GET", `/v2/catalog/works/${loser}/news`, { key: k.reader }),
          404,
          "ENTITY_MERGED"
        )
        expect(merged.current_id).toBe(survivor)
      }))

    it.effect("a key without news:write is 403; the news quota is the site's (docs/writing.md, \"Limits\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const k = yield* keys(f)
        const source = yield* newSource("site_a")
        const readOnly = yield* f.makeKey("site_a", ["catalog:read"], null)
        expectProblemCode(
          yield* post(readOnly, { source, title: "t", summary: "s", source_url: newUrl() }),
          403,
          "SCOPE_REQUIRED"
        )
        const sql = yield* SqlClient.SqlClient
        const before = yield* sql<{ used: number }>`
          SELECT coalesce(sum(used), 0)::int AS used FROM catalog_quota_usage WHERE site = 'site_a' AND kind = 'news'`
        expectStatus(yield* post(k.bot, { source, title: "t", summary: "s", source_url: newUrl() }), 201)
        const after = yield* sql<{ used: number }>`
          SELECT coalesce(sum(used), 0)::int AS used FROM catalog_quota_usage WHERE site = 'site_a' AND kind = 'news'`
        expect(after[0]!.used).toBe(before[0]!.used + 1)
      }))
  })
})
