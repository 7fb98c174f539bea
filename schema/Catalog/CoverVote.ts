/**
 * Cover votes and the body that casts one (docs/writing.md, "Cover votes").
 */
import { Schema } from "effect"
import { CoverId, ListOf, WorkId } from "./Common.js"

export const VoteValue = Schema.Literals(["up"]).annotate({
  description: "The vote (closed): only `up`; a vote is taken back with `DELETE`."
})
export type VoteValue = typeof VoteValue.Type

export const CoverVote = Schema.Struct({
  object: Schema.Literal("cover_vote"),
  cover_id: CoverId,
  work_id: WorkId,
  vote: VoteValue
}).annotate({ identifier: "CoverVote", description: "The bearer's vote on one cover of a work." })
export type CoverVote = typeof CoverVote.Type

// Every failing field is reported, and a member the body's schema does not name is refused: the
// endpoint decodes this body with `errors: "all"` and `onExcessProperty: "error"`.
export const CoverVoteInputBody = Schema.Struct({
  vote: VoteValue
}).annotate({ identifier: "CoverVoteInputBody" })
export type CoverVoteInputBody = typeof CoverVoteInputBody.Type

export const ListCoverVote = ListOf(CoverVote, "ListCoverVote")
export type ListCoverVote = typeof ListCoverVote.Type
