/**
 * Edit proposals, their moderation, revisions and the field registry (docs/writing.md, "Edit
 * proposals"). Every route that acts for a person declares its rule (schema/Api/Writes.ts).
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { NotModified, RequiredScope } from "../Annotations.js"
import { Site } from "../Catalog/Claim.js"
import { Id } from "../Catalog/Common.js"
import { EntityTypeSchema } from "../Catalog/Fields.js"
import {
  Amendment,
  AmendProposalInputBody,
  CreateProposalInputBody,
  DecideProposalInputBody,
  ListAmendment,
  ListFieldInfo,
  ListProposal,
  ListRevision,
  Proposal,
  ProposalState,
  Revision
} from "../Catalog/Proposal.js"
import {
  EntityMerged,
  InvalidCursor,
  InvalidStateTransition,
  LimitTooLarge,
  NotFound,
  problem,
  ValidationFailed
} from "../Problem.js"
import { Authorization, WriteAuthorization } from "./Security.js"
import { declare, lenientQuery, paging, type RouteRule, strictBody, strictParams } from "./Writes.js"

export const ProposalPath = Schema.Struct({ id: Id.annotate({ description: "The proposal id." }) })

export const ListProposalsParams = Schema.Struct({
  ...paging,
  state: Schema.optional(ProposalState.annotate({ description: "Only proposals in this state." })),
  entity_type: Schema.optional(EntityTypeSchema.annotate({ description: "Only proposals on this entity type." })),
  entity_id: Schema.optional(Id.annotate({ description: "Only proposals on this entity (with `entity_type`)." }))
})
export type ListProposalsParams = typeof ListProposalsParams.Type

export const ProposalQueueParams = Schema.Struct({
  ...paging,
  state: Schema.optional(ProposalState.annotate({ description: "Proposals in this state (default `open`)." })),
  entity_type: Schema.optional(EntityTypeSchema.annotate({ description: "Only proposals on this entity type." })),
  site: Schema.optional(Site.annotate({ description: "Only this site's proposals." }))
})
export type ProposalQueueParams = typeof ProposalQueueParams.Type

export const PagingParams = Schema.Struct(paging)
export type PagingParams = typeof PagingParams.Type

/** The collections whose records proposals edit, as the read paths name them. */
export const RevisionCollection = Schema.Literals([
  "works",
  "releases",
  "characters",
  "credit-names",
  "companies",
  "tags",
  "engines"
]).annotate({ description: "The entity's collection, as in its read path (`works`, `credit-names`, ...)." })
export type RevisionCollection = typeof RevisionCollection.Type

export const EntityRevisionsPath = Schema.Struct({ collection: RevisionCollection, id: Id })
export const RevisionPath = Schema.Struct({ id: Id.annotate({ description: "The revision id." }) })

/** The rules of the proposal routes, by endpoint name. */
export const proposalRules = {
  createProposal: { user: true, tenant: false, idempotent: true, quota: "proposals" },
  listProposals: { user: true, tenant: false, idempotent: false },
  getProposal: { user: true, tenant: true, idempotent: false },
  amendProposal: { user: true, tenant: true, idempotent: true, ifMatch: "required", quota: "proposals" },
  listAmendments: { user: true, tenant: true, idempotent: false },
  withdrawProposal: { user: true, tenant: true, idempotent: true, ifMatch: "optional" },
  proposalQueue: { user: true, role: "moderator", tenant: false, idempotent: false },
  moderationProposal: { user: true, role: "moderator", tenant: false, idempotent: false },
  decideProposal: {
    user: true,
    role: "moderator",
    tenant: false,
    idempotent: true,
    ifMatch: "required",
    quota: "decisions"
  }
} as const satisfies Record<string, RouteRule>

const etag = "The proposal's strong `ETag` changes with every change to it (an amendment, a withdrawal, a decision); " +
  "send it back as `If-Match`."

const validation =
  "Each bad entry of the patch is a 422 `VALIDATION_FAILED` error at `/patch/<key>`: `UNKNOWN_VALUE` " +
  "for a key the entity type does not have, `IMMUTABLE` for a derived one, the value's own reason (with its params) " +
  "otherwise, and `UNKNOWN_REFERENCE` for a value that names a row that does not exist."

export class ProposalsApi extends HttpApiGroup.make("proposals")
  .add(
    declare(
      "catalog:write",
      proposalRules.createProposal,
      ({ headers, problems }) =>
        HttpApiEndpoint.post("createProposal", "/v2/proposals", {
          headers,
          payload: CreateProposalInputBody,
          success: Proposal.annotate({ identifier: undefined }).pipe(HttpApiSchema.status(201)),
          error: [problem(NotFound), problem(EntityMerged), ...problems]
        })
          .annotate(OpenApi.Summary, "Propose an edit")
          .annotate(
            OpenApi.Description,
            "Proposes new values for fields of one catalog entity (`GET /v2/catalog/fields` lists the keys). " +
              `${validation} An entity that does not exist (or that the credential's content limit hides) is 404; a ` +
              "merged-away one is 404 `ENTITY_MERGED` with `current_id`. Answers 201 with `Location` and the " +
              "proposal's `ETag`."
          )
    )
  )
  .add(
    declare(
      "catalog:write",
      proposalRules.listProposals,
      ({ headers, problems }) =>
        HttpApiEndpoint.get("listProposals", "/v2/proposals", {
          query: ListProposalsParams,
          headers,
          success: ListProposal,
          error: [problem(LimitTooLarge), problem(InvalidCursor), ...problems]
        })
          .annotate(OpenApi.Summary, "The site's proposals")
          .annotate(OpenApi.Description, "Every proposal of the credential's site, newest first.")
    )
  )
  .add(
    declare(
      "catalog:write",
      proposalRules.getProposal,
      ({ headers, problems }) =>
        HttpApiEndpoint.get("getProposal", "/v2/proposals/:id", {
          params: ProposalPath,
          headers,
          success: [Proposal, NotModified.pipe(HttpApiSchema.status(304))],
          error: [problem(NotFound), ...problems]
        })
          .annotate(OpenApi.Summary, "One proposal")
          .annotate(OpenApi.Description, `A proposal of the credential's site. ${etag}`)
    )
  )
  .add(
    declare(
      "catalog:write",
      proposalRules.amendProposal,
      ({ headers, problems }) =>
        HttpApiEndpoint.post("amendProposal", "/v2/proposals/:id/amendments", {
          params: ProposalPath,
          headers,
          payload: AmendProposalInputBody,
          success: Amendment.annotate({ identifier: undefined }).pipe(HttpApiSchema.status(201)),
          error: [problem(NotFound), problem(InvalidStateTransition), ...problems]
        })
          .annotate(OpenApi.Summary, "Amend a proposal")
          .annotate(
            OpenApi.Description,
            "Appends an amendment to an open proposal: `set` corrects or adds keys, `unset` (at most 100) takes keys " +
              "out of the patch; the effective patch is the patch with every amendment applied in `seq` order. " +
              "Entries are checked as a proposal's are, at `/set/<key>` and `/unset/<n>`. A proposal that is not " +
              `\`open\` is 409 \`INVALID_STATE_TRANSITION\`. \`If-Match\` is required. ${etag} The answer carries the ` +
              "proposal's new `ETag`."
          )
    )
  )
  .add(
    declare(
      "catalog:write",
      proposalRules.listAmendments,
      ({ headers, problems }) =>
        HttpApiEndpoint.get("listAmendments", "/v2/proposals/:id/amendments", {
          params: ProposalPath,
          query: PagingParams,
          headers,
          success: ListAmendment,
          error: [problem(NotFound), problem(LimitTooLarge), problem(InvalidCursor), ...problems]
        })
          .annotate(OpenApi.Summary, "A proposal's amendments")
          .annotate(OpenApi.Description, "The amendments of a proposal of the credential's site, in `seq` order.")
    )
  )
  .add(
    declare(
      "catalog:write",
      proposalRules.withdrawProposal,
      ({ headers, problems }) =>
        HttpApiEndpoint.post("withdrawProposal", "/v2/proposals/:id/withdrawal", {
          params: ProposalPath,
          headers,
          success: Proposal,
          error: [problem(NotFound), problem(InvalidStateTransition), ...problems]
        })
          .annotate(OpenApi.Summary, "Withdraw a proposal")
          .annotate(
            OpenApi.Description,
            "`open` -> `withdrawn`, by the proposing site. A proposal that is not `open` is 409 " +
              `\`INVALID_STATE_TRANSITION\`. ${etag}`
          )
    )
  )
  .middleware(WriteAuthorization)
  .annotate(HttpApi.ParamsParseOptions, strictParams)
  .annotate(HttpApi.QueryParseOptions, lenientQuery)
  .annotate(HttpApi.PayloadParseOptions, strictBody)
  .annotate(OpenApi.Title, "Proposals")
  .annotate(
    OpenApi.Description,
    "Edit proposals on catalog entities. Every route acts for a user: an identity access token, or an API key " +
      "created for a user; a proposal belongs to the site of the credential that made it."
  )
{}

export class ProposalModerationApi extends HttpApiGroup.make("proposalModeration")
  .add(
    declare(
      "moderation",
      proposalRules.proposalQueue,
      ({ headers, problems }) =>
        HttpApiEndpoint.get("proposalQueue", "/v2/moderation/proposals", {
          query: ProposalQueueParams,
          headers,
          success: ListProposal,
          error: [problem(LimitTooLarge), problem(InvalidCursor), ...problems]
        })
          .annotate(OpenApi.Summary, "Proposal moderation queue")
          .annotate(OpenApi.Description, "Proposals in a state (default `open`), oldest first.")
    )
  )
  .add(
    declare(
      "moderation",
      proposalRules.moderationProposal,
      ({ headers, problems }) =>
        HttpApiEndpoint.get("moderationProposal", "/v2/moderation/proposals/:id", {
          params: ProposalPath,
          headers,
          success: [Proposal, NotModified.pipe(HttpApiSchema.status(304))],
          error: [problem(NotFound), ...problems]
        })
          .annotate(OpenApi.Summary, "One proposal (moderation)")
          .annotate(OpenApi.Description, `Any site's proposal, for a moderator. ${etag}`)
    )
  )
  .add(
    declare(
      "moderation",
      proposalRules.decideProposal,
      ({ headers, problems }) =>
        HttpApiEndpoint.post("decideProposal", "/v2/moderation/proposals/:id/decisions", {
          params: ProposalPath,
          headers,
          payload: DecideProposalInputBody,
          success: Proposal,
          error: [problem(NotFound), problem(InvalidStateTransition), problem(ValidationFailed), ...problems]
        })
          .annotate(OpenApi.Summary, "Merge or decline a proposal")
          .annotate(
            OpenApi.Description,
            "`merge`: in one transaction, writes the effective patch to the entity, records a revision whose " +
              "FieldDiffs hold each changed field's value just before the merge (`from`) and the value written " +
              "(`to`), and emits the entity's change-feed row; the proposal becomes `merged` with the revision's id. " +
              "A key another merge changed since the proposal was opened still merges (its `from` is the value it " +
              "replaced). `decline`: the proposal becomes `declined`. A proposal that is not `open`, or whose entity " +
              "was merged away or names a row that no longer exists, is 409 `INVALID_STATE_TRANSITION`. " +
              `\`If-Match\` is required; of two moderators deciding at once, exactly one wins. ${etag}`
          )
    )
  )
  .middleware(WriteAuthorization)
  .annotate(HttpApi.ParamsParseOptions, strictParams)
  .annotate(HttpApi.QueryParseOptions, lenientQuery)
  .annotate(HttpApi.PayloadParseOptions, strictBody)
  .annotate(OpenApi.Title, "Proposal moderation")
  .annotate(
    OpenApi.Description,
    "Deciding edit proposals. Needs the `moderation` scope and a user with the `moderator` role or above."
  )
{}

export class RevisionsApi extends HttpApiGroup.make("revisions")
  .add(
    HttpApiEndpoint.get("listFields", "/v2/catalog/fields", { success: ListFieldInfo })
      .annotate(OpenApi.Summary, "The field registry")
      .annotate(
        OpenApi.Description,
        "Every field key of every entity type a proposal may name: its entity type, whether it is writable, and " +
          "the JSON Schema of its value. The same keys key snapshots, patches and FieldDiffs."
      )
  )
  .add(
    HttpApiEndpoint.get("listRevisions", "/v2/catalog/:collection/:id/revisions", {
      params: EntityRevisionsPath,
      query: PagingParams,
      success: ListRevision,
      error: [problem(NotFound), problem(EntityMerged), problem(LimitTooLarge), problem(InvalidCursor)]
    })
      .annotate(OpenApi.Summary, "An entity's revisions")
      .annotate(
        OpenApi.Description,
        "The merged edits of an entity, newest first, including those recorded on entities merged into it. A " +
          "merged-away id is 404 `ENTITY_MERGED` (read the revisions at `current_id`)."
      )
  )
  .add(
    HttpApiEndpoint.get("getRevision", "/v2/revisions/:id", {
      params: RevisionPath,
      success: Revision,
      error: [problem(NotFound)]
    })
      .annotate(OpenApi.Summary, "One revision")
      .annotate(OpenApi.Description, "A merged edit with its FieldDiffs.")
  )
  .middleware(Authorization)
  .annotate(HttpApi.ParamsParseOptions, strictParams)
  .annotate(HttpApi.QueryParseOptions, lenientQuery)
  .annotate(RequiredScope, "catalog:read")
  .annotate(OpenApi.Title, "Revisions")
{}
