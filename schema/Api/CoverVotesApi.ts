/**
 * Cover votes (docs/writing.md, "Cover votes"): a user's `up` vote on a cover of a work, cast with
 * `PUT` and taken back with `DELETE`, and the bearer's votes on a work's covers. Every route acts
 * for a person and declares its rule (schema/Api/Writes.ts).
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { CoverId, WorkId } from "../Catalog/Common.js"
import { CoverVote, CoverVoteInputBody, ListCoverVote } from "../Catalog/CoverVote.js"
import { EntityMerged, NotFound, problem } from "../Problem.js"
import { WriteAuthorization } from "./Security.js"
import { declare, lenientQuery, type RouteRule, strictBody, strictParams } from "./Writes.js"

export const CoverVotePath = Schema.Struct({
  id: WorkId.annotate({ description: "The work id." }),
  cover_id: CoverId.annotate({ description: "The id of one of the work's covers." })
})
export const WorkCoverVotesPath = Schema.Struct({ id: WorkId.annotate({ description: "The work id." }) })

/**
 * The rules of the vote routes, by endpoint name. `PUT` and `DELETE` are idempotent by nature (a
 * vote is there or not), so they take no `Idempotency-Key`.
 */
export const coverVoteRules = {
  putCoverVote: { user: true, tenant: false, idempotent: false, quota: "votes" },
  deleteCoverVote: { user: true, tenant: false, idempotent: false, quota: "votes" },
  listCoverVotes: { user: true, tenant: false, idempotent: false }
} as const satisfies Record<string, RouteRule>

const gone = "An unknown work is 404 (a merged-away one 404 `ENTITY_MERGED`), as is a cover of another work and, " +
  "for an `sfw` credential, any cover of an nsfw work."

export class CoverVotesApi extends HttpApiGroup.make("coverVotes")
  .add(
    declare(
      "votes:write",
      coverVoteRules.putCoverVote,
      ({ headers, problems }) =>
        HttpApiEndpoint.put("putCoverVote", "/v2/catalog/works/:id/covers/:cover_id/vote", {
          params: CoverVotePath,
          headers,
          payload: CoverVoteInputBody,
          success: CoverVote,
          error: [problem(NotFound), problem(EntityMerged), ...problems]
        })
          .annotate(OpenApi.Summary, "Vote for a cover")
          .annotate(
            OpenApi.Description,
            "Casts the bearer's `up` vote on the cover: one vote per user and cover, so a second `PUT` changes " +
              "nothing and answers the same 200. The cover's `vote_count` counts it at once, and covers are read " +
              `best first by it. ${gone}`
          )
    )
  )
  .add(
    declare(
      "votes:write",
      coverVoteRules.deleteCoverVote,
      ({ headers, problems }) =>
        HttpApiEndpoint.delete("deleteCoverVote", "/v2/catalog/works/:id/covers/:cover_id/vote", {
          params: CoverVotePath,
          headers,
          success: HttpApiSchema.NoContent,
          error: [problem(NotFound), problem(EntityMerged), ...problems]
        })
          .annotate(OpenApi.Summary, "Take back a cover vote")
          .annotate(
            OpenApi.Description,
            "Takes back the bearer's vote on the cover: 204, whether there was one or not. " + gone
          )
    )
  )
  .add(
    declare(
      "votes:write",
      coverVoteRules.listCoverVotes,
      ({ headers, problems }) =>
        HttpApiEndpoint.get("listCoverVotes", "/v2/catalog/works/:id/cover-votes", {
          params: WorkCoverVotesPath,
          headers,
          success: ListCoverVote,
          error: [problem(NotFound), problem(EntityMerged), ...problems]
        })
          .annotate(OpenApi.Summary, "The bearer's cover votes on a work")
          .annotate(
            OpenApi.Description,
            "Every vote the bearer cast on the work's covers, in one page (a work has few covers; no cursor), " +
              "highest cover id first. An unknown work is 404 (a merged-away one 404 `ENTITY_MERGED`), as is an " +
              "nsfw work for an `sfw` credential."
          )
    )
  )
  .middleware(WriteAuthorization)
  .annotate(HttpApi.ParamsParseOptions, strictParams)
  .annotate(HttpApi.QueryParseOptions, lenientQuery)
  .annotate(HttpApi.PayloadParseOptions, strictBody)
  .annotate(OpenApi.Title, "Cover votes")
  .annotate(
    OpenApi.Description,
    "Users vote for the covers of works. Every route acts for a user: an identity access token, or an API key " +
      "created for a user."
  )
{}
