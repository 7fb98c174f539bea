/**
 * Persons: the real people behind publicly linked credit names (record design in
 * schema/Catalog/Person.ts).
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Schema } from "effect"
import { NotModified, RequiredScope } from "../Annotations.js"
import { PersonId } from "../Catalog/Common.js"
import { ListPerson, Person } from "../Catalog/Person.js"
import { CursorParam, IdList, Limit, tokenList } from "../Catalog/Query.js"
import {
  EntityMerged,
  InvalidCursor,
  LimitTooLarge,
  NotFound,
  problem,
  TooManyIds,
  UnknownInclude
} from "../Problem.js"
import { Authorization } from "./Security.js"

/** Include tokens of persons, on every lane. */
export const personIncludes = ["names", "intros", "links", "refs"] as const
export type PersonInclude = (typeof personIncludes)[number]

const strict = { parseOptions: { errors: "all" } } as const

const include = Schema.optional(
  tokenList(
    personIncludes,
    "UNKNOWN_INCLUDE",
    "Extra members: `names` (the person's publicly linked credit names, basic CreditName[]), `intros` " +
      "(biography, Intro[]), `links` (WorkLink[]), `refs` (Ref[])."
  )
)

export const ListPersonsParams = Schema.Struct({
  limit: Schema.optional(Limit),
  cursor: Schema.optional(CursorParam),
  ids: Schema.optional(IdList),
  include
}).annotate(strict)
export type ListPersonsParams = typeof ListPersonsParams.Type

export const GetPersonParams = Schema.Struct({ include }).annotate(strict)
export type GetPersonParams = typeof GetPersonParams.Type

export const PersonPath = Schema.Struct({ id: PersonId }).annotate(strict)

const note = "Only persons with a public link to their names are served; an `sfw` credential never sees a person " +
  "credited only on nsfw works."

export class PersonsApi extends HttpApiGroup.make("persons")
  .add(
    HttpApiEndpoint.get("listPersons", "/v2/catalog/persons")
      .setUrlParams(ListPersonsParams)
      .addSuccess(ListPerson)
      .addError(problem(LimitTooLarge))
      .addError(problem(InvalidCursor))
      .addError(problem(TooManyIds))
      .addError(problem(UnknownInclude))
      .annotate(OpenApi.Summary, "List persons")
      .annotate(
        OpenApi.Description,
        "Persons in id order, `limit` per page (1..100, default 20), continued with `cursor`; the last page has " +
          "no `next_cursor`. Batch lane: `ids=` (up to 100) returns the visible ones in the order asked and lists " +
          "the others in `missing[]`. `include=` tokens: `names`, `intros`, `links`, `refs`. " + note
      )
  )
  .add(
    HttpApiEndpoint.get("getPerson", "/v2/catalog/persons/:id")
      .setPath(PersonPath)
      .setUrlParams(GetPersonParams)
      .addSuccess(Person)
      .addSuccess(NotModified, { status: 304 })
      .addError(problem(UnknownInclude))
      .addError(problem(NotFound))
      .addError(problem(EntityMerged))
      .annotate(OpenApi.Summary, "Get a person")
      .annotate(
        OpenApi.Description,
        "One person with gender and birth date (null parts when unrecorded). `include=` tokens: `names`, " +
          "`intros`, `links`, `refs`. A merged-away id is 404 `ENTITY_MERGED`. Sends a strong `ETag`; " +
          "`If-None-Match` gives 304. " + note
      )
  )
  .middleware(Authorization)
  .annotate(RequiredScope, "catalog:read")
  .annotate(OpenApi.Title, "Persons")
  .annotate(OpenApi.Description, "The people behind credit names.")
{}
