/**
 * How the catalog's OpenAPI document describes its errors: every error response is what
 * src/platform/ProblemDocument.ts renders, an `application/problem+json` document (RFC 9457;
 * docs/api-contract.md, "Errors: catalog problem documents"). Documentation only: what requests are
 * accepted and what responses contain does not depend on it.
 */
import { SchemaAST } from "effect"
import type { Schema } from "effect"
import { InvalidParameter, problem, ProblemResponses } from "../Problem.js"
import { documentConventions, operations } from "./OpenApiConventions.js"
import { Authorization, WriteAuthorization } from "./Security.js"

/** The name of a problem's schema in the OpenAPI document (`InvalidParameterProblem`). */
const problemRef = (schema: Schema.Top) =>
  `#/components/schemas/${SchemaAST.resolveIdentifier(SchemaAST.toEncoded(schema.ast))}`

/**
 * The order the document lists a status's problems in, as it always has: the API-wide ones (the
 * `ProblemResponses` middleware's), then the credential middleware's, then the endpoint's own. (The
 * platform lists the endpoint's own first.)
 */
const problemListing: ReadonlyArray<string> = Array.from(
  new Set(
    [...ProblemResponses.error, ...Authorization.error, ...WriteAuthorization.error].map(problemRef)
  )
)

/**
 * What every 400 is described as, as the document always has: a request the endpoint's declared
 * schemas or checks refused (the text of Effect 3's decode error, which the document listed first on
 * every 400 and whose place INVALID_PARAMETER takes).
 */
const badRequestDescription = "The request did not match the expected schema"

/**
 * Documents every error response as what the middleware sends: a problem document. The platform
 * documents a status with several problem members as a plain union with the default JSON media
 * type, described by all their descriptions joined; here it is one `application/problem+json`
 * union, listed in the document's order and described by its first problem. Every 400 lists
 * INVALID_PARAMETER (the refused requests). Then the conventions both documents share
 * (schema/Api/OpenApiConventions.ts).
 */
export const problemOpenApiTransform = (spec: Record<string, any>): Record<string, any> => {
  const invalidParameterRef = problemRef(problem(InvalidParameter))
  const schemas: Record<string, any> = spec.components?.schemas ?? {}
  const rank = (s: any) => {
    const index = problemListing.indexOf(s.$ref)
    return index < 0 ? problemListing.length : index
  }
  const descriptionOf = (s: any): unknown =>
    typeof s.$ref === "string" ? schemas[s.$ref.slice("#/components/schemas/".length)]?.description : undefined
  const membersOf = (schema: any): Array<any> => schema === undefined ? [] : schema.anyOf ?? [schema]
  for (const op of operations(spec)) {
    for (const [status, response] of Object.entries<any>(op.responses)) {
      if (Number(status) < 400 || response.content === undefined) continue
      const members = [
        ...membersOf(response.content["application/problem+json"]?.schema),
        ...membersOf(response.content["application/json"]?.schema)
      ]
      if (status === "400" && !members.some((s) => s.$ref === invalidParameterRef)) {
        members.push({ $ref: invalidParameterRef })
      }
      // `sort` is stable: the endpoint's own problems keep their declared order.
      const unique = members
        .filter((s, i) => members.findIndex((t) => JSON.stringify(t) === JSON.stringify(s)) === i)
        .sort((a, b) => rank(a) - rank(b))
      response.content = {
        "application/problem+json": { schema: unique.length === 1 ? unique[0] : { anyOf: unique } }
      }
      const first = descriptionOf(unique[0])
      if (status === "400") response.description = badRequestDescription
      else if (typeof first === "string") response.description = first
    }
    // VALIDATION_FAILED is declared API-wide; it can only happen where there is a body.
    if (op.requestBody === undefined && op.responses["422"] !== undefined) delete op.responses["422"]
  }
  return documentConventions(spec)
}
