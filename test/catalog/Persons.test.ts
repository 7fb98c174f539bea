/**
 * Persons over a seeded catalog (record design in schema/Catalog/Person.ts): only publicly linked
 * persons are served. Against these sections of docs/api-contract.md:
 * "Records and lists" and "Cursors and pages" (includes, batch lane, cursors),
 * "Errors: catalog problem documents" (merged persons, problems),
 * "Credentials, scopes and the content limit" (content gate) and
 * "Caching, ETags and freshness" (ETag).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { PersonId } from "../../schema/Catalog/Common.js"
import { Catalog, one, problem, raw, SeededCatalogLive, walk } from "../support/Catalog.js"
import { catalogClient, fresh } from "../support/Clients.js"
import { expectProblem } from "../support/Problems.js"

const INCLUDES = ["names", "intros", "links", "refs"]
const FIELDS = [
  "birth_day",
  "birth_month",
  "birth_year",
  "display_name",
  "gender",
  "id",
  "lang",
  "latin",
  "localized",
  "object"
]

describe("persons", () => {
  it.layer(SeededCatalogLive(), { timeout: "180 seconds" })((it) => {
    it.effect("the list visits every live, publicly linked person once, in id order (docs/api-contract.md, \"Cursors and pages\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const served = yield* sql<{ id: string }>`SELECT p.id::text AS id FROM persons p WHERE p.live AND p.is_public
          ORDER BY p.id`
        const hidden = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM persons WHERE live AND NOT is_public`
        expect(hidden[0]!.n).toBeGreaterThan(0)
        const all = yield* walk("/v2/catalog/persons?limit=7", "nsfw")
        expect(all.map((p) => p.id)).toEqual(served.map((r) => r.id))
        for (const person of all) {
          expect(Object.keys(person).sort()).toEqual(FIELDS)
          expect(person.object).toBe("person")
        }
      }))

    it.effect("a person whose names are credited only on nsfw works is hidden from sfw credentials (docs/api-contract.md, \"Credentials, scopes and the content limit\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const work = one(
          yield* sql<{ id: string }>`SELECT id::text AS id FROM works WHERE live AND nsfw ORDER BY id
          LIMIT 1`
        )
        const person = one(
          yield* sql<{ id: string }>`INSERT INTO persons (display_name, lang, is_public)
          VALUES ('Hidden Person', 'en', true) RETURNING id::text AS id`
        )
        const name = one(
          yield* sql<{ id: string }>`INSERT INTO credit_names (person_id, display_name, lang)
          VALUES (${person.id}, 'Hidden Person', 'en') RETURNING id::text AS id`
        )
        yield* sql`INSERT INTO credits (work_id, credit_name_id, role_key) VALUES (${work.id}, ${name.id}, 'art')`
        yield* problem(`/v2/catalog/persons/${person.id}`, "NOT_FOUND", "sfw")
        const sfwClient = yield* catalogClient("sfw")
        const batch = yield* sfwClient.persons.listPersons({ query: { ids: [person.id, "1"] } })
        expect(batch.missing).toContain(person.id)
        const sfw = yield* walk("/v2/catalog/persons?limit=100", "sfw")
        expect(sfw.map((p) => p.id)).not.toContain(person.id)
        const nsfw = yield* (yield* catalogClient("nsfw")).persons.getPerson({
          params: { id: PersonId.make(person.id) },
          query: { include: ["names"] }
        })
        expect(fresh(nsfw).names?.map((n) => n.id)).toEqual([name.id])
      }))

    it.effect("includes: names are the person's public names; intros and links add the names' own", () =>
      Effect.gen(function*() {
        const c = yield* Catalog
        const sql = yield* SqlClient.SqlClient
        const person = one(
          yield* sql<{ id: string; names: Array<string> }>`
          SELECT p.id::text AS id, array_agg(cn.id::text ORDER BY cn.id) AS names
          FROM persons p JOIN credit_names cn ON cn.person_id = p.id AND cn.live
          WHERE p.live AND p.is_public
            AND EXISTS (SELECT 1 FROM entity_intros i JOIN credit_names n ON n.id = i.entity_id
              WHERE i.entity_type = 'credit_name' AND n.person_id = p.id)
          GROUP BY p.id ORDER BY count(*) DESC, p.id LIMIT 1`
        )
        const client = yield* catalogClient()
        const res = fresh(
          yield* client.persons.getPerson({
            params: { id: PersonId.make(person.id) },
            query: { include: ["names", "intros", "links", "refs"] }
          })
        )
        expect(res.names?.map((n) => n.id)).toEqual(person.names)
        for (const n of res.names ?? []) expect(n).toMatchObject({ object: "credit_name", person_id: person.id })
        const intros = yield* sql<{ value: string }>`SELECT i.value FROM entity_intros i
          JOIN credit_names n ON n.id = i.entity_id AND n.live
          WHERE i.entity_type = 'credit_name' AND n.person_id = ${person.id} ORDER BY n.id, i.position`
        expect(res.intros?.map((i) => i.value)).toEqual(intros.map((i) => i.value))
        expect(Array.isArray(res.links)).toBe(true)
        expect(Array.isArray(res.refs)).toBe(true)
        // A list page carries the same includes, fetched for the whole page.
        const page = yield* client.persons.listPersons({ query: { ids: [person.id, "1"], include: ["names"] } })
        expect(page.items[0]!.names).toEqual(res.names)
        expect(page.items[0]).not.toHaveProperty("intros")
        const none = yield* c.get(`/v2/catalog/persons/${person.id}`)
        for (const token of INCLUDES) expect(none.body).not.toHaveProperty(token)
      }))

    it.effect("unknown include, the batch lane, merged and private persons (docs/api-contract.md, \"Records and lists\", \"Errors: catalog problem documents\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const bad = yield* problem("/v2/catalog/persons?include=names,photo", "UNKNOWN_INCLUDE")
        expect(bad.errors[0]).toMatchObject({
          parameter: "include",
          reason: "UNKNOWN_VALUE",
          params: { allowed: INCLUDES }
        })
        const merged = one(
          yield* sql<{ id: string; current: string }>`SELECT from_id::text AS id,
          current_id::text AS current FROM catalog_redirects WHERE target_object = 'person' ORDER BY from_id LIMIT 1`
        )
        const path = `/v2/catalog/persons/${merged.id}`
        const res = yield* raw(path)
        const link = res.headers.get("link")
        const body = yield* Effect.promise(() => expectProblem(res, "ENTITY_MERGED", path))
        expect(body).toMatchObject({ object: "person", current_id: merged.current })
        expect(link).toMatch(new RegExp(`/v2/catalog/persons/${merged.current}>; rel="canonical"$`))
        const hidden = one(
          yield* sql<{ id: string }>`SELECT id::text AS id FROM persons WHERE live AND NOT is_public
          ORDER BY persons.id LIMIT 1`
        )
        yield* problem(`/v2/catalog/persons/${hidden.id}`, "NOT_FOUND")
        const visible = one(
          yield* sql<{ id: string }>`SELECT id::text AS id FROM persons WHERE live AND is_public
          ORDER BY persons.id DESC LIMIT 1`
        )
        const batch = yield* (yield* catalogClient()).persons.listPersons({
          query: { ids: [hidden.id, visible.id, merged.id] }
        })
        expect(batch.items.map((p) => p.id)).toEqual([visible.id])
        expect(batch.missing).toEqual([hidden.id, merged.id])
        yield* problem("/v2/catalog/persons?limit=101", "LIMIT_TOO_LARGE")
        yield* problem("/v2/catalog/persons?cursor=cur_x", "INVALID_CURSOR")
      }))

    it.effect("the detail read sends a strong ETag and answers If-None-Match with 304 (docs/api-contract.md, \"Caching, ETags and freshness\")", () =>
      Effect.gen(function*() {
        const path = "/v2/catalog/persons/2?include=names"
        const first = yield* raw(path)
        expect(first.status).toBe(200)
        const etag = first.headers.get("etag")!
        const again = yield* raw(path, "nsfw", { "if-none-match": etag })
        expect(again.status).toBe(304)
      }))
  })
})
