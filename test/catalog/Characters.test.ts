/**
 * Characters over a seeded catalog: the records of schema/Catalog/Character.ts and Appearance.ts
 * (view=full, detail-only includes), and these sections of docs/api-contract.md:
 * "Records and lists" and "Cursors and pages" (lists, batch lane),
 * "Errors: catalog problem documents" (merged ids, problems),
 * "Credentials, scopes and the content limit" (content gate) and
 * "Caching, ETags and freshness" (ETag).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { CharacterId } from "../../schema/Catalog/Common.js"
import { ApiKeys } from "../../src/catalog/auth/ApiKeys.js"
import { Catalog, SeededCatalogLive } from "../support/Catalog.js"
import { catalogClient, fresh, walkPages } from "../support/Clients.js"
import { expectProblem } from "../support/Problems.js"

const FULL_FIELDS = ["birthday", "blood_type", "gender", "height_cm", "weight_kg", "measurements", "instance_of_id"]
const INCLUDES = ["aliases", "intros", "refs", "traits", "image", "figure"]

/** A raw response, for problem documents (expectProblem reads the body itself). */
const raw = (path: string, key: "sfw" | "nsfw" | string = "nsfw", headers: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const c = yield* Catalog
    const token = key === "sfw" ? c.sfwKey : key === "nsfw" ? c.nsfwKey : key
    return yield* Effect.promise(() =>
      fetch(`${c.base}${path}`, { headers: { authorization: `Bearer ${token}`, ...headers } })
    )
  })

const problem = (path: string, code: Parameters<typeof expectProblem>[1], key: "sfw" | "nsfw" = "nsfw") =>
  Effect.flatMap(raw(path, key), (res) => Effect.promise(() => expectProblem(res, code, path)))

const one = <A>(rows: ReadonlyArray<A>) => {
  expect(rows.length).toBeGreaterThan(0)
  return rows[0]!
}

/**
 * Every page of a cursor list (docs/api-contract.md, "Cursors and pages": the end is the absence of
 * next_cursor).
 */
const walk = (path: string, key: "sfw" | "nsfw") =>
  Effect.gen(function*() {
    const c = yield* Catalog
    const items: Array<any> = []
    let cursor: string | undefined
    for (let page = 0; page < 100; page++) {
      const sep = path.includes("?") ? "&" : "?"
      const res = yield* c.get(`${path}${cursor === undefined ? "" : `${sep}cursor=${cursor}`}`, { key })
      expect(res.status).toBe(200)
      expect(res.body.object).toBe("list")
      items.push(...res.body.items)
      cursor = res.body.next_cursor
      if (cursor === undefined) return items
      expect(cursor).toMatch(/^cur_[A-Za-z0-9._~-]+$/)
      expect(cursor.length).toBeLessThanOrEqual(512)
    }
    throw new Error("too many pages")
  })

describe("characters (schema/Catalog/Character.ts)", () => {
  it.layer(SeededCatalogLive(), { timeout: "180 seconds" })((it) => {
    it.effect("the cursor list visits every visible character once, in id order (docs/api-contract.md, \"Cursors and pages\", \"Credentials, scopes and the content limit\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const characters = (key: "sfw" | "nsfw") =>
          Effect.flatMap(
            catalogClient(key),
            (client) =>
              walkPages((cursor) =>
                client.characters.listCharacters({ query: { limit: 100, ...(cursor === undefined ? {} : { cursor }) } })
              )
          )
        const all = yield* characters("nsfw")
        const ids = all.map((c) => c.id)
        expect(ids).toEqual([...ids].sort((a, b) => Number(a) - Number(b)))
        expect(new Set(ids).size).toBe(ids.length)
        const live = yield* sql<{ id: string; nsfw: boolean }>`SELECT id::text AS id, nsfw FROM characters WHERE live`
        expect(ids).toEqual(live.map((r) => r.id).sort((a, b) => Number(a) - Number(b)))
        // An sfw credential never sees a character that appears only in nsfw works.
        const sfw = yield* characters("sfw")
        const nsfwOnly = new Set(live.filter((r) => r.nsfw).map((r) => r.id))
        expect(nsfwOnly.size).toBeGreaterThan(0)
        expect(sfw.length).toBe(live.length - nsfwOnly.size)
        expect(sfw.some((c) => nsfwOnly.has(c.id))).toBe(false)
      }))

    it.effect("view=basic has the required fields only; view=full adds the seven profile fields (schema/Catalog/Character.ts)", () =>
      Effect.gen(function*() {
        const c = yield* Catalog
        const basic = yield* c.get("/v2/catalog/characters?limit=5")
        expect(basic.body.items).toHaveLength(5)
        for (const item of basic.body.items) {
          expect(Object.keys(item).sort()).toEqual(["display_name", "id", "lang", "latin", "localized", "object"])
          expect(item.object).toBe("character")
        }
        const full = yield* c.get("/v2/catalog/characters?limit=100&view=full")
        for (const item of full.body.items) {
          for (const field of FULL_FIELDS) expect(item, field).toHaveProperty(field)
          if (item.birthday !== null) expect(item.birthday).toMatch(/^[0-1][0-9]-[0-3][0-9]$/)
          if (item.measurements !== null) {
            expect(Object.keys(item.measurements).sort()).toEqual(["bust_cm", "cup", "hips_cm", "waist_cm"])
          }
          for (const token of INCLUDES) expect(item).not.toHaveProperty(token)
        }
        expect(full.body.items.some((i: any) => i.measurements !== null)).toBe(true)
        const detail = yield* c.get(`/v2/catalog/characters/${basic.body.items[0].id}`)
        expect(detail.body).toEqual(basic.body.items[0])
      }))

    it.effect("includes on the detail face, each only when asked for; the image only when one exists (schema/Catalog/Character.ts)", () =>
      Effect.gen(function*() {
        const c = yield* Catalog
        const sql = yield* SqlClient.SqlClient
        const { id } = one(
          yield* sql<{ id: string }>`
            SELECT c.id::text AS id FROM characters c
            WHERE c.live AND NOT c.nsfw
              AND EXISTS (SELECT 1 FROM entity_images e WHERE e.entity_type = 'character' AND e.entity_id = c.id
                AND e.slot = 'image')
              AND EXISTS (SELECT 1 FROM character_traits t WHERE t.character_id = c.id)
              AND EXISTS (SELECT 1 FROM entity_refs r WHERE r.entity_type = 'character' AND r.entity_id = c.id)
            ORDER BY c.id LIMIT 1`
        )
        const res = yield* c.get(`/v2/catalog/characters/${id}?view=full&include=${INCLUDES.join(",")}`)
        expect(res.status).toBe(200)
        const body = res.body
        for (const token of ["aliases", "intros", "refs", "traits"]) expect(Array.isArray(body[token])).toBe(true)
        expect(body.image.url).toMatch(/^https?:\/\//)
        expect(body.image.hash).toMatch(/^[0-9a-f]{64}$/)
        const figure = yield* sql`SELECT 1 FROM entity_images WHERE entity_type = 'character' AND entity_id = ${id}
          AND slot = 'figure'`
        expect(body.figure !== undefined).toBe(figure.length > 0)
        const traits = yield* sql<
          { n: number }
        >`SELECT count(*)::int AS n FROM character_traits WHERE character_id = ${id}`
        expect(body.traits).toHaveLength(traits[0]!.n)
        for (const trait of body.traits) {
          expect(trait).toMatchObject({ object: "character_trait", id: expect.stringMatching(/^[0-9]+$/) })
          expect(["none", "minor", "major"]).toContain(trait.spoiler)
          expect(typeof trait.is_sexual).toBe("boolean")
          expect(typeof trait.is_lie).toBe("boolean")
          expect(trait.group === null || typeof trait.group === "string").toBe(true)
        }
        const refs = yield* sql<{ external_id: string }>`SELECT external_id FROM entity_refs
          WHERE entity_type = 'character' AND entity_id = ${id}`
        expect(body.refs.map((r: any) => r.external_id).sort()).toEqual(refs.map((r) => r.external_id).sort())
        // Only what was asked for.
        const some = yield* c.get(`/v2/catalog/characters/${id}?include=traits`)
        expect(some.body.traits).toEqual(body.traits)
        for (const token of ["aliases", "intros", "refs", "image", "figure", ...FULL_FIELDS]) {
          expect(some.body).not.toHaveProperty(token)
        }
      }))

    it.effect("sexual traits are nsfw content, never shown to an sfw credential (docs/api-contract.md, \"Credentials, scopes and the content limit\")", () =>
      Effect.gen(function*() {
        const c = yield* Catalog
        const sql = yield* SqlClient.SqlClient
        const { id } = one(
          yield* sql<{ id: string }>`
          SELECT c.id::text AS id FROM characters c WHERE c.live AND NOT c.nsfw ORDER BY c.id DESC LIMIT 1`
        )
        const { trait } = one(
          yield* sql<{ trait: string }>`
          SELECT id::text AS trait FROM traits WHERE is_sexual AND root_id IS NOT NULL ORDER BY id LIMIT 1`
        )
        yield* sql`INSERT INTO character_traits (character_id, trait_id) VALUES (${id}, ${trait}) ON CONFLICT DO NOTHING`
        const nsfw = yield* c.get(`/v2/catalog/characters/${id}?include=traits`, { key: "nsfw" })
        const sfw = yield* c.get(`/v2/catalog/characters/${id}?include=traits`, { key: "sfw" })
        expect(nsfw.body.traits.map((t: any) => t.id)).toContain(trait)
        expect(sfw.body.traits.map((t: any) => t.id)).not.toContain(trait)
        expect(sfw.body.traits.every((t: any) => t.is_sexual === false)).toBe(true)
      }))

    it.effect("an unknown include is 400 UNKNOWN_INCLUDE naming the allowed tokens (docs/api-contract.md, \"Records and lists\", \"Errors: catalog problem documents\")", () =>
      Effect.gen(function*() {
        const body = yield* problem("/v2/catalog/characters/1?include=traits,voices", "UNKNOWN_INCLUDE")
        expect(body.errors[0]).toMatchObject({
          parameter: "include",
          reason: "UNKNOWN_VALUE",
          params: { allowed: INCLUDES }
        })
        expect(body.errors).toHaveLength(1)
      }))

    it.effect("the ids= lane answers in request order and lists the rest in missing[] (docs/api-contract.md, \"Records and lists\")", () =>
      Effect.gen(function*() {
        const c = yield* Catalog
        const sql = yield* SqlClient.SqlClient
        const merged = one(
          yield* sql<{ id: string }>`SELECT from_id::text AS id FROM catalog_redirects
          WHERE target_object = 'character' ORDER BY from_id LIMIT 1`
        )
        const nsfwOnly = one(
          yield* sql<{ id: string }>`SELECT id::text AS id FROM characters WHERE live AND nsfw
          ORDER BY id LIMIT 1`
        )
        const visible = yield* sql<{ id: string }>`SELECT id::text AS id FROM characters WHERE live AND NOT nsfw
          ORDER BY id LIMIT 2`
        const [a, b] = [visible[1]!.id, visible[0]!.id]
        const ids = [a, merged.id, b, nsfwOnly.id, "99999999", "99999999999999999999", b]
        const sfw = yield* c.get(`/v2/catalog/characters?ids=${ids.join(",")}&view=full`, { key: "sfw" })
        expect(sfw.status).toBe(200)
        expect(sfw.body.items.map((i: any) => i.id)).toEqual([a, b])
        expect(sfw.body.items[0]).toHaveProperty("birthday")
        expect(sfw.body.missing).toEqual([merged.id, nsfwOnly.id, "99999999", "99999999999999999999"])
        expect(sfw.body).not.toHaveProperty("next_cursor")
        const nsfw = yield* (yield* catalogClient("nsfw")).characters.listCharacters({ query: { ids } })
        expect(nsfw.items.map((i) => i.id)).toEqual([a, b, nsfwOnly.id])
        expect(nsfw.missing).toEqual([merged.id, "99999999", "99999999999999999999"])
      }))

    it.effect("limit, batch size and cursor problems (docs/api-contract.md, \"Records and lists\", \"Cursors and pages\")", () =>
      Effect.gen(function*() {
        yield* problem("/v2/catalog/characters?limit=101", "LIMIT_TOO_LARGE")
        const tooMany = Array.from({ length: 101 }, (_, i) => String(i + 1)).join(",")
        yield* problem(`/v2/catalog/characters?ids=${tooMany}`, "TOO_MANY_IDS")
        yield* problem("/v2/catalog/characters?cursor=cur_forged.AAAAAAAAAAAAAAAAAAAAAA", "INVALID_CURSOR")
        const first = yield* (yield* catalogClient()).characters.listCharacters({ query: { limit: 2 } })
        const both = yield* problem(
          `/v2/catalog/characters?ids=1,2&cursor=${first.next_cursor}`,
          "INVALID_PARAMETER"
        )
        expect(both.errors[0]).toMatchObject({ parameter: "cursor", reason: "INCONSISTENT_WITH" })
        const bad = yield* problem("/v2/catalog/characters?limit=0&view=huge", "INVALID_PARAMETER")
        expect(bad.errors.map((e) => e.parameter).sort()).toEqual(["limit", "view"])
        const longId = yield* problem("/v2/catalog/characters/1234567890123456789012345", "INVALID_PARAMETER")
        expect(longId.errors[0]).toMatchObject({ parameter: "id" })
        yield* problem("/v2/catalog/characters/99999999999999999999", "NOT_FOUND")
      }))

    it.effect("a merged character is 404 ENTITY_MERGED with current_id and a canonical Link (docs/api-contract.md, \"Errors: catalog problem documents\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const merged = one(
          yield* sql<{ id: string; current: string }>`SELECT from_id::text AS id,
          current_id::text AS current FROM catalog_redirects WHERE target_object = 'character' ORDER BY from_id LIMIT 1`
        )
        for (const path of [`/v2/catalog/characters/${merged.id}`, `/v2/catalog/characters/${merged.id}/appearances`]) {
          const res = yield* raw(path)
          const link = res.headers.get("link")
          const body = yield* Effect.promise(() => expectProblem(res, "ENTITY_MERGED", path))
          expect(body).toMatchObject({ object: "character", current_id: merged.current })
          expect(link).toMatch(new RegExp(`/v2/catalog/characters/${merged.current}>; rel="canonical"$`))
        }
        const current = yield* (yield* catalogClient()).characters.getCharacter({
          params: { id: CharacterId.make(merged.current) },
          query: {}
        })
        expect(fresh(current).id).toBe(merged.current)
      }))

    it.effect("an nsfw-only character is 404 NOT_FOUND for sfw (detail and appearances), 200 for nsfw (docs/api-contract.md, \"Credentials, scopes and the content limit\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const { id } = one(
          yield* sql<{ id: string }>`SELECT id::text AS id FROM characters WHERE live AND nsfw
          ORDER BY id LIMIT 1`
        )
        yield* problem(`/v2/catalog/characters/${id}`, "NOT_FOUND", "sfw")
        yield* problem(`/v2/catalog/characters/${id}/appearances`, "NOT_FOUND", "sfw")
        const nsfw = yield* catalogClient("nsfw")
        const character = CharacterId.make(id)
        expect(fresh(yield* nsfw.characters.getCharacter({ params: { id: character }, query: {} })).id).toBe(id)
        const appearances = yield* nsfw.characters.listCharacterAppearances({ params: { id: character }, query: {} })
        expect(appearances.items.length).toBeGreaterThan(0)
        for (const a of appearances.items) expect(a.work.content_rating).toBe("nsfw")
      }))

    it.effect("appearances carry the work at view=basic, the roster row's identity and the voices (schema/Catalog/Appearance.ts)", () =>
      Effect.gen(function*() {
        const c = yield* Catalog
        const sql = yield* SqlClient.SqlClient
        // A character voiced in a work of its roster.
        const voiced = one(
          yield* sql<{ character: string; work: string }>`
          SELECT cr.character_id::text AS character, cr.work_id::text AS work FROM credits cr
          JOIN characters ch ON ch.id = cr.character_id AND ch.live AND NOT ch.nsfw
          JOIN works w ON w.id = cr.work_id AND w.live
          ORDER BY cr.character_id LIMIT 1`
        )
        const res = yield* c.get(`/v2/catalog/characters/${voiced.character}/appearances`)
        expect(res.status).toBe(200)
        const roster = yield* sql<{ work: string; identity: string; roster_role: string; spoiler: string }>`
          SELECT wc.work_id::text AS work, wc.identity, wc.roster_role, wc.spoiler FROM work_characters wc
          JOIN works w ON w.id = wc.work_id AND w.live WHERE wc.character_id = ${voiced.character}`
        expect(res.body.items).toHaveLength(roster.length)
        for (const a of res.body.items) {
          expect(a.object).toBe("appearance")
          expect(Object.keys(a.work).sort()).toEqual(
            [
              "content_rating",
              "display_name",
              "id",
              "latin",
              "length_minutes",
              "localized",
              "media",
              "object",
              "olang",
              "platforms",
              "popularity",
              "released",
              "updated_at"
            ]
          )
          const row = roster.find((r) => r.work === a.work.id)!
          expect(a).toMatchObject({ identity: row.identity, roster_role: row.roster_role, spoiler: row.spoiler })
          expect(Array.isArray(a.voices)).toBe(true)
        }
        const names = yield* sql<{ id: string }>`SELECT credit_name_id::text AS id FROM credits
          WHERE character_id = ${voiced.character} AND work_id = ${voiced.work} ORDER BY position`
        const inWork = res.body.items.find((a: any) => a.work.id === voiced.work)
        expect(inWork.voices.map((v: any) => v.id)).toEqual(names.map((n) => n.id))
        for (const v of inWork.voices) {
          expect(v).toMatchObject({ object: "credit_name", display_name: expect.any(String) })
        }
      }))

    it.effect("a work reached only through a voice credit has no identity, role unknown, spoiler none (schema/Catalog/Appearance.ts)", () =>
      Effect.gen(function*() {
        const c = yield* Catalog
        const sql = yield* SqlClient.SqlClient
        const character = one(
          yield* sql<{ id: string; work: string }>`
          SELECT wc.character_id::text AS id, min(wc.work_id)::text AS work FROM work_characters wc
          JOIN characters ch ON ch.id = wc.character_id AND ch.live AND NOT ch.nsfw
          GROUP BY wc.character_id ORDER BY wc.character_id DESC LIMIT 1 OFFSET 3`
        )
        const other = one(
          yield* sql<{ id: string }>`
          SELECT w.id::text AS id FROM works w WHERE w.live AND NOT w.nsfw AND NOT EXISTS
            (SELECT 1 FROM work_characters wc WHERE wc.work_id = w.id AND wc.character_id = ${character.id})
          ORDER BY w.id LIMIT 1`
        )
        const name = one(
          yield* sql<{ id: string }>`SELECT id::text AS id FROM credit_names WHERE live ORDER BY id
          LIMIT 1`
        )
        yield* sql`INSERT INTO credits (work_id, credit_name_id, role_key, character_id)
          VALUES (${other.id}, ${name.id}, 'voice', ${character.id})`
        const res = yield* c.get(`/v2/catalog/characters/${character.id}/appearances`)
        const voiceOnly = res.body.items.find((a: any) => a.work.id === other.id)
        expect(voiceOnly).toBeDefined()
        expect(voiceOnly).not.toHaveProperty("identity")
        expect(voiceOnly).toMatchObject({ roster_role: "unknown", spoiler: "none" })
        expect(voiceOnly.voices.map((v: any) => v.id)).toEqual([name.id])
        const rostered = res.body.items.find((a: any) => a.work.id === character.work)
        expect(rostered.identity).toEqual(expect.any(String))
      }))

    it.effect("appearances in nsfw works are dropped for an sfw credential (docs/api-contract.md, \"Credentials, scopes and the content limit\")", () =>
      Effect.gen(function*() {
        const c = yield* Catalog
        const sql = yield* SqlClient.SqlClient
        const character = one(
          yield* sql<{ id: string }>`
          SELECT wc.character_id::text AS id FROM work_characters wc
          JOIN characters ch ON ch.id = wc.character_id AND ch.live AND NOT ch.nsfw
          ORDER BY wc.character_id LIMIT 1 OFFSET 7`
        )
        const nsfwWork = one(
          yield* sql<{ id: string }>`SELECT id::text AS id FROM works WHERE live AND nsfw
          ORDER BY id LIMIT 1`
        )
        yield* sql`INSERT INTO work_characters (work_id, character_id, roster_role)
          VALUES (${nsfwWork.id}, ${character.id}, 'appears') ON CONFLICT DO NOTHING`
        const nsfw = yield* c.get(`/v2/catalog/characters/${character.id}/appearances`, { key: "nsfw" })
        const sfw = yield* c.get(`/v2/catalog/characters/${character.id}/appearances`, { key: "sfw" })
        expect(nsfw.body.items.map((a: any) => a.work.id)).toContain(nsfwWork.id)
        expect(sfw.body.items.map((a: any) => a.work.id)).not.toContain(nsfwWork.id)
        expect(sfw.body.items).toHaveLength(nsfw.body.items.length - 1)
      }))

    it.effect("appearances page by cursor; a cursor of another character is INVALID_CURSOR (docs/api-contract.md, \"Cursors and pages\")", () =>
      Effect.gen(function*() {
        const c = yield* Catalog
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ id: string; n: number }>`
          SELECT wc.character_id::text AS id, count(*)::int AS n FROM work_characters wc
          JOIN works w ON w.id = wc.work_id AND w.live JOIN characters ch ON ch.id = wc.character_id AND ch.live
          GROUP BY wc.character_id HAVING count(*) >= 2 ORDER BY count(*) DESC, wc.character_id LIMIT 2`
        expect(rows.length).toBe(2)
        const [a, b] = rows as [{ id: string; n: number }, { id: string; n: number }]
        const all = yield* walk(`/v2/catalog/characters/${a.id}/appearances?limit=1`, "nsfw")
        expect(all).toHaveLength(a.n)
        const whole = yield* c.get(`/v2/catalog/characters/${a.id}/appearances?limit=100`)
        expect(all).toEqual(whole.body.items)
        const keys = whole.body.items.map((x: any) => x.work.released ?? "9999")
        expect(keys).toEqual([...keys].sort())
        const first = yield* c.get(`/v2/catalog/characters/${a.id}/appearances?limit=1`)
        yield* problem(
          `/v2/catalog/characters/${b.id}/appearances?limit=1&cursor=${first.body.next_cursor}`,
          "INVALID_CURSOR"
        )
        yield* problem(`/v2/catalog/characters?cursor=${first.body.next_cursor}`, "INVALID_CURSOR")
      }))

    it.effect("the detail read sends a strong ETag and answers If-None-Match with 304 (docs/api-contract.md, \"Caching, ETags and freshness\")", () =>
      Effect.gen(function*() {
        const path = "/v2/catalog/characters/2?include=traits,aliases"
        const first = yield* raw(path)
        expect(first.status).toBe(200)
        const etag = first.headers.get("etag")!
        expect(etag).toMatch(/^"[^"]+"$/)
        const again = yield* raw(path, "nsfw", { "if-none-match": etag })
        expect(again.status).toBe(304)
        expect(yield* Effect.promise(() => again.text())).toBe("")
        const other = yield* raw("/v2/catalog/characters/2?include=traits", "nsfw", { "if-none-match": etag })
        expect(other.status).toBe(200)
        expect(other.headers.get("etag")).not.toBe(etag)
      }))

    it.effect("every character read needs the catalog:read scope (docs/api-contract.md, \"Credentials, scopes and the content limit\")", () =>
      Effect.gen(function*() {
        const keys = yield* ApiKeys
        const { key } = yield* keys.create({ site: "s", scopes: ["claims:write"], contentLimit: "nsfw", userId: null })
        for (
          const path of ["/v2/catalog/characters", "/v2/catalog/characters/1", "/v2/catalog/characters/1/appearances"]
        ) {
          const res = yield* raw(path, Redacted.value(key))
          yield* Effect.promise(() => expectProblem(res, "SCOPE_REQUIRED", path))
        }
        const { base } = yield* Catalog
        const none = yield* Effect.promise(() => fetch(`${base}/v2/catalog/characters`))
        expect(none.status).toBe(401)
      }))
  })
})
