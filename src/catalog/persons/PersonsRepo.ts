/**
 * SQL of persons. Only persons whose link to their names is public are served, and for an `sfw`
 * credential only those with a name it may see (docs/api-contract.md,
 * "Credentials, scopes and the content limit"); SQL failures die here.
 */
import { Context, Effect, Layer, Schema, Struct } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { Intro, WorkLink } from "../../../schema/Catalog/Common.js"
import { Person } from "../../../schema/Catalog/Person.js"
import { creditNameGate } from "../credits/Rows.js"
import { IdsRequest, PageRequest } from "../shared/SqlRequests.js"

export const PersonRow = Schema.Struct(
  Struct.pick(Person.fields, [
    "id",
    "display_name",
    "latin",
    "lang",
    "localized",
    "gender",
    "birth_year",
    "birth_month",
    "birth_day"
  ])
)
export type PersonRow = typeof PersonRow.Type

/** A biography text or a link of a person, its own or one of its visible names'. */
const IntroRow = Schema.Struct({ owner: Schema.String, ...Struct.omit(Intro.fields, ["object"]) })
const LinkRow = Schema.Struct({ owner: Schema.String, ...WorkLink.fields })

export class PersonsRepo extends Context.Service<PersonsRepo>()("catalog/PersonsRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /**
     * Whether person `p` is served: live, publicly linked, and for `sfw` either without names or
     * with at least one name the credential may see (so a visible name never links to a hidden person).
     * Scalar `LIMIT 1` probes for the reason given at `creditNameGate`.
     */
    const gate = (nsfw: boolean) =>
      nsfw ? sql`p.live AND p.is_public` : sql`p.live AND p.is_public AND (
        (SELECT true FROM credit_names pn WHERE pn.person_id = p.id AND ${creditNameGate(sql, false, "pn")}
          LIMIT 1) IS NOT NULL
        OR (SELECT true FROM credit_names pn WHERE pn.person_id = p.id AND pn.live LIMIT 1) IS NULL)`

    const select = sql`SELECT p.id::text AS id, p.display_name, p.latin, p.lang, p.localized, p.gender, p.birth_year,
        p.birth_month, p.birth_day FROM persons p`

    const findPage = SqlSchema.findAll({
      Request: PageRequest,
      Result: PersonRow,
      execute: (options) =>
        sql`
          ${select}
          WHERE ${gate(options.nsfw)} ${options.afterId === null ? sql`` : sql`AND p.id > ${options.afterId}::bigint`}
          ORDER BY p.id
          LIMIT ${options.take}`
    })
    /** A page in id order after `afterId` (exclusive); `take` rows at most. */
    const page = (options: typeof PageRequest.Type) =>
      findPage(options).pipe(Effect.orDie, Effect.withSpan("PersonsRepo.page"))

    const findByIds = SqlSchema.findAll({
      Request: IdsRequest,
      Result: PersonRow,
      execute: ({ ids, nsfw }) => sql`${select} WHERE p.id = ANY(${ids}::bigint[]) AND ${gate(nsfw)}`
    })
    /** The served persons among `ids` (canonical, bigint-sized), in no particular order. */
    const byIds = (ids: ReadonlyArray<string>, nsfw: boolean) =>
      ids.length === 0
        ? Effect.succeed([])
        : findByIds({ ids, nsfw }).pipe(Effect.orDie, Effect.withSpan("PersonsRepo.byIds"))

    /** The biography of each person: its own intros, then those of its visible names (name id order). */
    const findIntros = SqlSchema.findAll({
      Request: IdsRequest,
      Result: IntroRow,
      execute: ({ ids, nsfw }) =>
        sql`
        SELECT x.owner::text AS owner, x.lang, x.value, x.is_machine, x.source FROM (
          SELECT i.entity_id AS owner, 0 AS via, i.position, i.lang, i.value, i.is_machine, i.source
          FROM entity_intros i WHERE i.entity_type = 'person' AND i.entity_id = ANY(${ids}::bigint[])
          UNION ALL
          SELECT cn.person_id, cn.id, i.position, i.lang, i.value, i.is_machine, i.source
          FROM credit_names cn JOIN entity_intros i ON i.entity_id = cn.id AND i.entity_type = 'credit_name'
          WHERE cn.person_id = ANY(${ids}::bigint[]) AND ${creditNameGate(sql, nsfw)}
        ) x
        ORDER BY x.owner, x.via, x.position`
    })
    const intros = (ids: ReadonlyArray<string>, nsfw: boolean) =>
      findIntros({ ids, nsfw }).pipe(Effect.orDie, Effect.withSpan("PersonsRepo.intros"))

    /** The links of each person: its own, then those of its visible names (name id order). */
    const findLinks = SqlSchema.findAll({
      Request: IdsRequest,
      Result: LinkRow,
      execute: ({ ids, nsfw }) =>
        sql`
        SELECT x.owner::text AS owner, x.site, x.url, x.label, x.lang FROM (
          SELECT l.entity_id AS owner, 0 AS via, l.position, l.site, l.url, l.label, l.lang
          FROM entity_links l WHERE l.entity_type = 'person' AND l.entity_id = ANY(${ids}::bigint[])
          UNION ALL
          SELECT cn.person_id, cn.id, l.position, l.site, l.url, l.label, l.lang
          FROM credit_names cn JOIN entity_links l ON l.entity_id = cn.id AND l.entity_type = 'credit_name'
          WHERE cn.person_id = ANY(${ids}::bigint[]) AND ${creditNameGate(sql, nsfw)}
        ) x
        ORDER BY x.owner, x.via, x.position`
    })
    const links = (ids: ReadonlyArray<string>, nsfw: boolean) =>
      findLinks({ ids, nsfw }).pipe(Effect.orDie, Effect.withSpan("PersonsRepo.links"))

    return { page, byIds, intros, links } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
