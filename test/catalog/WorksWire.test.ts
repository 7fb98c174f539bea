/**
 * What a client reads of a work, byte for byte where the contract fixes it (docs/api-contract.md,
 * "Records and lists"): times are RFC 3339 UTC as `YYYY-MM-DDTHH:MM:SS.ffffffZ`, the stored
 * microseconds included, wherever the work appears; and every record PostgreSQL writes for a work
 * (src/catalog/shared/JsonSql.ts) has its schema's members in the schema's order, parts after the
 * item in the order asked.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema, SchemaAST } from "effect"
import { SqlClient } from "effect/sql"
import { workIncludes } from "../../schema/Api/WorksApi.js"
import { RosterCharacter } from "../../schema/Catalog/Character.js"
import { Cover, EntityName, Intro, Ref, Timestamp, WorkLink } from "../../schema/Catalog/Common.js"
import { CompanyBasic } from "../../schema/Catalog/Company.js"
import { CreditEntry, CreditGroup } from "../../schema/Catalog/Credit.js"
import { EngineRef } from "../../schema/Catalog/Engine.js"
import { TagBasic, WorkTag } from "../../schema/Catalog/Tag.js"
import { ListWork, Rating, WorkCompany, WorkFull, WorkTitle } from "../../schema/Catalog/Work.js"
import { Catalog, one, SeededCatalogLive } from "../support/Catalog.js"

const keysOf = (schema: Schema.Top): Array<string> => {
  const ast = schema.ast
  if (!SchemaAST.isObjects(ast)) throw new Error(`not a record: ${ast._tag}`)
  return ast.propertySignatures.map((p) => String(p.name))
}

/** The records of each array member of a work: the element, and the record nested in it. */
const elements: Record<string, readonly [Schema.Top, string?, Schema.Top?]> = {
  titles: [WorkTitle],
  refs: [Ref],
  intros: [Intro],
  covers: [Cover],
  companies: [WorkCompany, "company", CompanyBasic],
  ratings: [Rating],
  tags: [WorkTag, "tag", TagBasic],
  credits: [CreditGroup, "credits", CreditEntry],
  aliases: [EntityName],
  links: [WorkLink],
  characters: [RosterCharacter]
}

/**
 * Asserts the member order of every element of the works' array members, nested records included;
 * returns the members seen with at least one element.
 */
const expectElementOrder = (works: ReadonlyArray<Record<string, unknown>>): Set<string> => {
  const seen = new Set<string>()
  for (const work of works) {
    for (const [member, [schema, nested, inner]] of Object.entries(elements)) {
      const list = (work[member] ?? []) as ReadonlyArray<Record<string, unknown>>
      if (list.length > 0) seen.add(member)
      for (const element of list) {
        expect(Object.keys(element), member).toEqual(keysOf(schema))
        if (nested === undefined || inner === undefined) continue
        const value = element[nested]
        for (const record of Array.isArray(value) ? value : [value]) {
          expect(Object.keys(record as object), `${member}.${nested}`).toEqual(keysOf(inner))
        }
      }
    }
    if (work.engine !== undefined && work.engine !== null) {
      seen.add("engine")
      expect(Object.keys(work.engine), "engine").toEqual(keysOf(EngineRef))
    }
  }
  return seen
}

describe("a work on the wire (docs/api-contract.md, \"Records and lists\")", () => {
  it.layer(SeededCatalogLive({ works: 80, seed: 11 }), { timeout: "300 seconds" })((it) => {
    it.effect("times are YYYY-MM-DDTHH:MM:SS.ffffffZ with the stored microseconds, in every read of the work", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const c = yield* Catalog
        // A work on a character's roster, so it is also read nested in the character's appearances.
        const row = one(
          yield* sql<{ id: string; character_id: string }>`
            SELECT w.id::text AS id, wc.character_id::text AS character_id
            FROM works w JOIN work_characters wc ON wc.work_id = w.id
            JOIN characters ch ON ch.id = wc.character_id AND ch.live
            WHERE w.live ORDER BY w.id LIMIT 1`
        )
        yield* sql`UPDATE works SET updated_at = '2024-05-06 07:08:09.123456+00',
          created_at = '2001-02-03 04:05:06.000007+00' WHERE id = ${row.id}::bigint`
        const detail = (yield* c.get(`/v2/catalog/works/${row.id}`)).body
        expect(detail.updated_at).toBe("2024-05-06T07:08:09.123456Z")
        expect(detail.created_at).toBe("2001-02-03T04:05:06.000007Z")
        const batch = (yield* c.get(`/v2/catalog/works?ids=${row.id}`)).body
        expect(batch.items[0].updated_at).toBe("2024-05-06T07:08:09.123456Z")
        const appearances = (yield* c.get(`/v2/catalog/characters/${row.character_id}/appearances?limit=100`)).body
        const nested = appearances.items.find((a: any) => a.work.id === row.id)
        expect(nested.work.updated_at).toBe("2024-05-06T07:08:09.123456Z")
        // A time with no fraction still has six digits: the form never varies.
        yield* sql`UPDATE works SET updated_at = '2024-05-06 07:08:09+00' WHERE id = ${row.id}::bigint`
        const whole = (yield* c.get(`/v2/catalog/works/${row.id}?view=basic`)).body
        expect(whole.updated_at).toBe("2024-05-06T07:08:09.000000Z")
        // The schema holds responses to that one form.
        expect(Schema.is(Timestamp)("2024-05-06T07:08:09.123Z")).toBe(false)
        expect(Schema.is(Timestamp)("2024-05-06T07:08:09.123456+00:00")).toBe(false)
      }))

    it.effect("every record of a work has its schema's members in order; parts follow the item as asked", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const c = yield* Catalog
        const ids = (yield* sql<{ id: string }>`SELECT id::text AS id FROM works WHERE live ORDER BY id LIMIT 100`)
          .map((w) => w.id)
        const includes = [...workIncludes].reverse()
        const asked = `view=full&include=${includes.join(",")}`
        const itemKeys = keysOf(WorkFull).filter((key) => key !== "aliases" && key !== "links")
        // The batch lane: the envelope in ListWork's order, every item as asked.
        const list = (yield* c.get(`/v2/catalog/works?ids=${ids.join(",")},0&${asked}`)).body
        expect(Object.keys(list)).toEqual(["object", "items", "missing"])
        expect(keysOf(ListWork).filter((key) => key in list)).toEqual(Object.keys(list))
        for (const item of list.items) {
          expect(Object.keys(item)).toEqual([...itemKeys, ...includes, "aliases", "links"])
        }
        const seen = expectElementOrder(list.items)
        expect([...seen].sort()).toEqual([...Object.keys(elements), "engine"].filter((m) => m !== "characters").sort())
        // The single-work read adds the roster last.
        const [cast] = yield* sql<{ id: string }>`
          SELECT w.id::text AS id FROM works w WHERE w.live
            AND EXISTS (SELECT 1 FROM work_characters x JOIN characters y ON y.id = x.character_id AND y.live
              WHERE x.work_id = w.id)
          ORDER BY w.id LIMIT 1`
        const detail = (yield* c.get(`/v2/catalog/works/${cast!.id}?${asked}`)).body
        expect(Object.keys(detail)).toEqual([...itemKeys, ...includes, "aliases", "links", "characters"])
        expect(expectElementOrder([detail]).has("characters")).toBe(true)
      }))
  })
})
