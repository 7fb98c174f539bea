/**
 * Handlers of the claims, moderation and claim-event groups (schema/Api/ClaimsApi.ts). Every write
 * goes through the write runner with the rule its route declares.
 */
import { HttpApiBuilder } from "effect/http-api"
import { Effect, Layer, Schema } from "effect"
import { CatalogApi } from "../../../schema/Api/CatalogApi.js"
import { claimRules } from "../../../schema/Api/ClaimsApi.js"
import { Principal } from "../../../schema/Api/Security.js"
import { ClaimRecord } from "../../../schema/Catalog/Claim.js"
import { conditional } from "../../platform/Conditional.js"
import { runToCompletion } from "../../platform/HttpListener.js"
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
        .handle("listClaims", ({ urlParams }) => Effect.flatMap(Principal, (p) => claims.list(p, urlParams)))
        .handle("getClaim", ({ path }) =>
          Effect.flatMap(Principal, (p) =>
            Effect.flatMap(claims.get(p, path.work_id), ({ etag, record }) =>
              Effect.flatMap(
                Schema.encode(ClaimRecord)(record).pipe(Effect.orDie),
                (encoded) =>
                  conditional({ json: JSON.stringify(encoded), etag })
              ))))
        .handle("submitClaim", ({ headers, path }) =>
          Effect.flatMap(Principal, (principal) =>
            writes.run({
              principal,
              rule: claimRules.submitClaim,
              idempotencyKey: headers["idempotency-key"],
              payload: null,
              write: claims.submit(principal, claimRules.submitClaim, path.work_id, headers["if-match"])
            })), runToCompletion)
        .handle("releaseClaim", ({ headers, path }) =>
          Effect.flatMap(Principal, (principal) =>
            writes.run({
              principal,
              rule: claimRules.releaseClaim,
              idempotencyKey: undefined,
              payload: null,
              write: claims.release(principal, claimRules.releaseClaim, path.work_id, headers["if-match"])
            })), runToCompletion)
    })
)

export const HttpModerationLive = HttpApiBuilder.group(
  CatalogApi,
  "moderation",
  (handlers) =>
    Effect.gen(function*() {
      const claims = yield* Claims
      const writes = yield* Writes
      return handlers
        .handle("moderationQueue", ({ urlParams }) => Effect.flatMap(Principal, (p) => claims.queue(p, urlParams)))
        .handle("decideClaim", ({ headers, path, payload }) =>
          Effect.flatMap(Principal, (principal) =>
            writes.run({
              principal,
              rule: claimRules.decideClaim,
              idempotencyKey: headers["idempotency-key"],
              payload,
              write: claims.decide(principal, claimRules.decideClaim, path.work_id, payload, headers["if-match"])
            })), runToCompletion)
        .handle("snapshot", ({ path }) => Effect.flatMap(Principal, (p) => claims.snapshot(p, path.object, path.id)))
    })
)

export const HttpClaimEventsLive = HttpApiBuilder.group(
  CatalogApi,
  "claimEvents",
  (handlers) =>
    Effect.gen(function*() {
      const claims = yield* Claims
      return handlers.handle("listClaimEvents", ({ urlParams }) =>
        Effect.flatMap(Principal, (p) => claims.events(p.contentLimit, urlParams)))
    })
)

export const HttpClaimGroupsLive = Layer.mergeAll(HttpClaimsLive, HttpModerationLive, HttpClaimEventsLive).pipe(
  Layer.provide(Claims.layer)
)
