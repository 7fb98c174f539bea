/**
 * Playtimes through real HTTP (docs/writing.md, "Playtimes"; "Who may write" and "The write runner"
 * for the rules every write shares): what a batch may hold and where a refusal points, that a refused
 * batch writes nothing, the bearer's list and its cursor pages, and the `include=playtime` aggregate
 * of works, exact against a direct computation over the stored playtimes, also after concurrent
 * batches of many users on the same works.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Scope } from "../../schema/Annotations.js"
import { ClaimsFixture, ClaimsFixtureLive, type ClaimsFixtureShape } from "../support/Claims.js"
import { expectProblemCode, expectStatus, type Reply } from "../support/Proposals.js"
import { serverLayerOptions } from "../support/TestServers.js"

const scopes: ReadonlyArray<Scope> = ["catalog:read", "playtimes:write"]

/** A fresh user of `site_a` and a key for them (sfw unless `nsfw`). */
const player = (f: ClaimsFixtureShape, options: { readonly nsfw?: boolean } = {}) =>
  Effect.gen(function*() {
    const id = yield* f.makeUser([])
    const key = yield* f.makeKeyWithLimit("site_a", scopes, id, options.nsfw === true ? "nsfw" : "sfw")
    return { id, key }
  })

let keys = 0
const report = (
  f: ClaimsFixtureShape,
  key: string,
  items: ReadonlyArray<{ readonly work_id: string; readonly minutes: number }>
) =>
  f.call("POST", "/v2/playtimes", {
    key,
    body: { items },
    headers: { "idempotency-key": `playtimes-${Date.now()}-${++keys}` }
  })

/** A 422 `VALIDATION_FAILED` whose `errors` are exactly `errors` (each with some `detail`). */
const expectErrors = (
  res: Reply,
  errors: ReadonlyArray<{ readonly reason: string; readonly pointer: string; readonly params?: unknown }>
) => {
  const body = expectProblemCode(res, 422, "VALIDATION_FAILED")
  expect(body.errors).toEqual(errors.map((e) => ({ detail: expect.any(String), ...e })))
}

/** Works handed out once each, so no test sees another's playtimes. */
let handedOut = 0
const take = (f: ClaimsFixtureShape, n: number) => {
  const out = f.works.slice(handedOut, handedOut + n)
  handedOut += n
  expect(out.length).toBe(n)
  return out
}

/** players and median of a work computed directly over the stored playtimes. */
const direct = (workIds: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ id: string; players: number; median: number | null }>`
      SELECT x.id::text AS id, count(p.minutes)::int AS players,
        (percentile_cont(0.5) WITHIN GROUP (ORDER BY p.minutes))::float8 AS median
      FROM unnest(${workIds}::bigint[]) AS x (id) LEFT JOIN playtimes p ON p.work_id = x.id
      GROUP BY x.id`.pipe(Effect.orDie)
    return new Map(rows.map((r) => [r.id, { players: r.players, median_minutes: r.median }]))
  })

/** The `playtime` member of works on the list (by `ids`) and on each detail read. */
const served = (f: ClaimsFixtureShape, key: string, workIds: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const list = expectStatus(
      yield* f.call("GET", `/v2/catalog/works?ids=${workIds.join(",")}&include=playtime`, { key }),
      200
    )
    const fromList = new Map<string, unknown>(list.items.map((w: any) => [w.id, w.playtime]))
    const fromDetail = new Map<string, unknown>()
    for (const id of workIds) {
      const one = expectStatus(yield* f.call("GET", `/v2/catalog/works/${id}?include=playtime`, { key }), 200)
      fromDetail.set(id, one.playtime)
    }
    return { fromList, fromDetail }
  })

const expectExact = (f: ClaimsFixtureShape, key: string, workIds: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const want = yield* direct(workIds)
    const { fromDetail, fromList } = yield* served(f, key, workIds)
    for (const id of workIds) {
      expect(fromList.get(id), `list ${id}`).toEqual(want.get(id))
      expect(fromDetail.get(id), `detail ${id}`).toEqual(want.get(id))
    }
    return want
  })

/** What a user's refused batch could have written: their rows, the works' aggregates, feed rows, quota. */
const footprint = (userId: number, workIds: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ mine: number; aggregates: number; histogram: number; changes: number; used: number }>`
      SELECT
        (SELECT count(*)::int FROM playtimes WHERE user_id = ${userId}) AS mine,
        (SELECT count(*)::int FROM work_playtimes WHERE work_id = ANY(${workIds}::bigint[])) AS aggregates,
        (SELECT count(*)::int FROM work_playtime_minutes WHERE work_id = ANY(${workIds}::bigint[])) AS histogram,
        (SELECT count(*)::int FROM catalog_changes
          WHERE target_object = 'work' AND id = ANY(${workIds}::bigint[])
            AND updated_at > now() - interval '1 hour') AS changes,
        (SELECT coalesce(sum(used), 0)::int FROM catalog_quota_usage WHERE kind = 'playtimes') AS used`.pipe(
      Effect.orDie
    )
    return row!
  })

const Env = ClaimsFixtureLive({ works: 60 })

describe("playtimes (docs/writing.md, \"Playtimes\")", () => {
  it.layer(Env, serverLayerOptions("240 seconds"))((it) => {
    it.effect("a batch is upserted per work and answers the stored playtimes in the batch's order", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const me = yield* player(f)
        const [a, b] = take(f, 2)
        const first = expectStatus(
          yield* report(f, me.key, [{ work_id: a!, minutes: 90 }, { work_id: b!, minutes: 0 }]),
          200
        )
        expect(first.items).toEqual([
          { object: "playtime", work_id: a, minutes: 90, updated_at: expect.any(String) },
          { object: "playtime", work_id: b, minutes: 0, updated_at: expect.any(String) }
        ])
        // Minutes are absolute: a later report replaces the earlier one (it may also go down).
        const second = expectStatus(
          yield* report(f, me.key, [{ work_id: b!, minutes: 45 }, { work_id: a!, minutes: 30 }]),
          200
        )
        expect(second.items.map((p: any) => [p.work_id, p.minutes])).toEqual([[b, 45], [a, 30]])
        expect(second.items[1].updated_at > first.items[0].updated_at).toBe(true)
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ work_id: string; minutes: number }>`
          SELECT work_id::text AS work_id, minutes FROM playtimes WHERE user_id = ${me.id} ORDER BY work_id`.pipe(
          Effect.orDie
        )
        expect(rows).toEqual(
          [{ work_id: a, minutes: 30 }, { work_id: b, minutes: 45 }].sort((x, y) =>
            Number(x.work_id) - Number(y.work_id)
          )
        )
        // An empty batch is allowed and writes nothing.
        expect(expectStatus(yield* report(f, me.key, []), 200)).toEqual({ object: "list", items: [] })
      }))

    it.effect("a bad batch is 422 at its pointers (TOO_MANY_ITEMS, REQUIRED, OUT_OF_RANGE, INVALID_FORMAT, UNKNOWN_VALUE); nothing written", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const me = yield* player(f)
        const [a] = take(f, 1)
        const before = yield* footprint(me.id, [a!])
        const many = Array.from({ length: 101 }, (_, i) => ({ work_id: String(i + 1), minutes: 1 }))
        expectErrors(yield* report(f, me.key, many), [{
          reason: "TOO_MANY_ITEMS",
          pointer: "/items",
          params: { max_items: 100 }
        }])
        expectErrors(
          yield* f.call("POST", "/v2/playtimes", { key: me.key, body: { items: [{ work_id: a }, { minutes: 3 }] } }),
          [{ reason: "REQUIRED", pointer: "/items/0/minutes" }, { reason: "REQUIRED", pointer: "/items/1/work_id" }]
        )
        expectErrors(yield* report(f, me.key, [{ work_id: a!, minutes: 60_001 }, { work_id: a!, minutes: -1 }]), [
          { reason: "OUT_OF_RANGE", pointer: "/items/0/minutes", params: { minimum: 0, maximum: 60000 } },
          { reason: "OUT_OF_RANGE", pointer: "/items/1/minutes", params: { minimum: 0, maximum: 60000 } }
        ])
        const format = yield* report(f, me.key, [{ work_id: "w1", minutes: 1 }])
        expect(expectProblemCode(format, 422, "VALIDATION_FAILED").errors[0]).toMatchObject({
          reason: "INVALID_FORMAT",
          pointer: "/items/0/work_id"
        })
        const excess = yield* f.call("POST", "/v2/playtimes", {
          key: me.key,
          body: { items: [{ work_id: a, minutes: 1, hours: 2 }] }
        })
        const excessErrors = expectProblemCode(excess, 422, "VALIDATION_FAILED").errors
        expect(excessErrors).toHaveLength(1)
        expect(excessErrors[0]).toMatchObject({ reason: "UNKNOWN_VALUE", pointer: "/items/0/hours" })
        expect(
          expectProblemCode(yield* f.call("POST", "/v2/playtimes", { key: me.key, body: {} }), 422, "VALIDATION_FAILED")
            .errors
        )
          .toEqual([{ reason: "REQUIRED", pointer: "/items", detail: expect.any(String) }])
        expect(yield* footprint(me.id, [a!])).toEqual(before)
      }))

    it.effect("an unknown, withdrawn or gated-away work is UNKNOWN_REFERENCE at /items/<n>/work_id; a repeat is DUPLICATE_ITEM; nothing of the batch written", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const sql = yield* SqlClient.SqlClient
        const me = yield* player(f)
        const [a, b] = take(f, 2)
        const [nsfw] = yield* sql<{ id: string }>`
          SELECT id::text AS id FROM works WHERE live AND nsfw ORDER BY id LIMIT 1`.pipe(Effect.orDie)
        const [gone] = yield* sql<{ id: string }>`
          SELECT id::text AS id FROM works WHERE NOT live ORDER BY id LIMIT 1`.pipe(Effect.orDie)
        expect(nsfw).toBeDefined()
        const touched = [a!, b!, nsfw!.id]
        const before = yield* footprint(me.id, touched)
        const unknown = [
          { work_id: a!, minutes: 10 },
          { work_id: "999999999", minutes: 10 },
          { work_id: nsfw!.id, minutes: 10 },
          { work_id: "99999999999999999999", minutes: 10 },
          ...(gone === undefined ? [] : [{ work_id: gone.id, minutes: 10 }])
        ]
        expectErrors(yield* report(f, me.key, unknown), [
          { reason: "UNKNOWN_REFERENCE", pointer: "/items/1/work_id" },
          { reason: "UNKNOWN_REFERENCE", pointer: "/items/2/work_id" },
          { reason: "UNKNOWN_REFERENCE", pointer: "/items/3/work_id" },
          ...(gone === undefined ? [] : [{ reason: "UNKNOWN_REFERENCE", pointer: "/items/4/work_id" }])
        ])
        // `007` and `7` name one work.
        expectErrors(
          yield* report(f, me.key, [{ work_id: a!, minutes: 1 }, { work_id: b!, minutes: 2 }, {
            work_id: `00${a}`,
            minutes: 3
          }]),
          [{ reason: "DUPLICATE_ITEM", pointer: "/items/2/work_id" }]
        )
        expect(yield* footprint(me.id, touched)).toEqual(before)
        // An nsfw credential sees the nsfw work, so it may report it.
        const lewd = yield* player(f, { nsfw: true })
        expect(expectStatus(yield* report(f, lewd.key, [{ work_id: nsfw!.id, minutes: 5 }]), 200).items[0])
          .toMatchObject({
            work_id: nsfw!.id,
            minutes: 5
          })
        // The sfw bearer's list does not show the nsfw work; the nsfw bearer's does.
        expect(expectStatus(yield* f.call("GET", "/v2/playtimes", { key: lewd.key }), 200).items).toHaveLength(1)
        const sfwKey = yield* f.makeKey("site_a", scopes, lewd.id)
        expect(expectStatus(yield* f.call("GET", "/v2/playtimes", { key: sfwKey }), 200).items).toEqual([])
      }))

    it.effect("docs/writing.md, \"Who may write\": a key without a user is 403 USER_IDENTITY_REQUIRED, one without the scope 403; a replay repeats the answer", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const [a] = take(f, 1)
        const noUser = yield* f.makeKey("site_a", scopes, null)
        const res = yield* report(f, noUser, [{ work_id: a!, minutes: 1 }])
        expectProblemCode(res, 403, "USER_IDENTITY_REQUIRED")
        expectProblemCode(yield* f.call("GET", "/v2/playtimes", { key: noUser }), 403, "USER_IDENTITY_REQUIRED")
        const me = yield* player(f)
        const readOnly = yield* f.makeKey("site_a", ["catalog:read"], me.id)
        expect((yield* report(f, readOnly, [{ work_id: a!, minutes: 1 }])).status).toBe(403)
        expect((yield* f.call("GET", "/v2/playtimes", { key: readOnly })).status).toBe(403)
        expect(yield* footprint(me.id, [a!])).toMatchObject({ mine: 0, aggregates: 0 })

        const body = { items: [{ work_id: a!, minutes: 7 }] }
        const headers = { "idempotency-key": `replay-${Date.now()}` }
        const first = yield* f.call("POST", "/v2/playtimes", { key: me.key, body, headers })
        const again = yield* f.call("POST", "/v2/playtimes", { key: me.key, body, headers })
        expect(again.status).toBe(200)
        expect(again.headers.get("idempotent-replayed")).toBe("true")
        expect(again.body).toEqual(first.body)
        const other = yield* f.call("POST", "/v2/playtimes", {
          key: me.key,
          body: { items: [{ work_id: a!, minutes: 8 }] },
          headers
        })
        expectProblemCode(other, 409, "IDEMPOTENCY_KEY_REUSED")
        expect((yield* direct([a!])).get(a!)).toEqual({ players: 1, median_minutes: 7 })
      }))

    it.effect("GET /v2/playtimes lists the bearer's own playtimes, most recently updated first, in cursor pages", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const me = yield* player(f)
        const other = yield* player(f)
        const works = take(f, 5)
        for (const [i, work] of works.entries()) {
          expectStatus(yield* report(f, me.key, [{ work_id: work, minutes: i * 10 }]), 200)
        }
        expectStatus(yield* report(f, other.key, [{ work_id: works[0]!, minutes: 999 }]), 200)
        // Updating the first moves it to the front.
        expectStatus(yield* report(f, me.key, [{ work_id: works[0]!, minutes: 11 }]), 200)
        const seen: Array<any> = []
        let cursor: string | undefined
        let pages = 0
        do {
          const url = `/v2/playtimes?limit=2${cursor === undefined ? "" : `&cursor=${encodeURIComponent(cursor)}`}`
          const body = expectStatus(yield* f.call("GET", url, { key: me.key }), 200)
          expect(body.object).toBe("list")
          seen.push(...body.items)
          cursor = body.next_cursor
          pages++
        } while (cursor !== undefined && pages < 10)
        expect(pages).toBe(3)
        expect(seen.map((p) => [p.work_id, p.minutes])).toEqual([
          [works[0], 11],
          [works[4], 40],
          [works[3], 30],
          [works[2], 20],
          [works[1], 10]
        ])
        // A cursor is bound to its bearer.
        const first = expectStatus(yield* f.call("GET", "/v2/playtimes?limit=1", { key: me.key }), 200)
        expectProblemCode(
          yield* f.call("GET", `/v2/playtimes?cursor=${encodeURIComponent(first.next_cursor)}`, { key: other.key }),
          400,
          "INVALID_CURSOR"
        )
      }))

    it.effect("include=playtime: players and the median are exact on list and detail reads after several users' batches that move their minutes; the work's feed row follows", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const sql = yield* SqlClient.SqlClient
        const works = take(f, 3)
        const reader = yield* f.makeKey("site_a", ["catalog:read"], null)
        // No players yet: players 0, median null.
        const none = yield* expectExact(f, reader, works)
        expect(none.get(works[0]!)).toEqual({ players: 0, median_minutes: null })
        const people = yield* Effect.forEach(Array.from({ length: 6 }), () => player(f))
        const rounds: ReadonlyArray<ReadonlyArray<number>> = [
          [10, 250, 249, 60_000, 0, 500],
          [10, 10, 1000, 3, 250, 251],
          [59_999, 0, 0, 0, 7, 7]
        ]
        for (const [r, minutes] of rounds.entries()) {
          for (const [i, person] of people.entries()) {
            // Each person reports a different subset, so counts differ per work (even and odd).
            const items = works.filter((_, w) => (i + w + r) % 3 !== 0).map((work, w) => ({
              work_id: work,
              minutes: minutes[(i + w) % minutes.length]!
            }))
            expectStatus(yield* report(f, person.key, items), 200)
          }
          const want = yield* expectExact(f, reader, works)
          for (const id of works) expect(want.get(id)!.players).toBeGreaterThan(0)
        }
        // Every served aggregate also holds in the stored state: the histogram sums to the players.
        const [sums] = yield* sql<{ bad: number }>`
          SELECT count(*)::int AS bad FROM work_playtimes s
          WHERE s.work_id = ANY(${works}::bigint[]) AND s.players <> (
            SELECT coalesce(sum(players), 0) FROM work_playtime_minutes m WHERE m.work_id = s.work_id)`.pipe(
          Effect.orDie
        )
        expect(sums!.bad).toBe(0)
        // A change of a work's aggregate writes its change-feed row.
        const stamp = (id: string) =>
          Effect.map(
            sql<{ at: string }>`
              SELECT updated_at::text AS at FROM catalog_changes WHERE target_object = 'work' AND id = ${id}::bigint`,
            (rows) => rows[0]?.at
          ).pipe(Effect.orDie)
        const before = yield* stamp(works[0]!)
        const newcomer = yield* player(f)
        expectStatus(yield* report(f, newcomer.key, [{ work_id: works[0]!, minutes: 12_345 }]), 200)
        const after = yield* stamp(works[0]!)
        expect(after).toBeDefined()
        expect(after).not.toEqual(before)
        yield* expectExact(f, reader, works)
      }))

    it.effect("concurrent batches of many users on the same works give exact aggregates", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const sql = yield* SqlClient.SqlClient
        const works = take(f, 4)
        const people = yield* Effect.forEach(Array.from({ length: 16 }), () => player(f))
        for (const round of [0, 1, 2]) {
          const answers = yield* Effect.forEach(
            people,
            (person, i) =>
              report(
                f,
                person.key,
                // Different orders, so writers meet each other's locks from both sides.
                (i % 2 === 0 ? works : [...works].reverse()).map((work, w) => ({
                  work_id: work,
                  minutes: ((i + 1) * 37 + w * 101 + round * 613) % 60_001
                }))
              ),
            { concurrency: "unbounded" }
          )
          for (const res of answers) expectStatus(res, 200)
        }
        const want = yield* expectExact(f, f.keys.readOnly, works)
        for (const id of works) expect(want.get(id)!.players).toBe(16)
        const [bad] = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM (
            SELECT m.work_id, m.minutes, m.players, count(p.user_id) AS actual
            FROM work_playtime_minutes m
            LEFT JOIN playtimes p ON p.work_id = m.work_id AND p.minutes = m.minutes
            WHERE m.work_id = ANY(${works}::bigint[])
            GROUP BY m.work_id, m.minutes, m.players
          ) x WHERE x.players <> x.actual`.pipe(Effect.orDie)
        expect(bad!.n).toBe(0)
      }))
  })
})

describe("playtime quota (docs/writing.md, \"Playtimes\" and \"Limits\")", () => {
  it.layer(
    ClaimsFixtureLive({ works: 20, config: { CATALOG_QUOTA_PLAYTIMES: "2" } }),
    serverLayerOptions("180 seconds")
  )(
    (it) => {
      it.effect("each batch counts once against the site's playtimes quota; past it 429 QUOTA_EXCEEDED and nothing written; refusals and replays use none", () =>
        Effect.gen(function*() {
          const f = yield* ClaimsFixture
          const sql = yield* SqlClient.SqlClient
          const me = yield* player(f)
          const [a, b, c] = f.works
          const used = Effect.map(
            sql<{ used: number }>`
              SELECT used::int AS used FROM catalog_quota_usage
              WHERE site = 'site_a' AND kind = 'playtimes' AND day = (now() AT TIME ZONE 'UTC')::date`,
            (rows) => rows[0]?.used ?? 0
          ).pipe(Effect.orDie)
          const headers = { "idempotency-key": "quota-batch-1" }
          const body = { items: [{ work_id: a!, minutes: 10 }, { work_id: b!, minutes: 20 }] }
          expectStatus(yield* f.call("POST", "/v2/playtimes", { key: me.key, body, headers }), 200)
          expect(yield* used).toBe(1)
          // A refusal and a replay use none.
          expectProblemCode(yield* report(f, me.key, [{ work_id: "999999999", minutes: 1 }]), 422, "VALIDATION_FAILED")
          const replay = yield* f.call("POST", "/v2/playtimes", { key: me.key, body, headers })
          expect(replay.headers.get("idempotent-replayed")).toBe("true")
          expect(yield* used).toBe(1)
          expectStatus(yield* report(f, me.key, [{ work_id: a!, minutes: 11 }]), 200)
          expect(yield* used).toBe(2)
          const third = yield* report(f, me.key, [{ work_id: c!, minutes: 30 }, { work_id: a!, minutes: 12 }])
          expect(expectProblemCode(third, 429, "QUOTA_EXCEEDED")).toMatchObject({ quota: "playtimes", limit: 2 })
          expect(yield* used).toBe(2)
          const stored = yield* sql<{ work_id: string; minutes: number }>`
            SELECT work_id::text AS work_id, minutes FROM playtimes WHERE user_id = ${me.id} ORDER BY work_id`.pipe(
            Effect.orDie
          )
          expect(stored).toEqual(
            [{ work_id: a, minutes: 11 }, { work_id: b, minutes: 20 }].sort((x, y) =>
              Number(x.work_id) - Number(y.work_id)
            )
          )
          yield* expectExact(f, f.keys.readOnly, [a!, b!, c!])
        }))
    }
  )
})
