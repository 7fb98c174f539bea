/**
 * Claims, their moderation and their event log (docs/writing.md). Every route that acts for a
 * person declares its rule (schema/Api/Writes.ts); the credential middleware, the write runner,
 * the OpenAPI document and the credential matrix test all read it from here.
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { NotModified, RequiredScope } from "../Annotations.js"
import { TargetObject } from "../Catalog/Change.js"
import {
  ClaimDecisionRecord,
  ClaimRecord,
  ClaimState,
  CreateClaimInputBody,
  DecideClaimInputBody,
  ListClaimEvent,
  ListClaimRecord,
  Site,
  Snapshot
} from "../Catalog/Claim.js"
import { Id } from "../Catalog/Common.js"
import { AlreadyExists, InvalidCursor, InvalidStateTransition, LimitTooLarge, NotFound, problem } from "../Problem.js"
import { Authorization, WriteAuthorization } from "./Security.js"
import { declare, lenientQuery, paging, type RouteRule, strictBody, strictParams } from "./Writes.js"

export const ClaimPath = Schema.Struct({
  work_id: Id.annotate({ description: "The catalog work id." })
})

export const ListClaimsParams = Schema.Struct({
  ...paging,
  site: Schema.optional(Site.annotate({ description: "Only the bearer's actions within this site." })),
  state: Schema.optional(ClaimState.annotate({ description: "Only claims currently in this state." }))
})
export type ListClaimsParams = typeof ListClaimsParams.Type

export const QueueParams = Schema.Struct({
  ...paging,
  state: Schema.optional(ClaimState.annotate({ description: "Claims in this state (default `pending`)." })),
  site: Schema.optional(Site.annotate({ description: "Only this site's claims." }))
})
export type QueueParams = typeof QueueParams.Type

export const ClaimEventsParams = Schema.Struct({
  ...paging,
  after: Schema.optional(
    Schema.String.check(Schema.isPattern(/^[0-9]{1,18}$/u)).annotate({
      description: "The highest event id the mirror has: only events above it. Next to `cursor`, only the " +
        "`after` of the request that started the listing (or none)."
    })
  ),
  work_id: Schema.optional(Id.annotate({ description: "Only this work's events." }))
})
export type ClaimEventsParams = typeof ClaimEventsParams.Type

export const SnapshotPath = Schema.Struct({
  object: TargetObject,
  id: Id
})

/** The rules of the claim routes, by endpoint name (the matrix test reads them from the route table). */
export const claimRules = {
  createClaim: { user: true, tenant: false, idempotent: true, quota: "claims" },
  listClaims: { user: true, tenant: false, idempotent: false },
  getClaim: { user: true, tenant: false, idempotent: false },
  submitClaim: { user: true, tenant: true, idempotent: true, ifMatch: "optional", quota: "claims" },
  releaseClaim: { user: true, tenant: true, idempotent: false, ifMatch: "optional" },
  moderationQueue: { user: true, role: "moderator", tenant: false, idempotent: false },
  decideClaim: {
    user: true,
    role: "moderator",
    tenant: false,
    idempotent: true,
    ifMatch: "required",
    quota: "decisions"
  },
  snapshot: { user: true, role: "moderator", tenant: false, idempotent: false }
} as const satisfies Record<string, RouteRule>

const etag = "The claim's strong `ETag` changes with every event on it; send it back as `If-Match`."

export class ClaimsApi extends HttpApiGroup.make("claims")
  .add(
    declare(
      "claims:write",
      claimRules.createClaim,
      ({ headers, problems }) =>
        HttpApiEndpoint.post("createClaim", "/v2/claims", {
          headers,
          payload: CreateClaimInputBody,
          // Written inline, as the document always had its 201s (see `Image` in Common.ts).
          success: ClaimRecord.annotate({ identifier: undefined }).pipe(HttpApiSchema.status(201)),
          error: [problem(AlreadyExists), ...problems]
        })
          .annotate(OpenApi.Summary, "Claim a work")
          .annotate(
            OpenApi.Description,
            "`work_id` claims an existing work. Otherwise `refs` are matched against the works' upstream " +
              "references: one work is claimed, several are 422 (`INCONSISTENT_WITH` on `/refs`), none mints a new " +
              "work (which needs `display_name`). `site_work_id` with `display_name` alone, or `field_values`, mint " +
              "a work too. A claim on an existing work starts `pending` (a `creator` publishes directly: `live`); a " +
              "minted work starts `draft` and stays invisible to every read until its claim is `live`. A work holds " +
              "one claim at a time: 409 `ALREADY_EXISTS`. Answers 201 with `Location` and the claim's `ETag`."
          )
    )
  )
  .add(
    declare(
      "claims:write",
      claimRules.listClaims,
      ({ headers, problems }) =>
        HttpApiEndpoint.get("listClaims", "/v2/claims", {
          query: ListClaimsParams,
          headers,
          success: ListClaimRecord,
          error: [problem(LimitTooLarge), problem(InvalidCursor), ...problems]
        })
          .annotate(OpenApi.Summary, "The bearer's claims")
          .annotate(
            OpenApi.Description,
            "Every work the bearer acted on (created, submitted, released or decided), oldest id first, with " +
              "`acted_count`, `first_acted_at` and `last_event`. `site=` counts only actions within that site."
          )
    )
  )
  .add(
    declare(
      "claims:write",
      claimRules.getClaim,
      ({ headers, problems }) =>
        HttpApiEndpoint.get("getClaim", "/v2/claims/:work_id", {
          params: ClaimPath,
          headers,
          success: [
            ClaimRecord,
            NotModified.pipe(HttpApiSchema.status(304))
          ],
          error: [problem(NotFound), ...problems]
        })
          .annotate(OpenApi.Summary, "One claim (the bearer's face)")
          .annotate(
            OpenApi.Description,
            "The claim as of the newest event the caller sees (docs/writing.md, \"Who sees what\"): state `none` " +
              "when the work is not claimed or its claim is not the caller's to see yet; 404 for a work the " +
              `catalog does not serve unless the caller sees an event on it. ${etag}`
          )
    )
  )
  .add(
    declare(
      "claims:write",
      claimRules.submitClaim,
      ({ headers, problems }) =>
        HttpApiEndpoint.post("submitClaim", "/v2/claims/:work_id/submission", {
          params: ClaimPath,
          headers,
          success: ClaimRecord,
          error: [problem(NotFound), problem(InvalidStateTransition), problem(AlreadyExists), ...problems]
        })
          .annotate(OpenApi.Summary, "Submit a claim for moderation")
          .annotate(
            OpenApi.Description,
            "`draft` -> `pending` (a `creator` publishes directly: `live`); `declined` -> `pending` whoever submits. " +
              "Other states: 409 `INVALID_STATE_TRANSITION`. A minted work going live takes its refs: 409 " +
              "`ALREADY_EXISTS` when another served work holds one. Only the claiming site may submit. " + etag
          )
    )
  )
  .add(
    declare(
      "claims:write",
      claimRules.releaseClaim,
      ({ headers, problems }) =>
        HttpApiEndpoint.delete("releaseClaim", "/v2/claims/:work_id", {
          params: ClaimPath,
          headers,
          success: ClaimRecord,
          error: [problem(NotFound), problem(InvalidStateTransition), ...problems]
        })
          .annotate(OpenApi.Summary, "Release a claim")
          .annotate(
            OpenApi.Description,
            "The claiming site gives the work up: -> `none`. A `hidden` (banned) claim cannot be released. A minted " +
              "work that was published stays in the catalog; one that never was stays invisible."
          )
    )
  )
  .middleware(WriteAuthorization)
  .annotate(HttpApi.ParamsParseOptions, strictParams)
  .annotate(HttpApi.QueryParseOptions, lenientQuery)
  .annotate(HttpApi.PayloadParseOptions, strictBody)
  .annotate(OpenApi.Title, "Claims")
  .annotate(
    OpenApi.Description,
    "Sites claim works for their products. Every route acts for a user: an identity access token, or an API key " +
      "created for a user."
  )
{}

export class ModerationApi extends HttpApiGroup.make("moderation")
  .add(
    declare(
      "moderation",
      claimRules.moderationQueue,
      ({ headers, problems }) =>
        HttpApiEndpoint.get("moderationQueue", "/v2/moderation/claims", {
          query: QueueParams,
          headers,
          success: ListClaimRecord,
          error: [problem(LimitTooLarge), problem(InvalidCursor), ...problems]
        })
          .annotate(OpenApi.Summary, "Moderation queue")
          .annotate(
            OpenApi.Description,
            "Claims in a state (default `pending`), longest waiting first; rows carry no `last_event`."
          )
    )
  )
  .add(
    declare(
      "moderation",
      claimRules.decideClaim,
      ({ headers, problems }) =>
        HttpApiEndpoint.post("decideClaim", "/v2/moderation/claims/:work_id/decisions", {
          params: ClaimPath,
          headers,
          payload: DecideClaimInputBody,
          // Written inline, as the document always had its 201s (see `Image` in Common.ts).
          success: ClaimDecisionRecord.annotate({ identifier: undefined }).pipe(HttpApiSchema.status(201)),
          error: [problem(NotFound), problem(InvalidStateTransition), problem(AlreadyExists), ...problems]
        })
          .annotate(OpenApi.Summary, "Decide a claim")
          .annotate(
            OpenApi.Description,
            "`approve`: `pending` -> `live`. `decline` (needs `note`): `pending` -> `declined`. `ban`: any claimed " +
              "state -> `hidden`, remembering it. `unban`: `hidden` -> the remembered state. Anything else is 409 " +
              "`INVALID_STATE_TRANSITION`. `If-Match` is required; of two moderators deciding at once, exactly one " +
              "wins and the other gets 412. A minted work going live takes its refs: 409 `ALREADY_EXISTS` when " +
              "another served work holds one. A work the credential's content limit hides is 404 before " +
              "`If-Match` is compared. The record's `id` is the new claim event's id."
          )
    )
  )
  .add(
    declare(
      "moderation",
      claimRules.snapshot,
      ({ headers, problems }) =>
        HttpApiEndpoint.get("snapshot", "/v2/moderation/snapshots/:object/:id", {
          params: SnapshotPath,
          headers,
          success: Snapshot,
          error: [problem(NotFound), ...problems]
        })
          .annotate(OpenApi.Summary, "Snapshot of an entity's fields")
          .annotate(
            OpenApi.Description,
            "Every field key of the entity's type (`GET /v2/catalog/fields`) -> its current value: the shape of a " +
              "proposal's `patch` and of claim creation's `field_values`. 404 for a type proposals do not edit " +
              "(persons) and for an entity that is not served or that the credential's content limit hides."
          )
    )
  )
  .middleware(WriteAuthorization)
  .annotate(HttpApi.ParamsParseOptions, strictParams)
  .annotate(HttpApi.QueryParseOptions, lenientQuery)
  .annotate(HttpApi.PayloadParseOptions, strictBody)
  .annotate(OpenApi.Title, "Moderation")
  .annotate(
    OpenApi.Description,
    "Deciding claims. Needs the `moderation` scope and a user with the `moderator` role or above."
  )
{}

export class ClaimEventsApi extends HttpApiGroup.make("claimEvents")
  .add(
    HttpApiEndpoint.get("listClaimEvents", "/v2/catalog/claim-events", {
      query: ClaimEventsParams,
      success: ListClaimEvent,
      error: [
        problem(LimitTooLarge),
        problem(InvalidCursor)
      ]
    })
      .annotate(OpenApi.Summary, "Claim event log")
      .annotate(
        OpenApi.Description,
        "Every claim state change, in strictly ascending `id`. Ids become visible in ascending order (an event " +
          "committed later always has a higher id), so a mirror that stores the highest id it has and asks " +
          "`after=<id>` (or keeps the last `next_cursor`) while writers commit gets every event exactly once. A page " +
          "with items always has a `next_cursor`; the page past the current end is empty and has none. Each caller " +
          "sees the events docs/writing.md (\"Who sees what\") gives it: its own site's, every public one (a claim " +
          "entering or leaving `live` on a served work, without `reason`), and a moderator all. Content gate: an " +
          "`sfw` credential is not shown events of nsfw works."
      )
  )
  .middleware(Authorization)
  .annotate(HttpApi.QueryParseOptions, lenientQuery)
  .annotate(RequiredScope, "catalog:read")
  .annotate(OpenApi.Title, "Claim events")
{}
