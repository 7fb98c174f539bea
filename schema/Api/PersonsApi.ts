/**
 * Persons: the real people behind publicly linked credit names (record design in
 * schema/Catalog/Person.ts).
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
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

/** Every failing parameter is reported, not only the first (parse options of the path and the query). */
const strict = { errors: "all" } as const

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
})
export type ListPersonsParams = typeof ListPersonsParams.Type

export const GetPersonParams = Schema.Struct({ include })
export type GetPersonParams = typeof GetPersonParams.Type

export const PersonPath = Schema.Struct({ id: PersonId })

const note = "Only persons with a public link to their names are served; an `sfw` credential never sees a person " +
  "credited only on nsfw works."

export class PersonsApi extends HttpApiGroup.make("persons")
  .add(
    HttpApiEndpoint.get("listPersons", "/v2/catalog/persons", {
      query: ListPersonsParams,
      success: ListPerson,
      error: [
        problem(LimitTooLarge),
        problem(InvalidCursor),
        problem(TooManyIds),
        problem(UnknownInclude)
      ]
    })
      .annotate(OpenApi.Summary, "List persons")
      .annotate(
        OpenApi.Description,
        "Persons in id order, `limit` per page (1..100, default 20), continued with `cursor`; the last page has " +
          "no `next_cursor`. Batch lane: `ids=` (up to 100) returns the visible ones in the order asked and lists " +
          "the others in `missing[]`. `include=` tokens: `names`, `intros`, `links`, `refs`. " + note
      )
  )
  .add(
    HttpApiEndpoint.get("getPerson", "/v2/catalog/persons/:id", {
      params: PersonPath,
      query: GetPersonParams,
      success: [
        Person,
        NotModified.pipe(HttpApiSchema.status(304))
      ],
      error: [
        problem(UnknownInclude),
        problem(NotFound),
        problem(EntityMerged)
      ]
    })
      .annotate(OpenApi.Summary, "Get a person")
      .annotate(
        OpenApi.Description,
        "One person with gender and birth date (null parts when unrecorded). `include=` tokens: `names`, " +
          "`intros`, `links`, `refs`. A merged-away id is 404 `ENTITY_MERGED`. Sends a strong `ETag`; " +
          "`If-None-Match` gives 304. " + note
      )
  )
  .middleware(Authorization)
  .annotate(HttpApi.ParamsParseOptions, strict)
  .annotate(HttpApi.QueryParseOptions, strict)
  .annotate(RequiredScope, "catalog:read")
  .annotate(OpenApi.Title, "Persons")
  .annotate(OpenApi.Description, "The people behind credit names.")
{}
