/**
 * Cursors survive the move from Effect 3 (docs/api-contract.md, "Cursors and pages": a cursor is
 * passed back unchanged, and only a change of `SHIORI_SECRET` invalidates it). A client that holds a
 * `next_cursor` from before the upgrade keeps paging where it was; an altered cursor is still
 * `INVALID_CURSOR`.
 *
 * The fixture, `test/fixtures/effect3-cursors.json`, holds real cursors of the Effect 3 build (its
 * commit is the fixture's `old_commit`), with the request that produced each and the ids of both
 * pages the old build answered. It was made by `scripts/effect3-cursors.ts`
 * (its header has the details); to regenerate it, from this checkout's root:
 *
 *   (cd /work/old && npm run -s build)            # the Effect 3 checkout, built
 *   npx tsx scripts/effect3-cursors.ts /work/old
 *
 * The script seeds the old build's database with its own seeder, for the fixture's works count, seed
 * and reference `now` (every seeded timestamp is placed relative to `now`, and `sort=updated`
 * cursors carry one), and serves it with the fixture's secret; this test seeds the same catalog with
 * the current seeder and serves it with the same secret.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import * as Fs from "node:fs"
import { ApiKeys } from "../../src/catalog/auth/ApiKeys.js"
import { seedCatalog } from "../../src/demo/Seed.js"
import { Catalog, type CatalogFixture, problem } from "../support/Catalog.js"
import { serverLayerOptions, testConfig, TestServers, TestServersLive } from "../support/TestServers.js"

interface CursorCase {
  /** The request (without `cursor`) the old build answered with `cursor` as its `next_cursor`. */
  readonly url: string
  readonly first_page_ids: ReadonlyArray<string>
  readonly cursor: string
  /** The ids of the page the old build answered for `url` + `&cursor=`. */
  readonly next_page_ids: ReadonlyArray<string>
}

interface Effect3Cursors {
  readonly old_commit: string
  readonly shiori_secret: string
  readonly catalog: { readonly works: number; readonly seed: number; readonly now: string }
  readonly content_limit: "sfw" | "nsfw"
  readonly cursors: ReadonlyArray<CursorCase>
}

const fixture = JSON.parse(
  Fs.readFileSync(new URL("../fixtures/effect3-cursors.json", import.meta.url), "utf8")
) as Effect3Cursors

/** Item identity as the fixture records it: the id, and on the change feed the entity type too. */
const idsOf = (body: { readonly items: ReadonlyArray<{ readonly id: string; readonly target_object?: string }> }) =>
  body.items.map((item) => item.target_object === undefined ? item.id : `${item.target_object}:${item.id}`)

/**
 * One character of the payload (not of the mac: the mac's last base64url character carries only two
 * of its six bits, so some changes there decode to the same 16 bytes) replaced by another.
 */
const altered = (cursor: string) => {
  const at = Math.floor(cursor.indexOf(".") / 2)
  const replacement = cursor[at] === "A" ? "B" : "A"
  return cursor.slice(0, at) + replacement + cursor.slice(at + 1)
}

/** The real servers with the fixture's secret, over the fixture's catalog, and one API key of its content limit. */
const FixtureCatalogLive = Layer.effect(
  Catalog,
  Effect.gen(function*() {
    const { catalog } = yield* TestServers
    const { now, seed, works } = fixture.catalog
    const seeded = yield* seedCatalog({ works, seed, now: new Date(now), workers: 0 }).pipe(Effect.orDie)
    if (seeded.status !== "seeded") return yield* Effect.die(`catalog not seeded: ${seeded.reason}`)
    const keys = yield* ApiKeys
    const created = yield* keys.create({
      site: "test_site",
      scopes: ["catalog:read"],
      contentLimit: fixture.content_limit,
      userId: null
    }).pipe(Effect.orDie)
    const key = Redacted.value(created.key)
    const get: CatalogFixture["get"] = (path) =>
      Effect.promise(async () => {
        const res = await fetch(`${catalog}${path}`, { headers: { authorization: `Bearer ${key}` } })
        const text = await res.text()
        return { status: res.status, headers: res.headers, body: text === "" ? null : JSON.parse(text) }
      })
    return { base: catalog, sfwKey: key, nsfwKey: key, get }
  })
).pipe(
  Layer.provideMerge(ApiKeys.layer),
  Layer.provideMerge(TestServersLive),
  Layer.provide(testConfig({ SHIORI_SECRET: fixture.shiori_secret }))
)

describe("wire compatibility with the Effect 3 build: cursors", () => {
  it("the fixture holds the lists the migration must keep paging", () => {
    const urls = fixture.cursors.map((c) => c.url)
    expect(urls).toEqual(expect.arrayContaining([
      "/v2/catalog/works?limit=2",
      "/v2/catalog/works?limit=2&sort=updated",
      "/v2/catalog/changes?limit=2"
    ]))
    expect(urls.some((u) => u.startsWith("/v2/catalog/releases"))).toBe(true)
    expect(urls.some((u) => u.includes("/characters"))).toBe(true)
    for (const c of fixture.cursors) {
      expect(c.cursor, c.url).toMatch(/^cur_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/)
      expect(c.next_page_ids.length, c.url).toBeGreaterThan(0)
    }
    expect(fixture.shiori_secret.length).toBeGreaterThanOrEqual(32)
  })

  it.layer(FixtureCatalogLive, serverLayerOptions("240 seconds"))((it) => {
    for (const c of fixture.cursors) {
      it.effect(`an Effect 3 cursor of ${c.url} is accepted and answers the same next page`, () =>
        Effect.gen(function*() {
          const { get } = yield* Catalog
          const url = `${c.url}&cursor=${c.cursor}`
          const res = yield* get(url)
          expect(res.status, `${url}: ${JSON.stringify(res.body)}`).toBe(200)
          expect(idsOf(res.body), url).toEqual(c.next_page_ids)
        }))

      it.effect(`${c.url} answers the same first page and issues the same cursor as Effect 3`, () =>
        Effect.gen(function*() {
          const { get } = yield* Catalog
          const res = yield* get(c.url)
          expect(res.status, `${c.url}: ${JSON.stringify(res.body)}`).toBe(200)
          expect(idsOf(res.body), c.url).toEqual(c.first_page_ids)
          expect(res.body.next_cursor, c.url).toBe(c.cursor)
        }))

      it.effect(`an Effect 3 cursor of ${c.url} altered by one character is INVALID_CURSOR`, () =>
        Effect.gen(function*() {
          const forged = altered(c.cursor)
          expect(forged).not.toBe(c.cursor)
          expect(forged.length).toBe(c.cursor.length)
          const body = yield* problem(`${c.url}&cursor=${forged}`, "INVALID_CURSOR", "nsfw")
          expect(body.errors).toEqual([expect.objectContaining({ parameter: "cursor" })])
        }))
    }
  })
})
