import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { CatalogApi } from "../../../schema/Api/CatalogApi.js"
import { Principal } from "../../../schema/Api/Security.js"
import { Company, CompanyGraph } from "../../../schema/Catalog/Company.js"
import { conditionalJson } from "../../platform/Conditional.js"
import { Companies } from "./Companies.js"

export const HttpCompaniesLive = HttpApiBuilder.group(
  CatalogApi,
  "companies",
  (handlers) =>
    Effect.gen(function*() {
      const companies = yield* Companies
      return handlers
        .handle("listCompanies", ({ urlParams }) =>
          Effect.flatMap(Principal, (p) => companies.list(urlParams, p.contentLimit)))
        .handle("getCompany", ({ path, urlParams }) =>
          Effect.flatMap(Principal, (p) =>
            companies.get(path.id, urlParams.include ?? [], p.contentLimit)).pipe(
              Effect.flatMap((company) =>
                conditionalJson(Company, company)
              )
            ))
        .handle("getCompanyGraph", ({ path, urlParams }) =>
          Effect.flatMap(Principal, (p) =>
            companies.graph(path.id, urlParams.include ?? [], p.contentLimit)).pipe(
              Effect.flatMap((graph) =>
                conditionalJson(CompanyGraph, graph)
              )
            ))
    })
).pipe(Layer.provide(Companies.Default))
