/**
 * Cover votes through real HTTP (docs/writing.md, "Cover votes"; "Who may write" and "The write
 * runner" for the rules every write shares): a `PUT` casts the bearer's one vote on a cover, a
 * `DELETE` takes it back, both idempotent by nature; `vote_count` moves at once in the reads and the
 * covers' order follows it; refusals (unknown, merged-away, hidden work, another work's cover, a bad
 * body, no user) write nothing; racing votes count exactly.
 *
 * Every test votes on works of its own (`takeWork`), so none depends on another's writes.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { Scope } from "../../schema/Annotations.js"
import { Merges } from "../../src/catalog/merge/Merges.js"
import { ClaimsFixture, ClaimsFixtureLive, type ClaimsFixtureShape } from "../support/Claims.js"
import { eventually } from "../support/Eventually.js"
import { expectProblemCode, expectStatus } from "../support/Proposals.js"
import { serverLayerOptions } from "../support/TestServers.js"

const voteScopes: ReadonlyArray<Scope> = ["catalog:read", "votes:write"]

const votePath = (work: string, cover: string) => `/v2/catalog/works/${work}/covers/${cover}/vote`

const put = (f: ClaimsFixtureShape, key: string, work: string, cover: string, body: unknown = { vote: "up" }) =>
  f.call("PUT", votePath(work, cover), { key, body })
const del = (f: ClaimsFixtureShape, key: string, work: string, cover: string) =>
  f.call("DELETE", votePath(work, cover), { key })

const taken = new Set<string>()
/** A live work with at least `covers` covers, nsfw or not, that no other test votes on; its covers by id. */
const takeWork = (options: { readonly nsfw?: boolean; readonly covers?: number } = {}) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ id: string; covers: ReadonlyArray<string> }>`
      SELECT w.id::text AS id, array_agg(c.id::text ORDER BY c.id) AS covers
      FROM works w JOIN covers c ON c.work_id = w.id
      WHERE w.live AND w.nsfw = ${options.nsfw === true}
      GROUP BY w.id HAVING count(*) >= ${options.covers ?? 1} ORDER BY w.id`.pipe(Effect.orDie)
    const row = rows.find((r) => !taken.has(r.id))
    if (row === undefined) return yield* Effect.die("no work left to vote on")
    taken.add(row.id)
    return row
  })

/** The cover's `vote_count` as the database holds it, and how many vote rows it has. */
const stored = (cover: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ vote_count: number; votes: number }>`
      SELECT c.vote_count, (SELECT count(*)::int FROM cover_votes v WHERE v.cover_id = c.id) AS votes
      FROM covers c WHERE c.id = ${cover}::bigint`.pipe(Effect.orDie)
    return row!
  })

/** The work's covers as `include=covers` and `GET .../covers` serve them (the two must agree). */
const servedCovers = (f: ClaimsFixtureShape, key: string, work: string) =>
  Effect.gen(function*() {
    const included = expectStatus(yield* f.call("GET", `/v2/catalog/works/${work}?include=covers`, { key }), 200)
    const listed = expectStatus(yield* f.call("GET", `/v2/catalog/works/${work}/covers?limit=100`, { key }), 200)
    const pairs = (covers: ReadonlyArray<any>) => covers.map((c) => [c.id as string, c.vote_count as number])
    expect(pairs(listed.items)).toEqual(pairs(included.covers))
    return included.covers as ReadonlyArray<{ id: string; vote_count: number }>
  })

const voteCountOf = (covers: ReadonlyArray<{ id: string; vote_count: number }>, cover: string) =>
  covers.find((c) => c.id === cover)?.vote_count

/** A user of `site_a` with a key holding the vote scopes (`sfw` unless told). */
const voter = (f: ClaimsFixtureShape, limit: "sfw" | "nsfw" = "sfw") =>
  Effect.flatMap(f.makeUser([]), (id) => f.makeKeyWithLimit("site_a", voteScopes, id, limit))

const Env = Merges.layer.pipe(Layer.provideMerge(ClaimsFixtureLive({ works: 60 })))

describe("cover votes (docs/writing.md, \"Cover votes\")", () => {
  it.layer(Env, serverLayerOptions("240 seconds"))((it) => {
    it.effect("PUT casts one vote (twice: still one), DELETE takes it back (twice: fine); reads and the change feed follow at once", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const sql = yield* SqlClient.SqlClient
        const key = yield* voter(f)
        const { covers, id: work } = yield* takeWork()
        const cover = covers[0]!
        const before = voteCountOf(yield* servedCovers(f, key, work), cover)!
        const touched = () =>
          Effect.map(
            sql<{ at: string }>`SELECT updated_at::text AS at FROM catalog_changes
              WHERE target_object = 'work' AND id = ${work}::bigint`.pipe(Effect.orDie),
            (rows) => rows[0]?.at
          )
        const touchedBefore = yield* touched()

        const first = yield* put(f, key, work, cover)
        expect(expectStatus(first, 200)).toEqual({ object: "cover_vote", cover_id: cover, work_id: work, vote: "up" })
        expect(voteCountOf(yield* servedCovers(f, key, work), cover)).toBe(before + 1)
        const touchedAfter = yield* touched()
        expect(touchedAfter).toBeDefined()
        expect(touchedAfter).not.toBe(touchedBefore)

        const again = yield* put(f, key, work, cover)
        expect(expectStatus(again, 200)).toEqual(first.body)
        expect(voteCountOf(yield* servedCovers(f, key, work), cover)).toBe(before + 1)
        expect((yield* stored(cover)).votes).toBe(1)

        const mine = expectStatus(yield* f.call("GET", `/v2/catalog/works/${work}/cover-votes`, { key }), 200)
        expect(mine).toEqual({ object: "list", items: [first.body] })
        // Another user's list does not hold it.
        const other = yield* voter(f)
        const theirs = expectStatus(yield* f.call("GET", `/v2/catalog/works/${work}/cover-votes`, { key: other }), 200)
        expect(theirs).toEqual({ object: "list", items: [] })

        const removed = yield* del(f, key, work, cover)
        expect(removed.status).toBe(204)
        expect(removed.body).toBeNull()
        expect(voteCountOf(yield* servedCovers(f, key, work), cover)).toBe(before)
        const removedAgain = yield* del(f, key, work, cover)
        expect(removedAgain.status).toBe(204)
        expect(voteCountOf(yield* servedCovers(f, key, work), cover)).toBe(before)
        expect((yield* stored(cover)).votes).toBe(0)
        const none = expectStatus(yield* f.call("GET", `/v2/catalog/works/${work}/cover-votes`, { key }), 200)
        expect(none.items).toEqual([])
      }))

    it.effect("covers are read best first by vote_count: a vote moves a cover ahead (pinned first, then votes, then id)", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const sql = yield* SqlClient.SqlClient
        const { covers, id: work } = yield* takeWork({ covers: 2 })
        // Set-up: no pin and no votes, so the order is by id, highest first.
        yield* sql`UPDATE covers SET vote_count = 0, portrait_pinned = false WHERE work_id = ${work}::bigint`.pipe(
          Effect.orDie
        )
        const key = yield* voter(f)
        const lowest = covers[0]!
        const order = () => Effect.map(servedCovers(f, key, work), (cs) => cs.map((c) => c.id))
        expect(yield* order()).toEqual([...covers].reverse())
        expectStatus(yield* put(f, key, work, lowest), 200)
        const voted = yield* order()
        expect(voted[0]).toBe(lowest)
        expect(voted.slice(1)).toEqual([...covers].reverse().filter((c) => c !== lowest))
        // A pinned cover stays first whatever the votes. (Pinned here by hand: the caches hear of it through
        // the catalog notification, so the reads follow soon rather than at once.)
        const pinned = covers[covers.length - 1]!
        yield* sql`UPDATE covers SET portrait_pinned = true WHERE id = ${pinned}::bigint`.pipe(Effect.orDie)
        yield* sql`SELECT catalog_touch('work', ${work}::bigint)`.pipe(Effect.orDie)
        yield* eventually(Effect.map(order(), (ids) => expect(ids.slice(0, 2)).toEqual([pinned, lowest])))
        // Taking the vote back puts the order back.
        expect((yield* del(f, key, work, lowest)).status).toBe(204)
        expect((yield* order())[0]).toBe(pinned)
        expect((yield* order()).at(-1)).toBe(lowest)
      }))

    it.effect("refusals write nothing: unknown work, merged-away work, another work's cover, a hidden nsfw work, a bad body, no user, no scope", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const merges = yield* Merges
        const key = yield* voter(f)
        const { covers, id: work } = yield* takeWork()
        const cover = covers[0]!
        const other = yield* takeWork()
        const before = yield* stored(cover)

        expectProblemCode(yield* put(f, key, "999999999", cover), 404, "NOT_FOUND")
        expectProblemCode(yield* del(f, key, "999999999", cover), 404, "NOT_FOUND")
        expectProblemCode(yield* f.call("GET", "/v2/catalog/works/999999999/cover-votes", { key }), 404, "NOT_FOUND")
        // A cover of another work, and a cover id that exists nowhere.
        expectProblemCode(yield* put(f, key, other.id, cover), 404, "NOT_FOUND")
        expectProblemCode(yield* del(f, key, other.id, cover), 404, "NOT_FOUND")
        expectProblemCode(yield* put(f, key, work, "999999999"), 404, "NOT_FOUND")

        // Bodies other than {"vote":"up"}: 422 at the pointer.
        const refused = [
          { body: { vote: "down" }, error: { reason: "UNKNOWN_VALUE", pointer: "/vote", params: { allowed: ["up"] } } },
          { body: {}, error: { reason: "REQUIRED", pointer: "/vote" } },
          {
            body: { vote: "up", weight: 2 },
            error: { reason: "UNKNOWN_VALUE", pointer: "/weight", params: { allowed: ["vote"] } }
          }
        ]
        for (const { body, error } of refused) {
          const res = expectProblemCode(yield* put(f, key, work, cover, body), 422, "VALIDATION_FAILED")
          expect(res.errors).toEqual([{ detail: expect.any(String), ...error }])
        }

        // A key without a user, and one without `votes:write`.
        const noUser = yield* f.makeKey("site_a", voteScopes, null)
        expectProblemCode(yield* put(f, noUser, work, cover), 403, "USER_IDENTITY_REQUIRED")
        expectProblemCode(
          yield* f.call("GET", `/v2/catalog/works/${work}/cover-votes`, { key: noUser }),
          403,
          "USER_IDENTITY_REQUIRED"
        )
        expectProblemCode(yield* put(f, f.keys.readOnly, work, cover), 403, "SCOPE_REQUIRED")

        expect(yield* stored(cover)).toEqual(before)

        // An nsfw work: 404 for an sfw credential, votable with an nsfw one.
        const nsfw = yield* takeWork({ nsfw: true })
        const nsfwBefore = yield* stored(nsfw.covers[0]!)
        expectProblemCode(yield* put(f, key, nsfw.id, nsfw.covers[0]!), 404, "NOT_FOUND")
        expectProblemCode(yield* f.call("GET", `/v2/catalog/works/${nsfw.id}/cover-votes`, { key }), 404, "NOT_FOUND")
        expect(yield* stored(nsfw.covers[0]!)).toEqual(nsfwBefore)
        const nsfwKey = yield* voter(f, "nsfw")
        expectStatus(yield* put(f, nsfwKey, nsfw.id, nsfw.covers[0]!), 200)
        expect((yield* stored(nsfw.covers[0]!)).vote_count).toBe(nsfwBefore.vote_count + 1)

        // A merged-away work: 404 ENTITY_MERGED naming the survivor.
        const loser = yield* takeWork()
        const survivor = yield* takeWork()
        yield* merges.merge("work", loser.id, survivor.id)
        const merged = expectProblemCode(yield* put(f, key, loser.id, loser.covers[0]!), 404, "ENTITY_MERGED")
        expect(merged.current_id).toBe(survivor.id)
        expectProblemCode(
          yield* f.call("GET", `/v2/catalog/works/${loser.id}/cover-votes`, { key }),
          404,
          "ENTITY_MERGED"
        )
      }))

    it.effect("100 users voting on one cover at once: exactly 100 votes", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const { covers, id: work } = yield* takeWork()
        const cover = covers[0]!
        const before = yield* stored(cover)
        const keys = yield* Effect.forEach(Array.from({ length: 100 }), () => voter(f), { concurrency: 10 })
        const answers = yield* Effect.forEach(keys, (key) => put(f, key, work, cover), { concurrency: "unbounded" })
        expect(answers.map((a) => a.status)).toEqual(keys.map(() => 200))
        expect(yield* stored(cover)).toEqual({ vote_count: before.vote_count + 100, votes: 100 })
        expect(voteCountOf(yield* servedCovers(f, keys[0]!, work), cover)).toBe(before.vote_count + 100)
      }))

    it.effect("one user's racing PUTs give one vote; racing PUTs and DELETEs leave the count equal to the votes", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const { covers, id: work } = yield* takeWork()
        const cover = covers[0]!
        const before = yield* stored(cover)
        const key = yield* voter(f)
        const puts = yield* Effect.forEach(Array.from({ length: 20 }), () => put(f, key, work, cover), {
          concurrency: "unbounded"
        })
        expect(puts.map((a) => a.status)).toEqual(puts.map(() => 200))
        expect(yield* stored(cover)).toEqual({ vote_count: before.vote_count + 1, votes: 1 })

        const mixed = yield* Effect.forEach(
          Array.from({ length: 30 }, (_, i) => i),
          (i) => (i % 2 === 0 ? del(f, key, work, cover) : put(f, key, work, cover)),
          { concurrency: "unbounded" }
        )
        expect(mixed.map((a) => a.status).sort()).toEqual([...Array(15).fill(200), ...Array(15).fill(204)])
        const after = yield* stored(cover)
        expect(after.votes === 0 || after.votes === 1).toBe(true)
        expect(after.vote_count).toBe(before.vote_count + after.votes)
        const mine = expectStatus(yield* f.call("GET", `/v2/catalog/works/${work}/cover-votes`, { key }), 200)
        expect(mine.items.length).toBe(after.votes)
      }))
  })
})
