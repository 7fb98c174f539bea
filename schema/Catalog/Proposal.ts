/**
 * Edit proposals, their amendments, revisions and the field registry's listing (docs/writing.md,
 * "Edit proposals").
 */
import { Schema } from "effect"
import { isStorable, isStorableJson } from "../Text.js"
import { SiteId } from "./Claim.js"
import { Id, ListOf, Timestamp } from "./Common.js"
import { EntityTypeSchema, FieldKey, ProposalNote } from "./Fields.js"

export const ProposalState = Schema.Literals(["open", "merged", "declined", "withdrawn"]).annotate({
  description: "Proposal state (closed): `open` until a moderator merges or declines it, or its site withdraws it."
})
export type ProposalState = typeof ProposalState.Type

/**
 * A field-key -> value map as a request carries it. Every text in it, at any depth, is storable
 * (schema/Text.ts); each value is then checked against its key's schema (schema/Catalog/Fields.ts) by
 * the route, which reports every bad entry at `/patch/<key>`.
 */
export const Patch = Schema.Record(FieldKey, Schema.Unknown.check(isStorableJson)).annotate({
  identifier: "Patch",
  description: "Field key -> new value (`catalog.work.display_name` -> \"...\"). `GET /v2/catalog/fields` lists " +
    "the keys and their values' schemas; `GET /v2/moderation/snapshots/{object}/{id}` shows the current values."
})
export type Patch = typeof Patch.Type

const note = ProposalNote.annotate({ description: "Free text for display, at most 2000 characters." })

export const Proposal = Schema.Struct({
  object: Schema.Literal("proposal"),
  id: Id,
  entity_type: EntityTypeSchema,
  entity_id: Id,
  state: ProposalState,
  site: Schema.String.check(Schema.isMaxLength(64)).annotate({ description: "The proposing site." }),
  proposer_uid: SiteId.annotate({ description: "The user who proposed (the site's user id)." }),
  patch: Patch.annotate({ identifier: undefined, description: "The patch as first proposed." }),
  effective_patch: Patch.annotate({
    identifier: undefined,
    description: "The patch with every amendment's `set` and `unset` applied in `seq` order: what a merge writes."
  }),
  note,
  amendment_count: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)),
  moderator_uid: Schema.NullOr(SiteId).annotate({ description: "Who merged or declined it; null until then." }),
  decision_note: Schema.NullOr(note).annotate({ description: "The moderator's note; null until decided." }),
  revision_id: Schema.NullOr(Id).annotate({ description: "The revision a merge recorded; null otherwise." }),
  created_at: Timestamp,
  updated_at: Timestamp.annotate({ description: "When the proposal last changed (amended, withdrawn, decided)." }),
  closed_at: Schema.NullOr(Timestamp).annotate({ description: "When it left `open`; null while open." })
}).annotate({
  identifier: "Proposal",
  description: "An edit proposal on one catalog entity. Its strong `ETag` changes with every change to it."
})
export type Proposal = typeof Proposal.Type

export const Amendment = Schema.Struct({
  object: Schema.Literal("amendment"),
  id: Id,
  seq: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)).annotate({
    description: "Position in the proposal's amendment chain, from 1."
  }),
  amender_uid: SiteId.annotate({ description: "The user who amended (the site's user id)." }),
  note,
  set: Patch.annotate({ identifier: undefined, description: "Keys set or corrected by this amendment." }),
  unset: Schema.Array(FieldKey).annotate({ description: "Keys this amendment took out of the patch." }),
  created_at: Timestamp
}).annotate({ identifier: "Amendment", description: "A correction appended to an open proposal." })
export type Amendment = typeof Amendment.Type

export const FieldDiff = Schema.Struct({
  key: FieldKey,
  from: Schema.Unknown.annotate({
    description: "The value just before the merge (whichever merge or import wrote it); null when unset."
  }),
  to: Schema.Unknown.annotate({ description: "The value the merge wrote; null when cleared." })
}).annotate({ identifier: "FieldDiff", description: "One field a revision changed." })
export type FieldDiff = typeof FieldDiff.Type

export const Revision = Schema.Struct({
  object: Schema.Literal("revision"),
  id: Id,
  entity_type: EntityTypeSchema,
  entity_id: Id.annotate({
    description: "The entity the revision was recorded on (a merged-away id stays as it was recorded)."
  }),
  proposal_id: Id,
  proposer_uid: SiteId,
  moderator_uid: SiteId,
  created_at: Timestamp,
  diff: Schema.Array(FieldDiff).annotate({ description: "Every field the merge changed; `[]` when none changed." })
}).annotate({ identifier: "Revision", description: "A merged edit of a catalog entity." })
export type Revision = typeof Revision.Type

export const FieldInfo = Schema.Struct({
  object: Schema.Literal("field"),
  key: FieldKey,
  entity_type: EntityTypeSchema,
  writable: Schema.Boolean.annotate({ description: "False for a derived field: a patch naming it is `IMMUTABLE`." }),
  schema: Schema.Record(Schema.String, Schema.Unknown).annotate({
    description: "The JSON Schema (draft 2020-12) of the field's value."
  })
}).annotate({ identifier: "FieldInfo", description: "One key of the field registry." })
export type FieldInfo = typeof FieldInfo.Type

// Every failing field is reported, and a member the body's schema does not name is refused: the
// endpoints decode bodies with `errors: "all"` and `onExcessProperty: "error"`.
export const CreateProposalInputBody = Schema.Struct({
  entity_type: Schema.String.check(Schema.isMaxLength(64), isStorable).annotate({
    description: "Editing-engine type, e.g. `catalog.work` (see `GET /v2/catalog/fields`)."
  }),
  entity_id: Schema.String.check(Schema.isPattern(/^[0-9]+$/u), Schema.isMaxLength(20)).annotate({
    description: "The entity's id (digits, at most 20)."
  }),
  patch: Patch.annotate({ identifier: undefined, description: "Field key -> new value; at least one key." }),
  note: Schema.optionalKey(note)
}).annotate({ identifier: "CreateProposalInputBody" })
export type CreateProposalInputBody = typeof CreateProposalInputBody.Type

export const AmendProposalInputBody = Schema.Struct({
  set: Schema.optionalKey(Patch.annotate({ identifier: undefined, description: "Field key -> corrected value." })),
  unset: Schema.optionalKey(
    Schema.Array(Schema.String.check(Schema.isMaxLength(128), isStorable)).check(Schema.isMaxLength(100)).annotate({
      description: "Keys to take out of the patch; at most 100."
    })
  ),
  note: Schema.optionalKey(note)
}).annotate({ identifier: "AmendProposalInputBody" })
export type AmendProposalInputBody = typeof AmendProposalInputBody.Type

export const ProposalDecision = Schema.Literals(["merge", "decline"])
export type ProposalDecision = typeof ProposalDecision.Type

export const DecideProposalInputBody = Schema.Struct({
  decision: ProposalDecision,
  note: Schema.optionalKey(note)
}).annotate({ identifier: "DecideProposalInputBody" })
export type DecideProposalInputBody = typeof DecideProposalInputBody.Type

export const ListProposal = ListOf(Proposal, "ListProposal")
export const ListAmendment = ListOf(Amendment, "ListAmendment")
export const ListRevision = ListOf(Revision, "ListRevision")
export const ListFieldInfo = ListOf(FieldInfo, "ListFieldInfo")
