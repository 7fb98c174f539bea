/**
 * Credit names over a seeded catalog: CreditName (schema/Catalog/Credit.ts: detail face, includes),
 * NameCredit lists, and these sections of docs/api-contract.md:
 * "Records and lists" and "Cursors and pages" (includes, batch lane, cursors),
 * "Errors: catalog problem documents" (merged names, problems),
 * "Credentials, scopes and the content limit" (content gate) and
 * "Caching, ETags and freshness" (ETag).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { CreditNameId } from "../../schema/Catalog/Common.js"
import { Catalog, one, problem, raw, SeededCatalogLive, walk } from "../support/Catalog.js"
import { catalogClient, fresh, walkPages } from "../support/Clients.js"
import { expectProblem } from "../support/Problems.js"

const INCLUDES = ["aliases", "intros", "links", "refs", "photo", "siblings"]
const BASIC = ["display_name", "id", "lang", "latin", "localized", "object", "person_id"]

/**
 * A new credit name credited only on an nsfw work (what only nsfw works contain:
 * docs/api-contract.md, "Credentials, scopes and the content limit").
 */
const nsfwOnlyName = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const work = one(yield* sql<{ id: string }>`SELECT id::text AS id FROM works WHERE live AND nsfw ORDER BY id LIMIT 1`)
  const name = one(
    yield* sql<{ id: string }>`INSERT INTO credit_names (display_name, lang)
    VALUES ('Hidden Name', 'en') RETURNING id::text AS id`
  )
  yield* sql`INSERT INTO credits (work_id, credit_name_id, role_key) VALUES (${work.id}, ${name.id}, 'scenario')`
  return { name: name.id, work: work.id }
})

describe("credit names (schema/Catalog/Credit.ts)", () => {
  it.layer(SeededCatalogLive(), { timeout: "180 seconds" })((it) => {
    it.effect("the list visits every visible name once; nsfw-only names are sfw-hidden (docs/api-contract.md, \"Cursors and pages\", \"Credentials, scopes and the content limit\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const hidden = yield* nsfwOnlyName
        const nsfw = yield* walk("/v2/catalog/credit-names?limit=100", "nsfw")
        const ids = nsfw.map((n) => n.id)
        const live = yield* sql<
          { id: string }
        >`SELECT id::text AS id FROM credit_names WHERE live ORDER BY credit_names.id`
        expect(ids).toEqual(live.map((r) => r.id))
        for (const item of nsfw) expect(Object.keys(item).sort()).toEqual(BASIC)
        const sfwClient = yield* catalogClient("sfw")
        const sfw = yield* walkPages((cursor) =>
          sfwClient.creditNames.listCreditNames({ query: { limit: 100, ...(cursor === undefined ? {} : { cursor }) } })
        )
        expect(sfw.map((n) => n.id)).not.toContain(hidden.name)
        // Exactly the names with a credit on a live nsfw work and none on a live sfw work are hidden.
        const nsfwOnly = yield* sql<{ id: string }>`
          SELECT cn.id::text AS id FROM credit_names cn WHERE cn.live
            AND EXISTS (SELECT 1 FROM credits c JOIN works w ON w.id = c.work_id AND w.live AND w.nsfw
              WHERE c.credit_name_id = cn.id)
            AND NOT EXISTS (SELECT 1 FROM credits c JOIN works w ON w.id = c.work_id AND w.live AND NOT w.nsfw
              WHERE c.credit_name_id = cn.id)`
        expect(sfw.length).toBe(live.length - nsfwOnly.length)
        yield* problem(`/v2/catalog/credit-names/${hidden.name}`, "NOT_FOUND", "sfw")
        yield* problem(`/v2/catalog/credit-names/${hidden.name}/credits`, "NOT_FOUND", "sfw")
        const nsfwClient = yield* catalogClient("nsfw")
        const shown = yield* nsfwClient.creditNames.getCreditName({
          params: { id: CreditNameId.make(hidden.name) },
          query: {}
        })
        expect(fresh(shown).id).toBe(hidden.name)
        const batch = yield* sfwClient.creditNames.listCreditNames({ query: { ids: ["1", hidden.name] } })
        expect(batch.missing).toEqual([hidden.name])
      }))

    it.effect("the detail face adds the person's birth date and gender only when recorded and public (schema/Catalog/Credit.ts)", () =>
      Effect.gen(function*() {
        const c = yield* Catalog
        const sql = yield* SqlClient.SqlClient
        const linked = yield* sql<
          { id: string; person: string; y: number | null; m: number | null; d: number | null; g: string | null }
        >`
          SELECT cn.id::text AS id, p.id::text AS person, p.birth_year AS y, p.birth_month AS m, p.birth_day AS d,
            p.gender AS g
          FROM credit_names cn JOIN persons p ON p.id = cn.person_id AND p.live AND p.is_public
          WHERE cn.live ORDER BY cn.id LIMIT 40`
        expect(linked.some((r) => r.y !== null && r.m === null)).toBe(true)
        const client = yield* catalogClient()
        for (const row of linked) {
          const name = fresh(
            yield* client.creditNames.getCreditName({ params: { id: CreditNameId.make(row.id) }, query: {} })
          )
          const expected: Record<string, unknown> = { person_id: row.person }
          if (row.y !== null) expected.birth_year = row.y
          if (row.m !== null) expected.birth_month = row.m
          if (row.d !== null) expected.birth_day = row.d
          if (row.g !== null) expected.gender = row.g
          const face = Object.fromEntries(
            Object.entries(name).filter(([k]) =>
              ["person_id", "birth_year", "birth_month", "birth_day", "gender"].includes(k)
            )
          )
          expect(face).toEqual(expected)
        }
        // A name whose person link is not public: no person_id, no person fields, no siblings.
        const hidden = one(
          yield* sql<{ id: string }>`
          SELECT cn.id::text AS id FROM credit_names cn JOIN persons p ON p.id = cn.person_id AND NOT p.is_public
          WHERE cn.live ORDER BY cn.id LIMIT 1`
        )
        const res = yield* c.get(`/v2/catalog/credit-names/${hidden.id}?include=siblings`)
        expect(res.body.person_id).toBeNull()
        for (const k of ["birth_year", "birth_month", "birth_day", "gender"]) expect(res.body).not.toHaveProperty(k)
        expect(res.body.siblings).toEqual([])
      }))

    it.effect("includes on the detail and list lanes; siblings are the person's other public names (schema/Catalog/Credit.ts)", () =>
      Effect.gen(function*() {
        const c = yield* Catalog
        const sql = yield* SqlClient.SqlClient
        const family = one(
          yield* sql<{ person: string; ids: Array<string> }>`
          SELECT cn.person_id::text AS person, array_agg(cn.id::text ORDER BY cn.id) AS ids
          FROM credit_names cn JOIN persons p ON p.id = cn.person_id AND p.live AND p.is_public
          WHERE cn.live GROUP BY cn.person_id HAVING count(*) >= 2 ORDER BY cn.person_id LIMIT 1`
        )
        const [first, ...others] = family.ids
        const res = yield* c.get(`/v2/catalog/credit-names/${first}?include=${INCLUDES.join(",")}`)
        expect(res.status).toBe(200)
        for (const token of ["aliases", "intros", "links", "refs", "siblings"]) {
          expect(Array.isArray(res.body[token]), token).toBe(true)
        }
        expect(res.body.siblings.map((s: any) => s.id)).toEqual(others)
        for (const s of res.body.siblings) {
          expect(Object.keys(s).sort()).toEqual(BASIC)
          expect(s.person_id).toBe(family.person)
        }
        const photo = one(
          yield* sql<{ id: string; hash: string }>`SELECT e.entity_id::text AS id, e.image_hash AS hash
          FROM entity_images e JOIN credit_names cn ON cn.id = e.entity_id AND cn.live
          WHERE e.entity_type = 'credit_name' AND e.slot = 'photo' ORDER BY e.entity_id LIMIT 1`
        )
        const withPhoto = yield* (yield* catalogClient()).creditNames.getCreditName({
          params: { id: CreditNameId.make(photo.id) },
          query: { include: ["photo"] }
        })
        expect(fresh(withPhoto).photo?.hash).toBe(photo.hash)
        const noPhoto = yield* c.get(`/v2/catalog/credit-names/${first}?include=aliases`)
        expect(noPhoto.body).not.toHaveProperty("photo")
        expect(noPhoto.body).not.toHaveProperty("siblings")
        // The same includes on a list page: list entries never carry the detail-face fields.
        const page = yield* c.get(`/v2/catalog/credit-names?limit=50&include=${INCLUDES.join(",")}`)
        for (const item of page.body.items) {
          for (const k of ["birth_year", "birth_month", "birth_day", "gender"]) expect(item).not.toHaveProperty(k)
          expect(Array.isArray(item.refs)).toBe(true)
          expect(Array.isArray(item.siblings)).toBe(true)
        }
        const intro = one(
          yield* sql<{ id: string; value: string }>`SELECT entity_id::text AS id, value FROM entity_intros
          WHERE entity_type = 'credit_name' AND entity_id <= 50 ORDER BY entity_id LIMIT 1`
        )
        expect(page.body.items.find((i: any) => i.id === intro.id).intros[0].value).toBe(intro.value)
      }))

    it.effect("unknown include, the batch lane, merged names (docs/api-contract.md, \"Records and lists\", \"Errors: catalog problem documents\")", () =>
      Effect.gen(function*() {
        const c = yield* Catalog
        const sql = yield* SqlClient.SqlClient
        const bad = yield* problem("/v2/catalog/credit-names/1?include=photo,portrait", "UNKNOWN_INCLUDE")
        expect(bad.errors[0]).toMatchObject({
          parameter: "include",
          reason: "UNKNOWN_VALUE",
          params: { allowed: INCLUDES }
        })
        yield* problem("/v2/catalog/credit-names?include=works", "UNKNOWN_INCLUDE")
        const merged = one(
          yield* sql<{ id: string; current: string }>`SELECT from_id::text AS id,
          current_id::text AS current FROM catalog_redirects WHERE target_object = 'credit_name' ORDER BY from_id LIMIT 1`
        )
        for (const path of [`/v2/catalog/credit-names/${merged.id}`, `/v2/catalog/credit-names/${merged.id}/credits`]) {
          const res = yield* raw(path)
          const link = res.headers.get("link")
          const body = yield* Effect.promise(() => expectProblem(res, "ENTITY_MERGED", path))
          expect(body).toMatchObject({ object: "credit_name", current_id: merged.current })
          expect(link).toMatch(new RegExp(`/v2/catalog/credit-names/${merged.current}>; rel="canonical"$`))
        }
        const batch = yield* c.get(`/v2/catalog/credit-names?ids=3,${merged.id},1,424242,3&include=refs`)
        expect(batch.body.items.map((i: any) => i.id)).toEqual(["3", "1"])
        expect(batch.body.missing).toEqual([merged.id, "424242"])
        expect(batch.body).not.toHaveProperty("next_cursor")
        expect(Array.isArray(batch.body.items[0].refs)).toBe(true)
        yield* problem("/v2/catalog/credit-names?limit=101", "LIMIT_TOO_LARGE")
        yield* problem("/v2/catalog/credit-names/99999999999999999999", "NOT_FOUND")
      }))

    it.effect("NameCredit list: every credit on a visible work, oldest release first, sfw without nsfw works", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        // A name with credits on both sfw and nsfw works, and more credits than one page holds.
        const name = one(
          yield* sql<{ id: string; total: number; sfw: number }>`
          SELECT c.credit_name_id::text AS id, count(*)::int AS total, count(*) FILTER (WHERE NOT w.nsfw)::int AS sfw
          FROM credits c JOIN works w ON w.id = c.work_id AND w.live
          JOIN credit_names cn ON cn.id = c.credit_name_id AND cn.live
          GROUP BY c.credit_name_id HAVING count(*) FILTER (WHERE w.nsfw) > 0 AND count(*) FILTER (WHERE NOT w.nsfw) > 10
          ORDER BY count(*) DESC LIMIT 1`
        )
        const all = yield* walk(`/v2/catalog/credit-names/${name.id}/credits?limit=10`, "nsfw")
        expect(all).toHaveLength(name.total)
        const sfw = yield* walk(`/v2/catalog/credit-names/${name.id}/credits?limit=10`, "sfw")
        expect(sfw).toHaveLength(name.sfw)
        expect(sfw.every((x) => x.work.content_rating === "sfw")).toBe(true)
        const dates = all.map((x) => x.work.released === null ? "9999" : x.work.released)
        for (let i = 1; i < dates.length; i++) expect(dates[i - 1].slice(0, 4) <= dates[i].slice(0, 4)).toBe(true)
        const roles = yield* sql<{ role_key: string; role_name: string }>`SELECT role_key, role_name FROM credit_roles`
        const roleName = new Map(roles.map((r) => [r.role_key, r.role_name]))
        for (const credit of all) {
          expect(credit.object).toBe("name_credit")
          expect(credit.role_name).toBe(roleName.get(credit.role_key))
          expect(credit.character_id === null || /^[0-9]+$/.test(credit.character_id)).toBe(true)
          expect(typeof credit.note).toBe("string")
          expect(credit.work.object).toBe("work")
          if (credit.role_key === "voice") expect(credit.character_id).not.toBeNull()
        }
      }))

    it.effect("the detail read sends a strong ETag and answers If-None-Match with 304 (docs/api-contract.md, \"Caching, ETags and freshness\")", () =>
      Effect.gen(function*() {
        const path = "/v2/catalog/credit-names/2?include=siblings"
        const first = yield* raw(path)
        const etag = first.headers.get("etag")!
        expect(etag).toMatch(/^"[^"]+"$/)
        const again = yield* raw(path, "nsfw", { "if-none-match": `"other", ${etag}` })
        expect(again.status).toBe(304)
        const changed = yield* raw("/v2/catalog/credit-names/2", "nsfw", { "if-none-match": etag })
        expect(changed.status).toBe(200)
      }))
  })
})
