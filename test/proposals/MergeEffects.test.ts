/**
 * What a merged edit proposal does to the rest of the catalog, through real HTTP (docs/writing.md,
 * "Edit proposals" and "Field keys"): the title search finds a work by the names just merged (CJK
 * substrings too) and no longer by the ones replaced; the tag facets of a search and the tags' work
 * counts follow a tag change; the change feed carries the entity's row; cached reads, in the
 * merging process and in another one, show the merged value; suppressed roster and credit rows
 * vanish from the reads and come back; a merged cover leads the work's covers; and every other
 * entity type reads back a merged field through its own route, its change moved forward.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { DatabaseUrl } from "../../src/platform/Database.js"
import { startBuiltCatalog } from "../support/BuiltServer.js"
import { ClaimsFixture, ClaimsFixtureLive, type ClaimsFixtureShape } from "../support/Claims.js"
import { eventually } from "../support/Eventually.js"
import { expectStatus, proposalKeys, proposeAndMerge } from "../support/Proposals.js"
import { serverLayerOptions } from "../support/TestServers.js"

type Keys = Effect.Success<ReturnType<typeof proposalKeys>>

let counter = 0
/** A word no seeded name holds (lower-case ASCII letters and digits). */
const uniqueWord = (prefix: string) => `${prefix}${Date.now().toString(36)}${(counter++).toString(36)}`

/** The ten heavenly stems: a CJK spelling of a number, so that CJK names are unique too. */
const stems = "甲乙丙丁戊己庚辛壬癸"
const uniqueCjk = () => [...`${Date.now() % 1e9}${counter++}`].map((d) => stems[Number(d)]).join("")

/** GET `path` as `key`, expecting 200; answers the body. */
const read = (f: ClaimsFixtureShape, key: string, path: string) =>
  Effect.map(f.call("GET", path, { key }), (res) => expectStatus(res, 200))

/** The ids of the works `GET /v2/catalog/works?q=` finds. */
const searchIds = (f: ClaimsFixtureShape, key: string, q: string) =>
  Effect.map(
    read(f, key, `/v2/catalog/works?q=${encodeURIComponent(q)}&limit=100`),
    (body) => body.items.map((w: any) => w.id) as Array<string>
  )

/** Merges `patch` on `entity` as the fixture's site user, decided by its moderator. */
const merge = (f: ClaimsFixtureShape, keys: Keys, type: string, id: string, patch: Record<string, unknown>) =>
  Effect.asVoid(proposeAndMerge(f, keys, { type, id }, patch))

/**
 * Pages the change feed from `cursor` (from the start when absent) until a page has no `next_cursor`
 * (docs/change-feed.md, "Cursors"): answers the cursor to poll with and every row seen, by
 * `<target_object>/<id>`.
 */
const feedToEnd = (f: ClaimsFixtureShape, key: string, cursor?: string) =>
  Effect.gen(function*() {
    const rows = new Map<string, any>()
    let at = cursor
    for (let page = 0; page < 1000; page++) {
      const body = yield* read(f, key, `/v2/catalog/changes?limit=100${at === undefined ? "" : `&cursor=${at}`}`)
      for (const row of body.items) rows.set(`${row.target_object}/${row.id}`, row)
      if (body.next_cursor === undefined) return { cursor: at!, rows }
      at = body.next_cursor
    }
    throw new Error("the change feed did not end")
  })

/** Tag id -> count of a `tag_id` facet. */
const tagCounts = (body: any): Record<string, number> =>
  Object.fromEntries(body.facets.tag_id.map((v: any) => [v.value, v.count]))

/** The identities of a work's credits, over every role group. */
const creditIdentities = (groups: ReadonlyArray<any>): Array<string> =>
  groups.flatMap((group) => group.credits.map((credit: any) => credit.identity))

/** The read collection of each non-work entity type, and the field a test merges on it. */
const others = [
  { type: "catalog.release", object: "release", collection: "releases", field: "display_name" },
  { type: "catalog.character", object: "character", collection: "characters", field: "display_name" },
  { type: "catalog.credit_name", object: "credit_name", collection: "credit-names", field: "display_name" },
  { type: "catalog.company", object: "company", collection: "companies", field: "display_name" },
  { type: "catalog.tag", object: "tag", collection: "tags", field: "description" },
  { type: "catalog.engine", object: "engine", collection: "engines", field: "description" }
] as const

describe("what a merge does to the rest of the catalog (docs/writing.md, \"Edit proposals\")", () => {
  it.layer(ClaimsFixtureLive({ works: 20 }), serverLayerOptions("240 seconds"))((it) => {
    it.effect("the title search finds a work by a merged display_name, title or alias at once, and no longer by the name it replaced (docs/writing.md, \"Field keys\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const keys = yield* proposalKeys(f)
        const key = keys.site
        const work = f.works[1]!

        // display_name: the old name was only the display name, so the new one replaces it in the search.
        const oldName = uniqueWord("zqold")
        const newName = uniqueWord("zqnew")
        yield* merge(f, keys, "catalog.work", work, { "catalog.work.display_name": `Harbor Lights ${oldName}` })
        expect(yield* searchIds(f, key, oldName)).toEqual([work])
        yield* merge(f, keys, "catalog.work", work, { "catalog.work.display_name": `Harbor Lights ${newName}` })
        expect(yield* searchIds(f, key, newName)).toEqual([work])
        expect(yield* searchIds(f, key, oldName)).toEqual([])
        expect((yield* read(f, key, `/v2/catalog/works/${work}`)).display_name).toBe(`Harbor Lights ${newName}`)

        // titles: a substring of a Japanese title finds the work; a replaced title no longer does.
        const first = uniqueCjk()
        const second = uniqueCjk()
        const title = (value: string) => ({ lang: "ja", value, latin: null, is_main: true, is_official: true })
        yield* merge(f, keys, "catalog.work", work, { "catalog.work.titles": [title(`星降る丘の${first}物語`)] })
        expect(yield* searchIds(f, key, `丘の${first}`)).toEqual([work])
        expect(yield* searchIds(f, key, first)).toEqual([work])
        yield* merge(f, keys, "catalog.work", work, { "catalog.work.titles": [title(`月影の${second}夜想曲`)] })
        expect(yield* searchIds(f, key, `${second}夜想`)).toEqual([work])
        expect(yield* searchIds(f, key, `丘の${first}`)).toEqual([])
        expect((yield* read(f, key, `/v2/catalog/works/${work}?include=titles`)).titles).toEqual([
          title(`月影の${second}夜想曲`)
        ])

        // aliases: found by each alias (Latin and CJK); an emptied alias list finds nothing by them.
        const latinAlias = uniqueWord("zqalias")
        const cjkAlias = uniqueCjk()
        yield* merge(f, keys, "catalog.work", work, {
          "catalog.work.aliases": [
            { lang: "en", value: `Lights ${latinAlias}`, alias_kind: "spelling_variant", is_machine: false },
            { lang: "ja", value: `灯台の${cjkAlias}`, alias_kind: "translation", is_machine: false }
          ]
        })
        expect(yield* searchIds(f, key, latinAlias)).toEqual([work])
        expect(yield* searchIds(f, key, `台の${cjkAlias}`)).toEqual([work])
        yield* merge(f, keys, "catalog.work", work, { "catalog.work.aliases": [] })
        expect(yield* searchIds(f, key, latinAlias)).toEqual([])
        expect(yield* searchIds(f, key, `台の${cjkAlias}`)).toEqual([])
        // The display name and the title merged before still find it.
        expect(yield* searchIds(f, key, newName)).toEqual([work])
        expect(yield* searchIds(f, key, `${second}夜想`)).toEqual([work])
      }))

    it.effect("a merged tag change moves the tag_id facet counts of a search holding the work and the tags' work_count (docs/writing.md, \"Field keys\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const keys = yield* proposalKeys(f)
        const key = keys.site
        const work = f.works[2]!
        const before = yield* read(f, key, `/v2/catalog/works/${work}?include=tags`)
        const removed = before.tags.find((t: any) => t.tag.category === "content")?.tag.id as string
        expect(removed).toBeDefined()
        const carried = new Set(before.tags.map((t: any) => t.tag.id))
        const catalogTags = yield* read(f, key, "/v2/catalog/tags?limit=100")
        const added = catalogTags.items.find((t: any) => t.category === "content" && !carried.has(t.id))?.id as string
        expect(added).toBeDefined()

        const search = `/v2/catalog/works?q=${encodeURIComponent(before.display_name)}&facets=tag_id&page=1&limit=100`
        const searched = yield* read(f, key, search)
        expect(searched.items.map((w: any) => w.id)).toContain(work)
        const countsBefore = tagCounts(searched)
        const tagBefore = {
          added: (yield* read(f, key, `/v2/catalog/tags/${added}`)).work_count as number,
          removed: (yield* read(f, key, `/v2/catalog/tags/${removed}`)).work_count as number
        }

        const snapshot = yield* read(f, keys.moderator, `/v2/moderation/snapshots/work/${work}`)
        const tags = [
          ...snapshot["catalog.work.tags"].filter((t: any) => t.tag.id !== removed),
          { tag: { id: added }, spoiler: "none", score: 1.5 }
        ]
        yield* merge(f, keys, "catalog.work", work, { "catalog.work.tags": tags })

        // The in-memory facet copy catches up before it counts (src/catalog/search/FacetIndex.ts).
        const expected: Record<string, number> = { ...countsBefore, [added]: (countsBefore[added] ?? 0) + 1 }
        expected[removed] = expected[removed]! - 1
        if (expected[removed] === 0) delete expected[removed]
        expect(tagCounts(yield* read(f, key, search))).toEqual(expected)
        expect((yield* read(f, key, `/v2/catalog/tags/${added}`)).work_count).toBe(tagBefore.added + 1)
        expect((yield* read(f, key, `/v2/catalog/tags/${removed}`)).work_count).toBe(tagBefore.removed - 1)
        const after = yield* read(f, key, `/v2/catalog/works/${work}?include=tags`)
        expect(after.tags.map((t: any) => t.tag.id).sort()).toEqual(tags.map((t) => t.tag.id).sort())
        // Filtering by the tags agrees.
        const byTag = (tag: string) =>
          Effect.map(read(f, key, `/v2/catalog/works?tag_id=${tag}&limit=100`), (b) => b.items.map((w: any) => w.id))
        expect(yield* byTag(added)).toContain(work)
        expect(yield* byTag(removed)).not.toContain(work)
      }))

    it.effect("a merge emits the work's change row: the next page of the change feed holds it, its updated_at moved (docs/change-feed.md)", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const keys = yield* proposalKeys(f)
        const key = keys.site
        const work = f.works[3]!
        const { cursor, rows } = yield* feedToEnd(f, key)
        const seen = rows.get(`work/${work}`)
        expect(seen).toBeDefined()
        const record = yield* read(f, key, `/v2/catalog/works/${work}`)

        yield* merge(f, keys, "catalog.work", work, { "catalog.work.length_minutes": 777 })
        const next = yield* read(f, key, `/v2/catalog/changes?limit=100&cursor=${cursor}`)
        const row = next.items.find((c: any) => c.target_object === "work" && c.id === work)
        expect(row, JSON.stringify(next.items)).toMatchObject({ object: "change", target_object: "work", id: work })
        expect(row.gone).toBeUndefined()
        expect(Date.parse(row.updated_at)).toBeGreaterThan(Date.parse(seen.updated_at))
        const merged = yield* read(f, key, `/v2/catalog/works/${work}`)
        expect(merged.length_minutes).toBe(777)
        expect(Date.parse(merged.updated_at)).toBeGreaterThan(Date.parse(record.updated_at))
      }))

    it.effect("a read cached before the merge shows the merged value right after it (docs/api-contract.md, \"Caching, ETags and freshness\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const sql = yield* SqlClient.SqlClient
        const keys = yield* proposalKeys(f)
        const key = keys.site
        const work = f.works[4]!
        const path = `/v2/catalog/works/${work}`
        const first = yield* f.call("GET", path, { key })
        expectStatus(first, 200)
        const second = yield* f.call("GET", path, { key })
        expect(second.headers.get("etag")).toBe(first.headers.get("etag"))
        // A change that skips the change feed is not seen: the answer comes from the cache.
        yield* sql`UPDATE works SET length_minutes = coalesce(length_minutes, 0) + 1 WHERE id = ${work}::bigint`
        const cached = yield* f.call("GET", path, { key })
        expect(cached.headers.get("etag")).toBe(first.headers.get("etag"))
        expect(cached.body.length_minutes).toBe(first.body.length_minutes)

        const name = uniqueWord("Cached away ")
        yield* merge(f, keys, "catalog.work", work, { "catalog.work.display_name": name })
        const after = yield* f.call("GET", path, { key })
        expectStatus(after, 200)
        expect(after.body.display_name).toBe(name)
        expect(after.body.length_minutes).toBe((first.body.length_minutes ?? 0) + 1)
        expect(after.headers.get("etag")).not.toBe(first.headers.get("etag"))
      }))

    it.effect("a merge through one process is seen by the cached reads of another (docs/api-contract.md, \"Caching, ETags and freshness\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const keys = yield* proposalKeys(f)
        const key = keys.site
        const b = yield* startBuiltCatalog(Redacted.value(yield* DatabaseUrl))
        const work = f.works[5]!
        const onB = (path: string) =>
          Effect.promise(async () => {
            const res = await fetch(`${b.base}${path}`, { headers: { authorization: `Bearer ${key}` } })
            expect(res.status).toBe(200)
            return await res.json() as any
          })
        const oldName = uniqueWord("zqbefore")
        const newName = uniqueWord("zqafter")
        yield* merge(f, keys, "catalog.work", work, { "catalog.work.display_name": `Two Rivers ${oldName}` })
        // Read twice on B (the second from its caches) once B sees the first merge.
        const search = (q: string) => Effect.map(onB(`/v2/catalog/works?q=${q}&limit=100`), (body) => body.items)
        const shown = yield* eventually(
          Effect.gen(function*() {
            const record = yield* onB(`/v2/catalog/works/${work}`)
            expect(record.display_name).toBe(`Two Rivers ${oldName}`)
            return record
          }),
          { timeoutMs: 10_000 }
        )
        expect(yield* onB(`/v2/catalog/works/${work}`)).toEqual(shown)
        expect((yield* search(oldName)).map((w: any) => w.id)).toEqual([work])
        expect(yield* search(newName)).toEqual([])

        // The merge on A (the test's own server).
        yield* merge(f, keys, "catalog.work", work, { "catalog.work.display_name": `Two Rivers ${newName}` })
        yield* eventually(
          Effect.gen(function*() {
            expect((yield* onB(`/v2/catalog/works/${work}`)).display_name).toBe(`Two Rivers ${newName}`)
            expect((yield* search(newName)).map((w: any) => w.id)).toEqual([work])
            expect(yield* search(oldName)).toEqual([])
          }),
          { timeoutMs: 10_000 }
        )
      }))

    it.effect("a suppressed roster row leaves the work's roster and the character's appearances, a suppressed credit the work's credits; [] brings them back (docs/writing.md, \"Field keys\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const keys = yield* proposalKeys(f)
        const key = keys.site
        // A work (not one the other tests edit) with a roster row and a credit.
        const candidates = yield* Effect.forEach(
          f.works.slice(7),
          (id) => Effect.map(read(f, key, `/v2/catalog/works/${id}?include=credits`), (body) => ({ id, body }))
        )
        const found = candidates.find(({ body }) => body.characters.length > 0 && body.credits.length > 0)
        expect(found).toBeDefined()
        const work = found!.id
        const before = found!.body
        const row = before.characters[0]
        const credit = creditIdentities(before.credits)[0]!
        const path = `/v2/catalog/works/${work}?include=credits`
        const appearances = (character: string) =>
          Effect.map(
            read(f, key, `/v2/catalog/characters/${character}/appearances?limit=100`),
            (body) => body.items.map((a: any) => a.identity) as Array<string | undefined>
          )
        const snapshot = () => read(f, keys.moderator, `/v2/moderation/snapshots/work/${work}`)
        expect(yield* appearances(row.id)).toContain(row.identity)
        const appearancesBefore = yield* appearances(row.id)

        // The roster row.
        yield* merge(f, keys, "catalog.work", work, { "catalog.work.roster_suppressed": [row.identity] })
        const hidden = yield* read(f, key, path)
        expect(hidden.characters).toEqual(before.characters.filter((c: any) => c.identity !== row.identity))
        expect(hidden.credits).toEqual(before.credits)
        const paged = yield* read(f, key, `/v2/catalog/works/${work}/characters?limit=100`)
        expect(paged.items.map((c: any) => c.identity)).not.toContain(row.identity)
        expect(yield* appearances(row.id)).not.toContain(row.identity)
        expect((yield* snapshot())["catalog.work.roster_suppressed"]).toEqual([row.identity])

        yield* merge(f, keys, "catalog.work", work, { "catalog.work.roster_suppressed": [] })
        expect((yield* read(f, key, path)).characters).toEqual(before.characters)
        expect(yield* appearances(row.id)).toEqual(appearancesBefore)
        expect((yield* snapshot())["catalog.work.roster_suppressed"]).toEqual([])

        // The credit.
        yield* merge(f, keys, "catalog.work", work, { "catalog.work.credits_suppressed": [credit] })
        const uncredited = yield* read(f, key, path)
        expect(creditIdentities(uncredited.credits)).toEqual(
          creditIdentities(before.credits).filter((identity) => identity !== credit)
        )
        expect(uncredited.characters).toEqual(before.characters)
        const credits = yield* read(f, key, `/v2/catalog/works/${work}/credits?limit=100`)
        expect(creditIdentities(credits.items)).not.toContain(credit)
        expect((yield* snapshot())["catalog.work.credits_suppressed"]).toEqual([credit])

        yield* merge(f, keys, "catalog.work", work, { "catalog.work.credits_suppressed": [] })
        expect((yield* read(f, key, path)).credits).toEqual(before.credits)
        expect((yield* snapshot())["catalog.work.credits_suppressed"]).toEqual([])
      }))

    it.effect("merged aliases, intros, links and tags (integer and fractional scores) read back as written, in order (docs/writing.md, \"Field keys\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const keys = yield* proposalKeys(f)
        const key = keys.site
        const work = f.works[6]!
        const catalogTags = yield* read(f, key, "/v2/catalog/tags?limit=100")
        const [first, second, third] = catalogTags.items.filter((t: any) => t.category === "content")
        const aliases = [
          { lang: "ja", value: "二番目の名前", alias_kind: "translation", is_machine: false },
          { lang: "en", value: "A Second Name", alias_kind: "spelling_variant", is_machine: true }
        ]
        const intros = [
          { object: "intro", lang: "en", value: "Second intro, written first.", is_machine: false, source: "official" },
          { object: "intro", lang: "ja", value: "はじめに。", is_machine: true, source: "shiori" }
        ]
        const links = [
          { site: "steam", url: "https://store.example/app/1", label: "", lang: null },
          { site: "official", url: "https://official.example/", label: "Official site", lang: "ja" }
        ]
        const tags = [
          { tag: { id: first.id }, spoiler: "none", score: 3 },
          { tag: { id: second.id }, spoiler: "minor", score: 2.5 },
          { tag: { id: third.id }, spoiler: "major", score: 0.25 }
        ]
        yield* merge(f, keys, "catalog.work", work, {
          "catalog.work.aliases": aliases,
          "catalog.work.intros": intros,
          "catalog.work.links": links,
          "catalog.work.tags": tags
        })
        const after = yield* read(f, key, `/v2/catalog/works/${work}?include=intros,tags`)
        expect(after.aliases).toEqual(aliases)
        expect(after.intros).toEqual(intros)
        expect(after.links).toEqual(links)
        expect(after.tags.map((t: any) => ({ tag: { id: t.tag.id }, spoiler: t.spoiler, score: t.score }))).toEqual(
          tags
        )
        const snapshot = yield* read(f, keys.moderator, `/v2/moderation/snapshots/work/${work}`)
        expect(snapshot["catalog.work.aliases"]).toEqual(aliases)
        expect(snapshot["catalog.work.intros"]).toEqual(intros)
        expect(snapshot["catalog.work.links"]).toEqual(links)
        expect(snapshot["catalog.work.tags"]).toEqual(tags)
      }))

    it.effect("a merged cover of another work becomes the first of include=covers; the snapshot shows it (docs/writing.md, \"Field keys\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const keys = yield* proposalKeys(f)
        const key = keys.site
        const work = f.works[0]!
        const covers = (id: string) =>
          Effect.map(read(f, key, `/v2/catalog/works/${id}?include=covers`), (b) => b.covers as Array<any>)
        const own = new Set((yield* covers(work)).map((c) => c.hash))
        let hash: string | undefined
        let donor: string | undefined
        for (const id of f.works.slice(1)) {
          const theirs = (yield* covers(id)).find((c) => !own.has(c.hash))
          if (theirs !== undefined) {
            hash = theirs.hash
            donor = id
            break
          }
        }
        expect(hash).toBeDefined()
        const donorBefore = yield* covers(donor!)

        yield* merge(f, keys, "catalog.work", work, { "catalog.work.cover": hash })
        const after = yield* covers(work)
        expect(after[0].hash).toBe(hash)
        expect(after.slice(1).map((c) => c.hash).sort()).toEqual([...own].sort())
        const snapshot = yield* read(f, keys.moderator, `/v2/moderation/snapshots/work/${work}`)
        expect(snapshot["catalog.work.cover"]).toBe(hash)
        // The other work's covers are its own as before.
        expect(yield* covers(donor!)).toEqual(donorBefore)
      }))

    for (const other of others) {
      it.effect(`a merged ${other.type}.${other.field} reads back through GET /v2/catalog/${other.collection}/:id, its change moved forward (docs/writing.md, "Field keys")`, () =>
        Effect.gen(function*() {
          const f = yield* ClaimsFixture
          const keys = yield* proposalKeys(f)
          const key = keys.site
          const listed = yield* read(f, key, `/v2/catalog/${other.collection}?limit=1`)
          const id = listed.items[0].id as string
          const path = `/v2/catalog/${other.collection}/${id}`
          const before = yield* read(f, key, path)
          const { cursor, rows } = yield* feedToEnd(f, key)
          const seen = rows.get(`${other.object}/${id}`)
          expect(seen).toBeDefined()

          const value = `Merged ${other.object} ${uniqueWord("v")}`
          yield* merge(f, keys, other.type, id, { [`${other.type}.${other.field}`]: value })
          const after = yield* read(f, key, path)
          expect(after[other.field]).toBe(value)
          expect(after[other.field]).not.toBe(before[other.field])
          // Of these records only a release shows its `updated_at` (schema/Catalog/Release.ts).
          if (other.object === "release") {
            expect(Date.parse(after.updated_at)).toBeGreaterThan(Date.parse(before.updated_at))
          }
          const next = yield* read(f, key, `/v2/catalog/changes?limit=100&cursor=${cursor}`)
          const row = next.items.find((c: any) => c.target_object === other.object && c.id === id)
          expect(row, JSON.stringify(next.items)).toMatchObject({ target_object: other.object, id })
          expect(Date.parse(row.updated_at)).toBeGreaterThan(Date.parse(seen.updated_at))
          const snapshot = yield* read(f, keys.moderator, `/v2/moderation/snapshots/${other.object}/${id}`)
          expect(snapshot[`${other.type}.${other.field}`]).toBe(value)
        }))
    }
  })
})
