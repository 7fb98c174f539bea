/**
 * Handlers of the claims, moderation and claim-event groups (schema/Api/ClaimsApi.ts). Every write
 * goes through the write runner with the rule its route declares.
 */
import { Effect, Layer, Schema } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { CatalogApi } from "../../../schema/Api/CatalogApi.js"
import { claimRules } from "../../../schema/Api/ClaimsApi.js"
import { Principal } from "../../../schema/Api/Security.js"
import { ClaimRecord } from "../../../schema/Catalog/Claim.js"
import { conditional } from "../../platform/Conditional.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import { Proposals } from "../proposals/Proposals.js"
import { Writes } from "../writes/Writes.js"
import { Claims } from "./Claims.js"

export const HttpClaimsLive = HttpApiBuilder.group(
  CatalogApi,
  "claims",
  (handlers) =>
    Effect.gen(function*() {
      const claims = yield* Claims
      const writes = yield* Writes
      return handlers
        .handle("createClaim", ({ headers, payload }) =>
          Effect.flatMap(Principal, (principal) =>
            writes.run({
              principal,
              rule: claimRules.createClaim,
              idempotencyKey: headers["idempotency-key"],
              payload,
              write: claims.create(principal, payload)
            })), runToCompletion)
        .handle("listClaims", ({ query }) => Effect.flatMap(Principal, (p) => claims.list(p, query)))
        .handle("getClaim", ({ params }) =>
          Effect.flatMap(Principal, (p) =>
            Effect.flatMap(claims.get(p, params.work_id), ({ etag, record }) =>
              Effect.flatMap(
                Schema.encodeEffect(ClaimRecord)(record).pipe(Effect.orDie),
                (encoded) =>
                  conditional({ json: JSON.stringify(encoded), etag })
              ))))
        .handle("submitClaim", ({ headers, params }) =>
          Effect.flatMap(Principal, (principal) =>
            writes.run({
              principal,
              rule: claimRules.submitClaim,
              idempotencyKey: headers["idempotency-key"],
              payload: null,
              write: claims.submit(principal, claimRules.submitClaim, params.work_id, headers["if-match"])
            })), runToCompletion)
        .handle("releaseClaim", ({ headers, params }) =>
          Effect.flatMap(Principal, (principal) =>
            writes.run({
              principal,
              rule: claimRules.releaseClaim,
              idempotencyKey: undefined,
              payload: null,
              write: claims.release(principal, claimRules.releaseClaim, params.work_id, headers["if-match"])
            })), runToCompletion)
    })
)

export const HttpModerationLive = HttpApiBuilder.group(
  CatalogApi,
  "moderation",
  (handlers) =>
    Effect.gen(function*() {
      const claims = yield* Claims
      const proposals = yield* Proposals
      const writes = yield* Writes
      return handlers
        .handle("moderationQueue", ({ query }) => Effect.flatMap(Principal, (p) => claims.queue(p, query)))
        .handle("decideClaim", ({ headers, params, payload }) =>
          Effect.flatMap(Principal, (principal) =>
            writes.run({
              principal,
              rule: claimRules.decideClaim,
              idempotencyKey: headers["idempotency-key"],
              payload,
              write: claims.decide(principal, claimRules.decideClaim, params.work_id, payload, headers["if-match"])
            })), runToCompletion)
        .handle("snapshot", ({ params }) =>
          Effect.flatMap(Principal, (p) => proposals.snapshot(p, params.object, params.id)))
    })
)

export const HttpClaimEventsLive = HttpApiBuilder.group(
  CatalogApi,
  "claimEvents",
  (handlers) =>
    Effect.gen(function*() {
      const claims = yield* Claims
      return handlers.handle(
        "listClaimEvents",
        ({ query }) => Effect.flatMap(Principal, (p) => claims.events(p, query))
      )
    })
)

export const HttpClaimGroupsLive = Layer.mergeAll(HttpClaimsLive, HttpModerationLive, HttpClaimEventsLive).pipe(
  Layer.provide([Claims.layer, Proposals.layer])
)
