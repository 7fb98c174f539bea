/**
 * Credit names: the id-ordered collection and its batch lane, the detail read with the person's
 * public fields, and the credits of a name. Includes are fetched once per page or record.
 */
import { Context, Effect, Layer } from "effect"
import type { CreditNameInclude, ListCreditNamesParams, NameCreditsParams } from "../../../schema/Api/CreditNamesApi.js"
import type { NameCredit } from "../../../schema/Catalog/Appearance.js"
import type { CharacterId } from "../../../schema/Catalog/Common.js"
import type { CreditName } from "../../../schema/Catalog/Credit.js"
import { DEFAULT_LIMIT } from "../../../schema/Catalog/Query.js"
import { Cursors } from "../pagination/Cursor.js"
import { EntityParts } from "../shared/EntityParts.js"
import { Gone } from "../shared/Gone.js"
import { keysetPage } from "../shared/Keyset.js"
import { bigintId, idListLanes } from "../shared/Lanes.js"
import { CreditNamesRepo, type NameCreditRow } from "./CreditNamesRepo.js"
import { type CreditNameRow, groupBy, toCreditNameBasic, toWorkBasic } from "./Rows.js"

const skip = Effect.succeed(undefined)

export class CreditNames extends Context.Service<CreditNames>()("catalog/CreditNames", {
  make: Effect.gen(function*() {
    const repo = yield* CreditNamesRepo
    const parts = yield* EntityParts
    const cursors = yield* Cursors
    const gone = yield* Gone

    /**
     * The wire records of `rows`, one query per include for all of them. The detail face adds the
     * person's birth date and gender, each only when recorded and the person link is public.
     */
    const present = Effect.fn("CreditNames.present")(function*(
      rows: ReadonlyArray<CreditNameRow>,
      include: ReadonlyArray<CreditNameInclude>,
      nsfw: boolean,
      detailFace: boolean
    ) {
      const wants = new Set(include)
      const ids = rows.map((row) => row.id)
      const personIds = [...new Set(rows.flatMap((row) => row.person_id === null ? [] : [row.person_id]))]
      const [aliases, intros, links, refs, photos, siblings] = yield* Effect.all([
        wants.has("aliases") ? parts.aliases("credit_name", ids) : skip,
        wants.has("intros") ? parts.intros("credit_name", ids) : skip,
        wants.has("links") ? parts.links("credit_name", ids) : skip,
        wants.has("refs") ? parts.refs("credit_name", ids) : skip,
        wants.has("photo") ? parts.images("credit_name", "photo", ids) : skip,
        wants.has("siblings")
          ? Effect.map(repo.ofPersons(personIds, nsfw), (names) => groupBy(names, (n) => n.person_id!, (n) => n))
          : skip
      ], { concurrency: "unbounded" })
      return rows.map((row): CreditName => {
        const photo = photos?.get(row.id)
        const person = detailFace && row.person_id !== null
        return {
          ...toCreditNameBasic(row),
          ...(person && row.p_birth_year !== null ? { birth_year: row.p_birth_year } : {}),
          ...(person && row.p_birth_month !== null ? { birth_month: row.p_birth_month } : {}),
          ...(person && row.p_birth_day !== null ? { birth_day: row.p_birth_day } : {}),
          ...(person && row.p_gender !== null ? { gender: row.p_gender } : {}),
          ...(aliases === undefined ? {} : { aliases: aliases.get(row.id) ?? [] }),
          ...(intros === undefined ? {} : { intros: intros.get(row.id) ?? [] }),
          ...(links === undefined ? {} : { links: links.get(row.id) ?? [] }),
          ...(refs === undefined ? {} : { refs: refs.get(row.id) ?? [] }),
          ...(photo === undefined ? {} : { photo }),
          ...(siblings === undefined ? {} : {
            siblings: (row.person_id === null ? [] : siblings.get(row.person_id) ?? [])
              .filter((name) => name.id !== row.id)
              .map(toCreditNameBasic)
          })
        }
      })
    })

    const list = Effect.fn("CreditNames.list")(function*(params: ListCreditNamesParams, nsfw: boolean) {
      const result = yield* idListLanes({
        collection: "credit-names",
        limit: params.limit ?? DEFAULT_LIMIT,
        cursor: params.cursor,
        ids: params.ids,
        filters: {}
      }, {
        page: (afterId, take) => repo.page({ afterId, take, nsfw }),
        batch: (ids) => repo.byIds(ids, nsfw)
      }).pipe(Effect.provideService(Cursors, cursors))
      return {
        object: "list" as const,
        items: yield* present(result.items, params.include ?? [], nsfw, false),
        ...(result.next_cursor === undefined ? {} : { next_cursor: result.next_cursor }),
        ...(result.missing === undefined ? {} : { missing: result.missing })
      }
    })

    /** The visible name `id`, or the 404 that fits (ENTITY_MERGED or NOT_FOUND). */
    const visible = Effect.fn("CreditNames.visible")(function*(id: string, nsfw: boolean) {
      const key = bigintId(id)
      const [row] = key === undefined ? [] : yield* repo.byIds([key], nsfw)
      if (row === undefined) return yield* gone.missing("credit_name", id)
      return row
    })

    const get = Effect.fn("CreditNames.get")(
      function*(id: string, include: ReadonlyArray<CreditNameInclude>, nsfw: boolean) {
        const row = yield* visible(id, nsfw)
        const [name] = yield* present([row], include, nsfw, true)
        return name!
      }
    )

    const toNameCredit = (row: NameCreditRow): NameCredit => ({
      object: "name_credit",
      work: toWorkBasic(row),
      role_key: row.role_key,
      role_name: row.role_name,
      character_id: row.character_id as CharacterId | null,
      note: row.note
    })

    /** A name's credits on visible works, oldest release first (undated last). */
    const credits = Effect.fn("CreditNames.credits")(function*(id: string, params: NameCreditsParams, nsfw: boolean) {
      const name = yield* visible(id, nsfw)
      const page = yield* keysetPage<NameCreditRow>(cursors, {
        collection: "credit-names/credits",
        sort: "released_asc",
        filters: { credits_of: name.id },
        cursor: params.cursor,
        limit: params.limit,
        fetch: (after, take) =>
          repo.credits({
            nameId: name.id,
            after: after === undefined ? undefined : {
              sortKey: Number(after.key[0]),
              workId: String(after.key[1]),
              position: Number(after.key[2]),
              identity: after.id
            },
            take,
            nsfw
          }),
        positionOf: (row) => ({ sort: "released_asc", key: [row.sort_key, row.w_id, row.position], id: row.identity })
      })
      return {
        object: "list" as const,
        items: page.items.map(toNameCredit),
        ...(page.next_cursor === undefined ? {} : { next_cursor: page.next_cursor })
      }
    })

    return { list, get, credits } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make).pipe(
    Layer.provide([CreditNamesRepo.layer, EntityParts.layer, Cursors.layer, Gone.layer])
  )
}
