/**
 * How both OpenAPI documents write two things the generator of Effect 4 writes its own way, kept as
 * the published documents have always had them (clients and their generators read them). Applied by
 * each document's `OpenApi.Transform`: the identity API's (schema/Api/IdentityApi.ts) and the
 * catalog's (schema/Api/ProblemOpenApi.ts, `problemOpenApiTransform`). Documentation only: what
 * requests are accepted and what responses contain does not depend on it.
 */

type Json = Record<string, any>

const isObject = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

/** The operations of a document, in document order. */
export const operations = (spec: Json): Array<Json> =>
  Object.values<Json>(spec.paths ?? {}).flatMap((item) =>
    Object.values<unknown>(item).filter((op): op is Json => isObject(op) && isObject(op.responses))
  )

/** Keywords that only describe. */
const annotationKeywords = new Set(["title", "description", "examples", "default", "readOnly", "writeOnly"])

/**
 * A reference described for one use: `{allOf: [{$ref}], description}`, not the generator's
 * `{allOf: [{$ref}, {description}]}` (the same schema).
 */
const describedReference = (node: unknown): unknown => {
  if (Array.isArray(node)) return node.map(describedReference)
  if (!isObject(node)) return node
  const out: Json = {}
  for (const [key, value] of Object.entries(node)) out[key] = describedReference(value)
  const allOf = out.allOf
  if (
    Object.keys(out).length === 1 && Array.isArray(allOf) && allOf.length === 2 &&
    isObject(allOf[0]) && Object.keys(allOf[0]).length === 1 && typeof allOf[0].$ref === "string" &&
    isObject(allOf[1]) && Object.keys(allOf[1]).every((key) => annotationKeywords.has(key))
  ) {
    return { allOf: [allOf[0]], ...allOf[1] }
  }
  return out
}

/**
 * Applies the conventions to a document: a parameter's description stands on the parameter (where
 * documentation UIs and client generators read it) as well as on its schema, and a described
 * reference is written as above.
 */
export const documentConventions = (spec: Json): Json => {
  for (const op of operations(spec)) {
    for (const parameter of op.parameters ?? []) {
      const description = parameter.schema?.description
      if (typeof description === "string" && parameter.description === undefined) parameter.description = description
    }
  }
  if (spec.paths !== undefined) spec.paths = describedReference(spec.paths)
  if (spec.components?.schemas !== undefined) spec.components.schemas = describedReference(spec.components.schemas)
  return spec
}
