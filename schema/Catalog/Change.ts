/**
 * The mirror feed and the merge map (docs/change-feed.md).
 */
import { Schema } from "effect"
import { Id, ListOf, Timestamp } from "./Common.js"

export const TargetObject = Schema.Literals([
  "work",
  "release",
  "character",
  "credit_name",
  "person",
  "company",
  "tag",
  "engine"
]).annotate({ description: "Entity type (closed)." })
export type TargetObject = typeof TargetObject.Type

export const Change = Schema.Struct({
  object: Schema.Literal("change"),
  target_object: TargetObject,
  id: Id,
  updated_at: Timestamp.annotate({ description: "The moment the row last changed." }),
  gone: Schema.optionalKey(
    Schema.Literal(true).annotate({
      description: "Present and true only when the id left the public population (merged away or no longer " +
        "served); never sent as false. Drop the mirrored row; if it was merged, the redirects list names its " +
        "replacement."
    })
  )
}).annotate({
  identifier: "Change",
  description: "One entity whose record changed. The feed lists each entity once, at its latest change, in " +
    "commit-safe order: a mirror that pages from a cold start and then keeps polling with the last cursor " +
    "never misses a change."
})
export type Change = typeof Change.Type

export const Redirect = Schema.Struct({
  object: Schema.Literal("redirect"),
  target_object: TargetObject,
  from_id: Id.annotate({ description: "The merged-away id." }),
  current_id: Id.annotate({ description: "The live id that replaced it (chains of merges already followed)." }),
  merged_at: Timestamp
}).annotate({
  identifier: "Redirect",
  description: "A merged-away id and the live id that replaced it."
})
export type Redirect = typeof Redirect.Type

export const ListChange = ListOf(Change, "ListChange")
export type ListChange = typeof ListChange.Type

export const ListRedirect = ListOf(Redirect, "ListRedirect")
export type ListRedirect = typeof ListRedirect.Type
