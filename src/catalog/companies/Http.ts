import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { CatalogApi } from "../../../schema/Api/CatalogApi.js"
import { Principal } from "../../../schema/Api/Security.js"
import { Company, CompanyGraph } from "../../../schema/Catalog/Company.js"
import { conditionalJson } from "../../platform/Conditional.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import { Companies } from "./Companies.js"

export const HttpCompaniesLive = HttpApiBuilder.group(
  CatalogApi,
  "companies",
  (handlers) =>
    Effect.gen(function*() {
      const companies = yield* Companies
      return handlers
        .handle("listCompanies", ({ query }) =>
          Effect.flatMap(Principal, (p) => companies.list(query, p.contentLimit)), runToCompletion)
        .handle("getCompany", ({ params, query }) =>
          Effect.flatMap(Principal, (p) =>
            companies.get(params.id, query.include ?? [], p.contentLimit)).pipe(
              Effect.flatMap((company) =>
                conditionalJson(Company, company)
              )
            ), runToCompletion)
        .handle("getCompanyGraph", ({ params, query }) =>
          Effect.flatMap(Principal, (p) =>
            companies.graph(params.id, query.include ?? [], p.contentLimit)).pipe(
              Effect.flatMap((graph) =>
                conditionalJson(CompanyGraph, graph)
              )
            ), runToCompletion)
    })
).pipe(Layer.provide(Companies.layer))
