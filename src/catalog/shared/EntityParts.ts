/**
 * The per-entity satellites every entity type keeps in the `entity_*` tables (aliases, intros,
 * links, refs, images), loaded for a whole page at once: one `= ANY($ids)` query per include,
 * never one per row. Rows come back grouped by entity id, in their stored order.
 */
import { Context, Effect, Layer, Schema, Struct } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { EntityName, Image, Intro, Ref, WorkLink } from "../../../schema/Catalog/Common.js"

export type EntityType = "work" | "release" | "character" | "credit_name" | "person" | "company" | "tag" | "engine"
export type ImageSlot = "image" | "figure" | "logo" | "photo"

const Request = Schema.Struct({ type: Schema.String, ids: Schema.Array(Schema.String) })
const owned = <Fields extends Schema.Struct.Fields>(fields: Fields) =>
  Schema.Struct({ entity_id: Schema.String, ...fields })
const AliasRow = owned(EntityName.fields)
const IntroRow = owned(Struct.omit(Intro.fields, ["object"]))
const LinkRow = owned(WorkLink.fields)
const RefRow = owned(Ref.fields)
const ImageRow = owned(Image.fields)

const grouped = <Row extends { readonly entity_id: string }, A>(
  rows: ReadonlyArray<Row>,
  toWire: (row: Row) => A
): Map<string, Array<A>> => {
  const out = new Map<string, Array<A>>()
  for (const row of rows) {
    const list = out.get(row.entity_id)
    if (list === undefined) out.set(row.entity_id, [toWire(row)])
    else list.push(toWire(row))
  }
  return out
}

export class EntityParts extends Context.Service<EntityParts>()("catalog/EntityParts", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const findAliases = SqlSchema.findAll({
      Request,
      Result: AliasRow,
      execute: ({ ids, type }) =>
        sql`
          SELECT entity_id::text AS entity_id, lang, value, alias_kind, is_machine FROM entity_aliases
          WHERE entity_id = ANY(${ids}::bigint[]) AND entity_type = ${type} AND alias_kind <> 'search_hint'
          ORDER BY entity_id, position
        `
    })
    const findIntros = SqlSchema.findAll({
      Request,
      Result: IntroRow,
      execute: ({ ids, type }) =>
        sql`
          SELECT entity_id::text AS entity_id, lang, value, is_machine, source FROM entity_intros
          WHERE entity_id = ANY(${ids}::bigint[]) AND entity_type = ${type}
          ORDER BY entity_id, position
        `
    })
    const findLinks = SqlSchema.findAll({
      Request,
      Result: LinkRow,
      execute: ({ ids, type }) =>
        sql`
          SELECT entity_id::text AS entity_id, site, url, label, lang FROM entity_links
          WHERE entity_id = ANY(${ids}::bigint[]) AND entity_type = ${type}
          ORDER BY entity_id, position
        `
    })
    const findRefs = SqlSchema.findAll({
      Request,
      Result: RefRow,
      execute: ({ ids, type }) =>
        sql`
          SELECT entity_id::text AS entity_id, source, external_id, url FROM entity_refs
          WHERE entity_id = ANY(${ids}::bigint[]) AND entity_type = ${type}
          ORDER BY entity_id, source, external_id
        `
    })
    const findImages = SqlSchema.findAll({
      Request: Schema.Struct({ type: Schema.String, slot: Schema.String, ids: Schema.Array(Schema.String) }),
      Result: ImageRow,
      execute: ({ ids, slot, type }) =>
        sql`
          SELECT ei.entity_id::text AS entity_id, i.url, i.hash, i.width, i.height, i.thumbhash, i.sexual,
            i.violence, i.source
          FROM entity_images ei JOIN images i ON i.hash = ei.image_hash
          WHERE ei.entity_id = ANY(${ids}::bigint[]) AND ei.entity_type = ${type} AND ei.slot = ${slot}
        `
    })

    /** Served aliases (`search_hint` aliases are internal and never appear). */
    const aliases = (type: EntityType, ids: ReadonlyArray<string>) =>
      findAliases({ type, ids }).pipe(
        Effect.orDie,
        Effect.map((rows) =>
          grouped(
            rows,
            ({ alias_kind, is_machine, lang, value }): EntityName => ({ lang, value, alias_kind, is_machine })
          )
        ),
        Effect.withSpan("EntityParts.aliases")
      )

    const intros = (type: EntityType, ids: ReadonlyArray<string>) =>
      findIntros({ type, ids }).pipe(
        Effect.orDie,
        Effect.map((rows) =>
          grouped(
            rows,
            ({ is_machine, lang, source, value }): Intro => ({ object: "intro", lang, value, is_machine, source })
          )
        ),
        Effect.withSpan("EntityParts.intros")
      )

    const links = (type: EntityType, ids: ReadonlyArray<string>) =>
      findLinks({ type, ids }).pipe(
        Effect.orDie,
        Effect.map((rows) => grouped(rows, ({ label, lang, site, url }): WorkLink => ({ site, url, label, lang }))),
        Effect.withSpan("EntityParts.links")
      )

    const refs = (type: EntityType, ids: ReadonlyArray<string>) =>
      findRefs({ type, ids }).pipe(
        Effect.orDie,
        Effect.map((rows) => grouped(rows, ({ external_id, source, url }): Ref => ({ source, external_id, url }))),
        Effect.withSpan("EntityParts.refs")
      )

    /** The image in `slot` of each entity that has one. */
    const images = (type: EntityType, slot: ImageSlot, ids: ReadonlyArray<string>) =>
      findImages({ type, slot, ids }).pipe(
        Effect.orDie,
        Effect.map((rows) =>
          new Map(
            rows.map(({ entity_id, ...image }): [string, Image] => [entity_id, image])
          )
        ),
        Effect.withSpan("EntityParts.images")
      )

    return { aliases, intros, links, refs, images } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
