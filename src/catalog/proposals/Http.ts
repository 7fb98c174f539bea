/**
 * Handlers of the proposals, proposal-moderation and revisions groups (schema/Api/ProposalsApi.ts).
 * Every write goes through the write runner with the rule its route declares.
 */
import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { CatalogApi } from "../../../schema/Api/CatalogApi.js"
import { proposalRules } from "../../../schema/Api/ProposalsApi.js"
import { Principal } from "../../../schema/Api/Security.js"
import { Proposal } from "../../../schema/Catalog/Proposal.js"
import { conditional, tagged } from "../../platform/Conditional.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import { Writes } from "../writes/Writes.js"
import { fieldInfos, Proposals } from "./Proposals.js"

/** A proposal with its ETag, or 304 when the client's copy is current. */
const proposalResponse = (found: { readonly record: Proposal; readonly etag: string }) =>
  Effect.flatMap(tagged(Proposal, found.record), ({ json }) => conditional({ json, etag: found.etag }))

export const HttpProposalsLive = HttpApiBuilder.group(
  CatalogApi,
  "proposals",
  (handlers) =>
    Effect.gen(function*() {
      const proposals = yield* Proposals
      const writes = yield* Writes
      return handlers
        .handle("createProposal", ({ headers, payload }) =>
          Effect.flatMap(Principal, (principal) =>
            writes.run({
              principal,
              rule: proposalRules.createProposal,
              idempotencyKey: headers["idempotency-key"],
              payload,
              write: proposals.create(principal, payload)
            })), runToCompletion)
        .handle("listProposals", ({ query }) => Effect.flatMap(Principal, (p) => proposals.list(p, query)))
        .handle("getProposal", ({ params }) =>
          Effect.flatMap(Principal, (p) =>
            Effect.flatMap(proposals.get(p, params.id, "site"), proposalResponse)))
        .handle("amendProposal", ({ headers, params, payload }) =>
          Effect.flatMap(Principal, (principal) =>
            writes.run({
              principal,
              rule: proposalRules.amendProposal,
              idempotencyKey: headers["idempotency-key"],
              payload,
              write: proposals.amend(principal, proposalRules.amendProposal, params.id, payload, headers["if-match"])
            })), runToCompletion)
        .handle("listAmendments", ({ params, query }) =>
          Effect.flatMap(Principal, (p) =>
            proposals.amendments(p, params.id, query)))
        .handle("withdrawProposal", ({ headers, params }) =>
          Effect.flatMap(Principal, (principal) =>
            writes.run({
              principal,
              rule: proposalRules.withdrawProposal,
              idempotencyKey: headers["idempotency-key"],
              payload: null,
              write: proposals.withdraw(principal, proposalRules.withdrawProposal, params.id, headers["if-match"])
            })), runToCompletion)
    })
)

export const HttpProposalModerationLive = HttpApiBuilder.group(
  CatalogApi,
  "proposalModeration",
  (handlers) =>
    Effect.gen(function*() {
      const proposals = yield* Proposals
      const writes = yield* Writes
      return handlers
        .handle("proposalQueue", ({ query }) => Effect.flatMap(Principal, (p) => proposals.queue(p, query)))
        .handle("moderationProposal", ({ params }) =>
          Effect.flatMap(Principal, (p) =>
            Effect.flatMap(proposals.get(p, params.id, "moderator"), proposalResponse)))
        .handle("decideProposal", ({ headers, params, payload }) =>
          Effect.flatMap(Principal, (principal) =>
            writes.run({
              principal,
              rule: proposalRules.decideProposal,
              idempotencyKey: headers["idempotency-key"],
              payload,
              write: proposals.decide(principal, proposalRules.decideProposal, params.id, payload, headers["if-match"])
            })), runToCompletion)
    })
)

export const HttpRevisionsLive = HttpApiBuilder.group(
  CatalogApi,
  "revisions",
  (handlers) =>
    Effect.gen(function*() {
      const proposals = yield* Proposals
      return handlers
        .handle("listFields", () => Effect.succeed({ object: "list" as const, items: fieldInfos }))
        .handle("listRevisions", ({ params, query }) =>
          Effect.flatMap(Principal, (p) =>
            proposals.revisions(p, params.collection, params.id, query)))
        .handle("getRevision", ({ params }) =>
          Effect.flatMap(Principal, (p) => proposals.revision(p, params.id)))
    })
)

export const HttpProposalGroupsLive = Layer.mergeAll(
  HttpProposalsLive,
  HttpProposalModerationLive,
  HttpRevisionsLive
).pipe(Layer.provide(Proposals.layer))
