import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Schema } from "effect"
import { NotFound, problem, ReasonEntry } from "../Problem.js"

export const ReasonList = Schema.Struct({
  object: Schema.Literal("list"),
  items: Schema.Array(ReasonEntry)
}).annotate({ identifier: "ReasonList" })

/** The error registries, for clients and for humans following a problem's `type` link. */
export class ProblemsApi extends HttpApiGroup.make("problems")
  .add(
    HttpApiEndpoint.get("listReasons", "/v2/problems/reasons")
      .addSuccess(ReasonList)
      .annotate(OpenApi.Summary, "Field-error reasons")
      .annotate(
        OpenApi.Description,
        "The closed registry of `errors[].reason` values, each with the `params` keys it may carry."
      )
  )
  .add(
    HttpApiEndpoint.get("problemType", "/v2/docs/problems/:domain/:slug")
      .setPath(Schema.Struct({
        domain: Schema.String.pipe(Schema.pattern(/^[a-z]+$/), Schema.maxLength(32)),
        slug: Schema.String.pipe(Schema.pattern(/^[a-z-]+$/), Schema.maxLength(64))
      }))
      .addSuccess(HttpApiSchema.Text({ contentType: "text/html" }))
      .addError(problem(NotFound))
      .annotate(OpenApi.Summary, "Problem type page")
      .annotate(
        OpenApi.Description,
        "The human-readable page behind a problem document's `type` URI."
      )
  )
  .annotate(OpenApi.Title, "Problems")
  .annotate(OpenApi.Description, "Registries behind the problem documents.")
{}
