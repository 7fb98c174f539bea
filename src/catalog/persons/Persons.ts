/**
 * Persons (schema/Catalog/Person.ts): the id-ordered collection and its batch lane, and the detail
 * read; includes (`names`, `intros`, `links`, `refs`) fetched once per page or record.
 */
import { Context, Effect, Layer } from "effect"
import type { ListPersonsParams, PersonInclude } from "../../../schema/Api/PersonsApi.js"
import type { Intro, LangTag, PersonId, WorkLink } from "../../../schema/Catalog/Common.js"
import type { Person } from "../../../schema/Catalog/Person.js"
import { DEFAULT_LIMIT } from "../../../schema/Catalog/Query.js"
import { CreditNamesRepo } from "../credits/CreditNamesRepo.js"
import { groupBy, toCreditNameBasic } from "../credits/Rows.js"
import { Cursors } from "../pagination/Cursor.js"
import { EntityParts } from "../shared/EntityParts.js"
import { Gone } from "../shared/Gone.js"
import { bigintId, idListLanes } from "../shared/Lanes.js"
import { type PersonRow, PersonsRepo } from "./PersonsRepo.js"

const skip = Effect.succeed(undefined)

export class Persons extends Context.Service<Persons>()("catalog/Persons", {
  make: Effect.gen(function*() {
    const repo = yield* PersonsRepo
    const names = yield* CreditNamesRepo
    const parts = yield* EntityParts
    const cursors = yield* Cursors
    const gone = yield* Gone

    /** The wire records of `rows`, one query per include for all of them. */
    const present = Effect.fn("Persons.present")(function*(
      rows: ReadonlyArray<PersonRow>,
      include: ReadonlyArray<PersonInclude>,
      nsfw: boolean
    ) {
      const wants = new Set(include)
      const ids = rows.map((row) => row.id)
      const [nameRows, intros, links, refs] = yield* Effect.all([
        wants.has("names") ? names.ofPersons(ids, nsfw) : skip,
        wants.has("intros") ? repo.intros(ids, nsfw) : skip,
        wants.has("links") ? repo.links(ids, nsfw) : skip,
        wants.has("refs") ? parts.refs("person", ids) : skip
      ], { concurrency: "unbounded" })
      const namesOf = nameRows && groupBy(nameRows, (row) => row.person_id!, toCreditNameBasic)
      const introsOf = intros &&
        groupBy(intros, (row) => row.owner, (row): Intro => ({
          object: "intro",
          lang: row.lang,
          value: row.value,
          is_machine: row.is_machine,
          source: row.source
        }))
      const linksOf = links &&
        groupBy(links, (row) => row.owner, (row): WorkLink => ({
          site: row.site,
          url: row.url,
          label: row.label,
          lang: row.lang
        }))
      return rows.map((row): Person => ({
        object: "person",
        id: row.id as PersonId,
        display_name: row.display_name,
        latin: row.latin,
        lang: row.lang as LangTag | null,
        localized: row.localized,
        gender: row.gender,
        birth_year: row.birth_year,
        birth_month: row.birth_month,
        birth_day: row.birth_day,
        ...(namesOf === undefined ? {} : { names: namesOf.get(row.id) ?? [] }),
        ...(introsOf === undefined ? {} : { intros: introsOf.get(row.id) ?? [] }),
        ...(linksOf === undefined ? {} : { links: linksOf.get(row.id) ?? [] }),
        ...(refs === undefined ? {} : { refs: refs.get(row.id) ?? [] })
      }))
    })

    const list = Effect.fn("Persons.list")(function*(params: ListPersonsParams, nsfw: boolean) {
      const result = yield* idListLanes({
        collection: "persons",
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
        items: yield* present(result.items, params.include ?? [], nsfw),
        ...(result.next_cursor === undefined ? {} : { next_cursor: result.next_cursor }),
        ...(result.missing === undefined ? {} : { missing: result.missing })
      }
    })

    const get = Effect.fn("Persons.get")(function*(id: string, include: ReadonlyArray<PersonInclude>, nsfw: boolean) {
      const key = bigintId(id)
      const [row] = key === undefined ? [] : yield* repo.byIds([key], nsfw)
      if (row === undefined) return yield* gone.missing("person", id)
      const [person] = yield* present([row], include, nsfw)
      return person!
    })

    return { list, get } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make).pipe(
    Layer.provide([PersonsRepo.layer, CreditNamesRepo.layer, EntityParts.layer, Cursors.layer, Gone.layer])
  )
}
