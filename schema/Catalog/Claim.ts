/**
 * Claims, claim events and the bodies that write them (docs/writing.md, "Claims").
 */
import { Schema, Struct } from "effect"
import { isStorable, isStorableJson } from "../Text.js"
import { Id, ListOf, NameInput, Timestamp } from "./Common.js"

export const ClaimState = Schema.Literals(["none", "live", "draft", "pending", "declined", "hidden"]).annotate({
  description: "Claim state (closed). `none`: not claimed."
})
export type ClaimState = typeof ClaimState.Type

export const Site = Schema.String.check(Schema.isPattern(/^[a-z][a-z0-9_]*$/u), Schema.isMaxLength(64)).annotate({
  description: "A site name (`^[a-z][a-z0-9_]*$`, at most 64 characters)."
})

/** Ids in the claiming site's own id space. */
export const SiteId = Schema.String.check(Schema.isPattern(/^[0-9]+$/u), Schema.isMaxLength(20)).annotate({
  description: "An id in the site's own id space (digits, at most 20)."
})

export const Note = Schema.String.check(Schema.isMaxLength(2000), isStorable).annotate({
  description: "Free text for display, at most 2000 characters."
})

export const ClaimEvent = Schema.Struct({
  object: Schema.Literal("claim_event"),
  id: Id.annotate({ description: "Ascending in commit order: the watermark a mirror stores." }),
  work_id: Id,
  from_state: Schema.NullOr(ClaimState).annotate({ description: "Null on the event that created the claim." }),
  to_state: ClaimState,
  reason: Schema.NullOr(Note).annotate({ description: "Null when none was given; usually a decline reason." }),
  actor_uid: Schema.String.annotate({ description: "The identity user id of the actor." }),
  site: Schema.String.check(Schema.isMaxLength(64)).annotate({ description: "The claiming site (open vocabulary)." }),
  product_work_id: Schema.NullOr(SiteId).annotate({
    description: "The claim's current product-side id (a snapshot, not the value at event time); null when " +
      "unclaimed."
  }),
  created_at: Timestamp
}).annotate({ identifier: "ClaimEvent", description: "One claim state change." })
export type ClaimEvent = typeof ClaimEvent.Type

/** The newest event on a work, as a claim record shows it: a `ClaimEvent` without the work's fields. */
export const ClaimEventRef = ClaimEvent.mapFields(Struct.omit(["work_id", "site", "product_work_id"])).annotate({
  identifier: "ClaimEventRef",
  description: "The newest event on a work, by anyone (`actor_uid` may be a moderator)."
})
export type ClaimEventRef = typeof ClaimEventRef.Type

export const ClaimRecord = Schema.Struct({
  object: Schema.Literal("claim"),
  id: Id.annotate({ description: "The catalog work id." }),
  state: ClaimState,
  display_name: Schema.String.annotate({ description: "The work's display name." }),
  site: Schema.String.check(Schema.isMaxLength(64)).annotate({ description: "Empty when unclaimed." }),
  product_work_id: Schema.NullOr(SiteId).annotate({
    description: "The site's own id for the work; null when unclaimed or not given."
  }),
  // On the key: annotating the schema would describe (and name) a second ClaimEventRef.
  last_event: Schema.optionalKey(ClaimEventRef).annotateKey({
    description: "Newest event on the work by anyone; absent on moderation-queue rows."
  }),
  acted_count: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))).annotate({
    description: "Times the bearer acted on the work (within `site=` when given); on the bearer's faces only."
  }),
  first_acted_at: Schema.optionalKey(Schema.NullOr(Timestamp)).annotate({
    description: "When the bearer first acted on the work; null when never. On the bearer's faces only."
  })
}).annotate({ identifier: "ClaimRecord", description: "A work's claim as a site or a moderator sees it." })
export type ClaimRecord = typeof ClaimRecord.Type

export const ClaimDecision = Schema.Literals(["approve", "decline", "ban", "unban"])
export type ClaimDecision = typeof ClaimDecision.Type

export const ClaimDecisionRecord = Schema.Struct({
  object: Schema.Literal("decision"),
  id: Id.annotate({ description: "The id of the claim event this decision created." }),
  decision: ClaimDecision,
  note: Note,
  from_state: Schema.NullOr(ClaimState),
  to_state: ClaimState.annotate({ description: "The authoritative outcome (unban has no fixed target)." })
}).annotate({ identifier: "ClaimDecisionRecord", description: "A moderator's decision on a claim." })
export type ClaimDecisionRecord = typeof ClaimDecisionRecord.Type

export const ClaimRefBody = Schema.Struct({
  source: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(64), isStorable).annotate({
    description: "Upstream source (open vocabulary)."
  }),
  external_id: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(256), isStorable).annotate({
    description: "The upstream id, matched exactly."
  })
}).annotate({ identifier: "ClaimRefBody" })

/**
 * A field-key -> value map (`catalog.work.display_name` -> "..."), the snapshot and minting shape. A
 * value is checked against its key's own schema later (src/catalog/claims/WorkFields.ts); every text
 * in it, at any depth, is storable before that (schema/Text.ts).
 */
export const FieldValues = Schema.Record(
  Schema.String.check(Schema.isPattern(/^[a-z0-9_]+(\.[a-z0-9_]+)+$/u), Schema.isMaxLength(128)),
  Schema.Unknown.check(isStorableJson)
).annotate({
  identifier: "FieldValues",
  description: "Field key -> value. Keys are `<entity_type>.<field>` (`catalog.work.display_name`)."
})
export type FieldValues = typeof FieldValues.Type

// Every failing field is reported: the endpoint decodes this body with `errors: "all"`
// (`HttpApi.PayloadParseOptions`; a Schema 4 schema carries no parse options).
export const CreateClaimInputBody = Schema.Struct({
  work_id: Schema.optionalKey(Id.annotate({ description: "An existing catalog work to claim." })),
  refs: Schema.optionalKey(
    Schema.Array(ClaimRefBody).check(Schema.isMaxLength(100)).annotate({
      description: "Upstream references; used when `work_id` is absent. At most 100."
    })
  ),
  site_work_id: Schema.optionalKey(SiteId.annotate({
    description: "The site's own id for the work. Alone with `display_name` it mints a work anchored to it."
  })),
  display_name: Schema.optionalKey(
    NameInput.annotate({ description: "Required to mint when `refs` match nothing." })
  ),
  field_values: Schema.optionalKey(FieldValues.annotate({
    // Described for this use, so written inline (see `Image` in Common.ts).
    identifier: undefined,
    description: "Mints a work from the map; with `work_id` the request is 422. Top-level `display_name` wins " +
      "over the `catalog.work.display_name` key."
  }))
}).annotate({ identifier: "CreateClaimInputBody" })
export type CreateClaimInputBody = typeof CreateClaimInputBody.Type

// Every failing field is reported: the endpoint decodes this body with `errors: "all"`
// (`HttpApi.PayloadParseOptions`; a Schema 4 schema carries no parse options).
export const DecideClaimInputBody = Schema.Struct({
  decision: ClaimDecision,
  note: Schema.optionalKey(Note.annotate({ description: "Required to decline." }))
}).annotate({ identifier: "DecideClaimInputBody" })
export type DecideClaimInputBody = typeof DecideClaimInputBody.Type

export const ListClaimRecord = ListOf(ClaimRecord, "ListClaimRecord")
export type ListClaimRecord = typeof ListClaimRecord.Type

export const ListClaimEvent = ListOf(ClaimEvent, "ListClaimEvent")
export type ListClaimEvent = typeof ListClaimEvent.Type

/**
 * `GET /v2/moderation/snapshots/{object}/{id}`: the current values of an entity's field keys, in the
 * same shape as `field_values` (so a snapshot can be edited and sent back to mint).
 */
export const Snapshot = FieldValues.annotate({
  identifier: "Snapshot",
  description: "Field key -> current value of one entity (the `field_values` shape)."
})
