/**
 * Companies and their family graph (records in schema/Catalog/Company.ts).
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { NotModified, RequiredScope } from "../Annotations.js"
import { CompanyId } from "../Catalog/Common.js"
import { Company, CompanyGraph, CompanyKind, ListCompany } from "../Catalog/Company.js"
import { BooleanParam, CursorParam, IdList, Limit, tokenList } from "../Catalog/Query.js"
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

export const CompanyIncludes = ["aliases", "intros", "links", "logo"] as const
export type CompanyInclude = (typeof CompanyIncludes)[number]
export const CompanyGraphIncludes = ["logo"] as const

const companyInclude = tokenList(
  CompanyIncludes,
  "UNKNOWN_INCLUDE",
  "Optional fields: `aliases`, `intros` and `links` (the last two on the detail read and the `ids=` batch lane " +
    "only; the cursor list omits them), `logo` (when a logo exists)."
)

export const ListCompaniesParams = Schema.Struct({
  limit: Schema.optional(Limit),
  cursor: Schema.optional(CursorParam),
  ids: Schema.optional(IdList),
  company_kind: Schema.optional(CompanyKind.annotate({ description: "Only companies of this kind." })),
  include: Schema.optional(companyInclude),
  include_total: Schema.optional(
    BooleanParam.pipe(
      Schema.annotateEncoded({ description: "`true`: add `total`, the number of companies matching the filters." })
    )
  )
})
export type ListCompaniesParams = typeof ListCompaniesParams.Type

const CompanyPath = Schema.Struct({ id: CompanyId })

const GetCompanyParams = Schema.Struct({ include: Schema.optional(companyInclude) })

const GraphParams = Schema.Struct({
  include: Schema.optional(
    tokenList(CompanyGraphIncludes, "UNKNOWN_INCLUDE", "Optional node fields: `logo` (when a logo exists).")
  )
})

/** Every failing parameter is reported, not only the first (parse options of the path and the query). */
const strict = { errors: "all" } as const

export class CompaniesApi extends HttpApiGroup.make("companies")
  .add(
    HttpApiEndpoint.get("listCompanies", "/v2/catalog/companies", {
      query: ListCompaniesParams,
      success: ListCompany,
      error: [
        problem(UnknownInclude),
        problem(LimitTooLarge),
        problem(TooManyIds),
        problem(InvalidCursor)
      ]
    })
      .annotate(OpenApi.Summary, "List companies")
      .annotate(
        OpenApi.Description,
        "Every live company (brand, publisher, circle, label, studio, group) in id order, keyset-paginated: pass " +
          "`next_cursor` back as `cursor`; the last page has none. Batch lane: `ids=` (up to 100) returns the " +
          "requested companies in request order, no `next_cursor`, and lists invisible, merged or unknown ids " +
          "in `missing[]`; it cannot be combined with `cursor` or filters. `work_count` counts the works visible " +
          "under the credential's content limit. Include tokens: `aliases`, `intros`, `links`, `logo`; " +
          "`intros` and `links` are served on the batch lane only (the cursor lane omits them)."
      )
  )
  .add(
    HttpApiEndpoint.get("getCompany", "/v2/catalog/companies/:id", {
      params: CompanyPath,
      query: GetCompanyParams,
      success: [
        Company,
        NotModified.pipe(HttpApiSchema.status(304))
      ],
      error: [
        problem(UnknownInclude),
        problem(NotFound),
        problem(EntityMerged)
      ]
    })
      .annotate(OpenApi.Summary, "Read a company")
      .annotate(
        OpenApi.Description,
        "One company with the includes asked for (`aliases`, `intros`, `links`, `logo`). A merged-away id is 404 " +
          "`ENTITY_MERGED` naming `current_id`. Sends a strong `ETag`; `If-None-Match` with it gives 304."
      )
  )
  .add(
    HttpApiEndpoint.get("getCompanyGraph", "/v2/catalog/companies/:id/graph", {
      params: CompanyPath,
      query: GraphParams,
      success: [
        CompanyGraph,
        NotModified.pipe(HttpApiSchema.status(304))
      ],
      error: [
        problem(UnknownInclude),
        problem(NotFound),
        problem(EntityMerged)
      ]
    })
      .annotate(OpenApi.Summary, "Company family graph")
      .annotate(
        OpenApi.Description,
        "The family of a company: walking relations in both directions, at most 60 companies within 4 hops of " +
          "the requested one (nearest first, then by id; the requested company is the first node). `edges` are " +
          "the stored relations among those nodes, each read as \"`to_id` is the `relation` of `from_id`\"; " +
          "inverse edges are not emitted. `truncated` is true when the family continues beyond `nodes`. " +
          "Include token: `logo`. Sends a strong `ETag`; `If-None-Match` with it gives 304."
      )
  )
  .middleware(Authorization)
  .annotate(HttpApi.ParamsParseOptions, strict)
  .annotate(HttpApi.QueryParseOptions, strict)
  .annotate(RequiredScope, "catalog:read")
  .annotate(OpenApi.Title, "Companies")
  .annotate(OpenApi.Description, "Developer brands, publishers, circles, labels, studios and groups.")
{}
