/**
 * Handlers of the cover-vote group (schema/Api/CoverVotesApi.ts). Both writes go through the write
 * runner with the rule their route declares.
 */
import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { CatalogApi } from "../../../schema/Api/CatalogApi.js"
import { coverVoteRules } from "../../../schema/Api/CoverVotesApi.js"
import { Principal } from "../../../schema/Api/Security.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import { Writes } from "../writes/Writes.js"
import { CoverVotes } from "./CoverVotes.js"

export const HttpCoverVotesLive = HttpApiBuilder.group(
  CatalogApi,
  "coverVotes",
  (handlers) =>
    Effect.gen(function*() {
      const votes = yield* CoverVotes
      const writes = yield* Writes
      return handlers
        .handle("putCoverVote", ({ params, payload }) =>
          Effect.flatMap(Principal, (principal) =>
            writes.run({
              principal,
              rule: coverVoteRules.putCoverVote,
              idempotencyKey: undefined,
              payload,
              write: votes.put(principal, params.id, params.cover_id)
            })), runToCompletion)
        .handle("deleteCoverVote", ({ params }) =>
          Effect.flatMap(Principal, (principal) =>
            writes.run({
              principal,
              rule: coverVoteRules.deleteCoverVote,
              idempotencyKey: undefined,
              payload: null,
              write: votes.remove(principal, params.id, params.cover_id)
            })), runToCompletion)
        .handle("listCoverVotes", ({ params }) => Effect.flatMap(Principal, (p) => votes.list(p, params.id)))
    })
).pipe(Layer.provide(CoverVotes.layer))
