/**
 * SQL of persons. Only persons whose link to their names is public are served, and for an `sfw`
 * credential only those with a name it may see (docs/api-contract.md,
 * "Credentials, scopes and the content limit"); SQL failures die here.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { Intro, Localized, WorkLink } from "../../../schema/Catalog/Common.js"
import { creditNameGate } from "../credits/Rows.js"

export interface PersonRow {
  readonly id: string
  readonly display_name: string
  readonly latin: string | null
  readonly lang: string | null
  readonly localized: Localized
  readonly gender: "male" | "female" | "other" | null
  readonly birth_year: number | null
  readonly birth_month: number | null
  readonly birth_day: number | null
}

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

    /** A page in id order after `afterId` (exclusive); `take` rows at most. */
    const page = (options: { readonly afterId: string | null; readonly take: number; readonly nsfw: boolean }) =>
      sql<PersonRow>`
        ${select}
        WHERE ${gate(options.nsfw)} ${options.afterId === null ? sql`` : sql`AND p.id > ${options.afterId}::bigint`}
        ORDER BY p.id
        LIMIT ${options.take}`.pipe(Effect.orDie, Effect.withSpan("PersonsRepo.page"))

    /** The served persons among `ids` (canonical, bigint-sized), in no particular order. */
    const byIds = (ids: ReadonlyArray<string>, nsfw: boolean) =>
      ids.length === 0
        ? Effect.succeed<ReadonlyArray<PersonRow>>([])
        : sql<PersonRow>`${select} WHERE p.id = ANY(${ids}::bigint[]) AND ${gate(nsfw)}`.pipe(
          Effect.orDie,
          Effect.withSpan("PersonsRepo.byIds")
        )

    /** The biography of each person: its own intros, then those of its visible names (name id order). */
    const intros = (ids: ReadonlyArray<string>, nsfw: boolean) =>
      sql<Omit<Intro, "object"> & { readonly owner: string }>`
        SELECT x.owner::text AS owner, x.lang, x.value, x.is_machine, x.source FROM (
          SELECT i.entity_id AS owner, 0 AS via, i.position, i.lang, i.value, i.is_machine, i.source
          FROM entity_intros i WHERE i.entity_type = 'person' AND i.entity_id = ANY(${ids}::bigint[])
          UNION ALL
          SELECT cn.person_id, cn.id, i.position, i.lang, i.value, i.is_machine, i.source
          FROM credit_names cn JOIN entity_intros i ON i.entity_id = cn.id AND i.entity_type = 'credit_name'
          WHERE cn.person_id = ANY(${ids}::bigint[]) AND ${creditNameGate(sql, nsfw)}
        ) x
        ORDER BY x.owner, x.via, x.position`.pipe(Effect.orDie, Effect.withSpan("PersonsRepo.intros"))

    /** The links of each person: its own, then those of its visible names (name id order). */
    const links = (ids: ReadonlyArray<string>, nsfw: boolean) =>
      sql<WorkLink & { readonly owner: string }>`
        SELECT x.owner::text AS owner, x.site, x.url, x.label, x.lang FROM (
          SELECT l.entity_id AS owner, 0 AS via, l.position, l.site, l.url, l.label, l.lang
          FROM entity_links l WHERE l.entity_type = 'person' AND l.entity_id = ANY(${ids}::bigint[])
          UNION ALL
          SELECT cn.person_id, cn.id, l.position, l.site, l.url, l.label, l.lang
          FROM credit_names cn JOIN entity_links l ON l.entity_id = cn.id AND l.entity_type = 'credit_name'
          WHERE cn.person_id = ANY(${ids}::bigint[]) AND ${creditNameGate(sql, nsfw)}
        ) x
        ORDER BY x.owner, x.via, x.position`.pipe(Effect.orDie, Effect.withSpan("PersonsRepo.links"))

    return { page, byIds, intros, links } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
