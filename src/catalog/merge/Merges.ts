/**
 * Merging one catalog entity into another (the feed's `gone` and the redirects: docs/change-feed.md;
 * reads of the loser: 404 ENTITY_MERGED, src/catalog/shared/Gone.ts), in one transaction:
 *
 * 1. lock both rows (in id order); refuse merging an id into itself, an unknown id, a loser that is
 *    already merged, a survivor that is merged away (or whose merge chain leads back to the loser: a
 *    cycle) or withdrawn. A withdrawn loser may be merged: its redirect then names the survivor;
 * 2. mark the loser `merged_into` the survivor;
 * 3. move what belongs with the survivor (below) and re-point references to the loser;
 * 4. write the merge map: the loser's redirect, and every redirect whose `current_id` was the loser now
 *    names the survivor (chains stay flattened, each re-pointed entry is listed again in the feed);
 * 5. refresh the gated work counts of the companies, tags and engines involved;
 * 6. `catalog_touch` the loser (gone), the survivor and every entity whose record changed.
 *
 * What moves. A merged work's titles, aliases, intros, links and images stay with it (they are its own
 * names; the survivor's names are curated separately). Its companies, tags, covers, roster rows,
 * credits and ratings move to the survivor unless the survivor already has the same row (same
 * company, tag, cover image, character, credit name+role+character, rating source); those duplicates
 * stay behind on the loser, which is no longer served. Its releases move to the survivor (and change),
 * and the survivor's release-derived columns (first date, platforms, media) are recomputed.
 * For the other types, rows that *refer* to the loser are re-pointed (a work's companies, tags, roster,
 * credits, engine; release companies; credit names of a person; company relations; tag parents;
 * character instances), and a row that would then duplicate one of the survivor's is dropped.
 * Upstream refs (`entity_refs`) always move to the survivor.
 */
import { Context, Data, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { TargetObject } from "../../../schema/Catalog/Change.js"
import { isRetryableTransaction, transactionRetrySchedule } from "../../platform/SqlState.js"
import { MergeRepo } from "./MergeRepo.js"

export const mergeableObjects: ReadonlyArray<TargetObject> = [
  "work",
  "release",
  "character",
  "credit_name",
  "person",
  "company",
  "tag",
  "engine"
]

export class MergeRefused extends Data.TaggedError("MergeRefused")<{
  readonly reason: "same_id" | "unknown_id" | "already_merged" | "target_merged" | "target_withdrawn" | "cycle"
  readonly message: string
}> {}

export interface MergeResult {
  readonly object: TargetObject
  readonly fromId: string
  readonly intoId: string
  /** Redirect entries that named the loser and now name the survivor (flattened chains). */
  readonly redirectsRepointed: number
  /** Rows moved or re-pointed, by kind. */
  readonly moved: Readonly<Record<string, number>>
  /** Change-feed entries written (loser, survivor and every entity whose record changed). */
  readonly touched: number
}

const idPattern = /^[0-9]{1,19}$/

export class Merges extends Context.Service<Merges>()("catalog/Merges", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* MergeRepo

    const check = (object: TargetObject, fromId: string, intoId: string) =>
      Effect.gen(function*() {
        if (fromId === intoId) {
          return yield* new MergeRefused({
            reason: "same_id",
            message: `Cannot merge ${object} ${fromId} into itself.`
          })
        }
        const rows = yield* repo.lockPair(object, fromId, intoId)
        const from = rows.find((r) => r.id === fromId)
        const into = rows.find((r) => r.id === intoId)
        for (const [id, row] of [[fromId, from], [intoId, into]] as const) {
          if (row === undefined) {
            return yield* new MergeRefused({ reason: "unknown_id", message: `No ${object} with id ${id}.` })
          }
        }
        if (from!.merged_into !== null) {
          const current = (yield* repo.currentIdOf(object, fromId)) ?? from!.merged_into
          return yield* new MergeRefused({
            reason: "already_merged",
            message: `${object} ${fromId} is already merged into ${current}.`
          })
        }
        if (into!.merged_into !== null) {
          const current = (yield* repo.currentIdOf(object, intoId)) ?? into!.merged_into
          return yield* current === fromId
            ? new MergeRefused({
              reason: "cycle",
              message: `${object} ${intoId} was merged into ${fromId}; merging ${fromId} into it would make a cycle.`
            })
            : new MergeRefused({
              reason: "target_merged",
              message: `${object} ${intoId} is merged into ${current}; merge into ${current} instead.`
            })
        }
        if (into!.withdrawn) {
          return yield* new MergeRefused({
            reason: "target_withdrawn",
            message: `${object} ${intoId} is withdrawn and cannot take a merge.`
          })
        }
      })

    const run = (object: TargetObject, fromId: string, intoId: string) =>
      Effect.gen(function*() {
        yield* check(object, fromId, intoId)
        const moved: Record<string, number> = {}
        const touches: Array<readonly [TargetObject, ReadonlyArray<string>]> = []
        const counts = { companies: [] as Array<string>, tags: [] as Array<string>, engines: [] as Array<string> }

        if (object === "work") {
          // Counts of everything either work names: taken before the rows move.
          const links = yield* repo.workLinks([fromId, intoId])
          counts.companies.push(...links.companies)
          counts.tags.push(...links.tags)
          counts.engines.push(...links.engines)
        }
        yield* repo.markMerged(object, fromId, intoId)
        moved.refs = yield* repo.moveRefs(object, fromId, intoId)

        switch (object) {
          case "work": {
            const rows = yield* repo.moveWorkRows(fromId, intoId)
            Object.assign(moved, {
              companies: rows.companies.length,
              tags: rows.tags.length,
              covers: rows.covers,
              characters: rows.characters.length,
              credits: rows.credits,
              ratings: rows.ratings,
              releases: rows.releases.length,
              cover_votes: rows.coverVotes,
              news: rows.news,
              playtimes: rows.playtimes
            })
            if (rows.releases.length > 0) yield* repo.refreshWorkFromReleases([intoId])
            if (rows.characters.length > 0) yield* repo.refreshCharacterNsfw(rows.characters)
            touches.push(["release", rows.releases], ["character", rows.characters])
            break
          }
          case "release": {
            const rows = yield* repo.repointRelease(fromId, intoId)
            moved.release_companies = rows.releaseCompanies
            yield* repo.refreshWorkFromReleases(rows.works)
            touches.push(["work", rows.works])
            break
          }
          case "character": {
            const rows = yield* repo.repointCharacter(fromId, intoId)
            Object.assign(moved, { roster: rows.roster, credits: rows.credits, instances: rows.instances.length })
            yield* repo.refreshCharacterNsfw([intoId])
            touches.push(["work", rows.works], ["character", rows.instances])
            break
          }
          case "credit_name": {
            const rows = yield* repo.repointCreditName(fromId, intoId)
            moved.credits = rows.credits
            touches.push(["work", rows.works])
            break
          }
          case "person": {
            const rows = yield* repo.repointPerson(fromId, intoId)
            moved.credit_names = rows.creditNames.length
            touches.push(["credit_name", rows.creditNames])
            break
          }
          case "company": {
            const rows = yield* repo.repointCompany(fromId, intoId)
            Object.assign(moved, {
              work_companies: rows.workCompanies,
              release_companies: rows.releaseCompanies,
              relations: rows.relations
            })
            counts.companies.push(fromId, intoId)
            touches.push(["work", rows.works], ["release", rows.releases], ["company", rows.companies])
            break
          }
          case "tag": {
            const rows = yield* repo.repointTag(fromId, intoId)
            Object.assign(moved, { work_tags: rows.workTags, children: rows.children.length })
            counts.tags.push(fromId, intoId)
            touches.push(["work", rows.works], ["tag", rows.children])
            break
          }
          case "engine": {
            const rows = yield* repo.repointEngine(fromId, intoId)
            Object.assign(moved, { works: rows.works.length, releases: rows.releases.length })
            counts.engines.push(fromId, intoId)
            touches.push(["work", rows.works], ["release", rows.releases])
            break
          }
        }

        const redirectsRepointed = yield* repo.redirect(object, fromId, intoId)
        const changedCounts = yield* repo.refreshCounts(counts)
        touches.push(
          [object, [fromId, intoId]],
          ["company", changedCounts.company],
          ["tag", changedCounts.tag],
          ["engine", changedCounts.engine]
        )
        // One touch per (object, id), whatever the number of reasons it changed for.
        const byObject = new Map<TargetObject, Set<string>>()
        for (const [target, entityIds] of touches) {
          const set = byObject.get(target) ?? new Set<string>()
          for (const id of entityIds) set.add(id)
          byObject.set(target, set)
        }
        let touched = 0
        for (const [target, set] of byObject) touched += yield* repo.touch(target, [...set])
        return { object, fromId, intoId, redirectsRepointed, moved, touched } satisfies MergeResult
      })

    /** Merges `fromId` into `intoId`; the whole merge commits or nothing does. */
    const merge = Effect.fn("Merges.merge")(function*(object: TargetObject, fromId: string, intoId: string) {
      if (!idPattern.test(fromId) || !idPattern.test(intoId)) {
        return yield* new MergeRefused({ reason: "unknown_id", message: "Ids are decimal strings of 1 to 19 digits." })
      }
      return yield* run(object, fromId, intoId).pipe(
        sql.withTransaction,
        Effect.retry({
          while: (e) => e._tag === "SqlError" && isRetryableTransaction(e),
          schedule: transactionRetrySchedule
        }),
        Effect.catchTag("SqlError", (e) => Effect.die(e))
      )
    })

    return { merge } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make).pipe(Layer.provide([MergeRepo.layer]))
}
