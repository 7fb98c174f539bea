/**
 * Credit names: the collection with its `ids=` batch lane, the detail read with the
 * person's public fields, and the credits of one name.
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { NotModified, RequiredScope } from "../Annotations.js"
import { ListNameCredit } from "../Catalog/Appearance.js"
import { CreditNameId } from "../Catalog/Common.js"
import { CreditName, ListCreditName } from "../Catalog/Credit.js"
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

/** Include tokens of credit names, on every lane. */
export const creditNameIncludes = ["aliases", "intros", "links", "refs", "photo", "siblings"] as const
export type CreditNameInclude = (typeof creditNameIncludes)[number]

/** Every failing parameter is reported, not only the first (parse options of the path and the query). */
const strict = { errors: "all" } as const

const include = Schema.optional(
  tokenList(
    creditNameIncludes,
    "UNKNOWN_INCLUDE",
    "Extra members: `aliases` (EntityName[]), `intros` (the person's biography, Intro[]), `links` (WorkLink[]), " +
      "`refs` (Ref[]), `photo` (Image, only when one exists), `siblings` (the same person's other publicly linked " +
      "names, basic CreditName[])."
  )
)

export const ListCreditNamesParams = Schema.Struct({
  limit: Schema.optional(Limit),
  cursor: Schema.optional(CursorParam),
  ids: Schema.optional(IdList),
  include
})
export type ListCreditNamesParams = typeof ListCreditNamesParams.Type

export const GetCreditNameParams = Schema.Struct({ include })
export type GetCreditNameParams = typeof GetCreditNameParams.Type

export const NameCreditsParams = Schema.Struct({
  limit: Schema.optional(Limit),
  cursor: Schema.optional(CursorParam)
})
export type NameCreditsParams = typeof NameCreditsParams.Type

export const CreditNamePath = Schema.Struct({ id: CreditNameId })

const gateNote = "An `sfw` credential never sees a name credited only on nsfw works."
const personNote = "`person_id` is null unless the name has a public link to a person."

export class CreditNamesApi extends HttpApiGroup.make("creditNames")
  .add(
    HttpApiEndpoint.get("listCreditNames", "/v2/catalog/credit-names", {
      query: ListCreditNamesParams,
      success: ListCreditName,
      error: [
        problem(LimitTooLarge),
        problem(InvalidCursor),
        problem(TooManyIds),
        problem(UnknownInclude)
      ]
    })
      .annotate(OpenApi.Summary, "List credit names")
      .annotate(
        OpenApi.Description,
        "Credit names (names under which staff and voice actors are credited) in id order, `limit` per page " +
          "(1..100, default 20), continued with `cursor`; the last page has no `next_cursor`. Batch lane: `ids=` " +
          "(up to 100) returns the visible ones in the order asked and lists the others in `missing[]`. `include=` " +
          "tokens: `aliases`, `intros`, `links`, `refs`, `photo`, `siblings`. List entries carry no detail-face " +
          "fields. " + personNote + " " + gateNote
      )
  )
  .add(
    HttpApiEndpoint.get("getCreditName", "/v2/catalog/credit-names/:id", {
      params: CreditNamePath,
      query: GetCreditNameParams,
      success: [
        CreditName,
        NotModified.pipe(HttpApiSchema.status(304))
      ],
      error: [
        problem(UnknownInclude),
        problem(NotFound),
        problem(EntityMerged)
      ]
    })
      .annotate(OpenApi.Summary, "Get a credit name")
      .annotate(
        OpenApi.Description,
        "One credit name. The detail face adds the person's `birth_year`, `birth_month`, `birth_day` and " +
          "`gender`, each only when recorded and only when the name has a public person link. `include=` tokens: " +
          "`aliases`, `intros`, `links`, `refs`, `photo`, `siblings`. A merged-away id is 404 `ENTITY_MERGED`. " +
          "Sends a strong `ETag`; `If-None-Match` gives 304. " + personNote + " " + gateNote
      )
  )
  .add(
    HttpApiEndpoint.get("listNameCredits", "/v2/catalog/credit-names/:id/credits", {
      params: CreditNamePath,
      query: NameCreditsParams,
      success: ListNameCredit,
      error: [
        problem(LimitTooLarge),
        problem(InvalidCursor),
        problem(NotFound),
        problem(EntityMerged)
      ]
    })
      .annotate(OpenApi.Summary, "List a credit name's credits")
      .annotate(
        OpenApi.Description,
        "Every credit of the name: the work at view=basic, the role (`role_key`, `role_name`), the voiced " +
          "character (`character_id`, null unless a voice credit) and the note; oldest release first (undated " +
          "last), then by work id and the work's credit order. Cursor-paged like every list. Credits on nsfw " +
          "works are omitted for an `sfw` credential. " + gateNote
      )
  )
  .middleware(Authorization)
  .annotate(HttpApi.ParamsParseOptions, strict)
  .annotate(HttpApi.QueryParseOptions, strict)
  .annotate(RequiredScope, "catalog:read")
  .annotate(OpenApi.Title, "Credit names")
  .annotate(OpenApi.Description, "Names under which staff and voice actors are credited.")
{}
