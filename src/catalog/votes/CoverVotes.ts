/**
 * Cover votes (docs/writing.md, "Cover votes"): a user's `up` vote on a cover, kept in `cover_votes`
 * (migrations/0027), with `covers.vote_count` moved by one in the same transaction for every vote
 * row inserted or deleted. The writes run inside the write runner's transaction (src/catalog/writes),
 * which empties this process's caches after the commit; `catalog_touch('work')` tells the change feed
 * and the other processes that the work's record (its covers' `vote_count`) changed.
 *
 * A write locks the work (`FOR SHARE`: a merge or withdrawal waits, and one that committed first
 * makes the work 404) and then the cover (`FOR UPDATE`), so the votes on one cover run one after
 * another: 100 users voting at once give exactly 100, and one user's racing `PUT`s give one vote.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import type { PrincipalShape } from "../../../schema/Api/Security.js"
import type { CoverId, WorkId } from "../../../schema/Catalog/Common.js"
import { CoverVote, type ListCoverVote } from "../../../schema/Catalog/CoverVote.js"
import { NotFound, UserIdentityRequired } from "../../../schema/Problem.js"
import { Gone } from "../shared/Gone.js"
import { bigintId } from "../shared/Lanes.js"
import { gateSql } from "../works/WorkSql.js"
import { jsonAnswer, type WriteAnswer } from "../writes/Writes.js"

const IdRow = Schema.Struct({ id: Schema.String })
const VoteRow = Schema.Struct({ cover_id: Schema.String })

const userOf = (principal: PrincipalShape) =>
  Option.match(principal.user, {
    onNone: () => Effect.fail(new UserIdentityRequired({ detail: "This operation acts for a person." })),
    onSome: (user) => Effect.succeed(String(user.id))
  })

const record = (workId: string, coverId: string): CoverVote => ({
  object: "cover_vote",
  cover_id: coverId as CoverId,
  work_id: workId as WorkId,
  vote: "up"
})

export class CoverVotes extends Context.Service<CoverVotes>()("catalog/CoverVotes", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const gone = yield* Gone

    const findWork = SqlSchema.findOneOption({
      Request: Schema.Struct({ id: Schema.String, nsfw: Schema.Boolean, lock: Schema.Boolean }),
      Result: IdRow,
      execute: ({ id, lock, nsfw }) =>
        sql`SELECT w.id::text AS id FROM works w WHERE w.id = ${id}::bigint AND ${gateSql(sql, nsfw)}
          ${lock ? sql`FOR SHARE OF w` : sql``}`
    })
    const lockCover = SqlSchema.findOneOption({
      Request: Schema.Struct({ workId: Schema.String, coverId: Schema.String }),
      Result: IdRow,
      execute: ({ coverId, workId }) =>
        sql`SELECT c.id::text AS id FROM covers c
          WHERE c.id = ${coverId}::bigint AND c.work_id = ${workId}::bigint FOR UPDATE OF c`
    })
    const findVotes = SqlSchema.findAll({
      Request: Schema.Struct({ workId: Schema.String, uid: Schema.String }),
      Result: VoteRow,
      execute: ({ uid, workId }) =>
        sql`SELECT v.cover_id::text AS cover_id FROM cover_votes v JOIN covers c ON c.id = v.cover_id
          WHERE v.uid = ${uid} AND c.work_id = ${workId}::bigint
          ORDER BY v.cover_id DESC`
    })

    /** The visible work's id, or 404 (`ENTITY_MERGED` for a merged-away one); `lock`: held `FOR SHARE`. */
    const work = (principal: PrincipalShape, id: string, lock: boolean) =>
      Effect.gen(function*() {
        const key = bigintId(id)
        const found = key === undefined
          ? Option.none()
          : yield* findWork({ id: key, nsfw: principal.contentLimit === "nsfw", lock }).pipe(Effect.orDie)
        if (Option.isNone(found)) return yield* gone.missing("work", id)
        return found.value.id
      })

    /** The user, the work and the cover (locked) of a vote write. */
    const target = (principal: PrincipalShape, workId: string, coverId: string) =>
      Effect.gen(function*() {
        const uid = yield* userOf(principal)
        const work_ = yield* work(principal, workId, true)
        const cover = bigintId(coverId)
        const found = cover === undefined
          ? Option.none()
          : yield* lockCover({ workId: work_, coverId: cover }).pipe(Effect.orDie)
        if (Option.isNone(found)) {
          return yield* new NotFound({ detail: `Work ${work_} has no cover with id ${coverId}.` })
        }
        return { uid, workId: work_, coverId: found.value.id }
      })

    /** Moves the cover's `vote_count` by `by` and tells the change feed its work changed. */
    const counted = (workId: string, coverId: string, by: 1 | -1) =>
      Effect.gen(function*() {
        yield* sql`UPDATE covers SET vote_count = vote_count + ${by} WHERE id = ${coverId}::bigint`
        yield* sql`SELECT catalog_touch('work', ${workId}::bigint)`
      })

    /** PUT: the vote is there afterwards; 200 with the vote whether it was cast now or before. */
    const put = Effect.fn("CoverVotes.put")(function*(principal: PrincipalShape, workId: string, coverId: string) {
      const t = yield* target(principal, workId, coverId)
      const inserted = yield* sql<{ cover_id: string }>`
        INSERT INTO cover_votes (cover_id, uid) VALUES (${t.coverId}::bigint, ${t.uid})
        ON CONFLICT (cover_id, uid) DO NOTHING
        RETURNING cover_id::text AS cover_id`.pipe(Effect.orDie)
      if (inserted.length > 0) yield* counted(t.workId, t.coverId, 1).pipe(Effect.orDie)
      return yield* jsonAnswer(CoverVote, record(t.workId, t.coverId))
    })

    /** DELETE: no vote afterwards; 204 whether there was one or not. */
    const remove = Effect.fn("CoverVotes.remove")(
      function*(principal: PrincipalShape, workId: string, coverId: string) {
        const t = yield* target(principal, workId, coverId)
        const deleted = yield* sql<{ cover_id: string }>`
        DELETE FROM cover_votes WHERE cover_id = ${t.coverId}::bigint AND uid = ${t.uid}
        RETURNING cover_id::text AS cover_id`.pipe(Effect.orDie)
        if (deleted.length > 0) yield* counted(t.workId, t.coverId, -1).pipe(Effect.orDie)
        const answer: WriteAnswer = { status: 204, headers: {}, body: "" }
        return answer
      }
    )

    /** GET: the bearer's votes on the work's covers, highest cover id first (one page: a work has few covers). */
    const list = Effect.fn("CoverVotes.list")(function*(principal: PrincipalShape, workId: string) {
      const uid = yield* userOf(principal)
      const work_ = yield* work(principal, workId, false)
      const rows = yield* findVotes({ workId: work_, uid }).pipe(Effect.orDie)
      const page: ListCoverVote = { object: "list", items: rows.map((row) => record(work_, row.cover_id)) }
      return page
    })

    return { put, remove, list } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make).pipe(Layer.provide(Gone.layer))
}
