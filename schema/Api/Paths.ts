/**
 * Where each catalog entity lives: the canonical path of a record, used for the
 * `Link: rel="canonical"` of ENTITY_MERGED and by the endpoint declarations.
 */
export const EntityCollections = {
  work: "works",
  release: "releases",
  character: "characters",
  credit_name: "credit-names",
  person: "persons",
  company: "companies",
  tag: "tags",
  engine: "engines"
} as const

export type EntityObject = keyof typeof EntityCollections

export const entityCanonicalPath = (object: string, id: string): string | undefined => {
  const collection = (EntityCollections as Record<string, string>)[object]
  return collection === undefined ? undefined : `/v2/catalog/${collection}/${id}`
}
