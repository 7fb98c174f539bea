import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { NotFound, problem, ReasonEntry } from "../Problem.js"

export const ReasonList = Schema.Struct({
  object: Schema.Literal("list"),
  items: Schema.Array(ReasonEntry)
}).annotate({ identifier: "ReasonList" })

/** The error registries, for clients and for humans following a problem's `type` link. */
export class ProblemsApi extends HttpApiGroup.make("problems")
  .add(
    HttpApiEndpoint.get("listReasons", "/v2/problems/reasons", {
      success: ReasonList
    })
      .annotate(OpenApi.Summary, "Field-error reasons")
      .annotate(
        OpenApi.Description,
        "The closed registry of `errors[].reason` values, each with the `params` keys it may carry."
      )
  )
  .add(
    HttpApiEndpoint.get("problemType", "/v2/docs/problems/:domain/:slug", {
      params: Schema.Struct({
        domain: Schema.String.check(Schema.isPattern(/^[a-z]+$/u), Schema.isMaxLength(32)),
        slug: Schema.String.check(Schema.isPattern(/^[a-z-]+$/u), Schema.isMaxLength(64))
      }),
      success: Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/html" })),
      error: problem(NotFound)
    })
      .annotate(OpenApi.Summary, "Problem type page")
      .annotate(
        OpenApi.Description,
        "The human-readable page behind a problem document's `type` URI."
      )
  )
  .annotate(OpenApi.Title, "Problems")
  .annotate(OpenApi.Description, "Registries behind the problem documents.")
{}
