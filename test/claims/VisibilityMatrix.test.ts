/**
 * Who sees what (docs/writing.md, "Claims", "Who sees what"), generated from one table: for every
 * kind of caller and a claim in every state, what the caller sees of it (`all`, `public`, `none`).
 * Every claim read is driven with every caller against every claim, and its expected answer is
 * computed from that one entry, the route's declared scope and rule, and the stored claim and events:
 *
 * - `getClaim`: `all`/`public` read the claim as it is (`public` without the last event's `reason`);
 *   `none` reads 404, or `none` with no trace of the claim.
 * - `listClaims`: lists the claim when the caller sees an event of it that its user made.
 * - `moderationQueue`: lists the claim in its state when the caller sees it.
 * - `listClaimEvents` (the log): `all` every event with its reason, `public` the public ones (into or out
 *   of `live`, on a served work) with `reason` null, `none` nothing.
 * - `snapshot`: the work's fields, when the caller sees the claim and the work is served.
 *
 * A route that reads claims or claim events and is missing from `reads` fails the first test.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Context, Effect, Option } from "effect"
import { SqlClient } from "effect/sql"
import { RequiredScope, type Scope } from "../../schema/Annotations.js"
import { type RouteRule, RouteRules } from "../../schema/Api/Writes.js"
import { catalogRoutes } from "../../src/catalog/CatalogServer.js"
import {
  ClaimsFixture,
  ClaimsFixtureLive,
  type ClaimsFixtureShape,
  startJwksRelay,
  writeScopes
} from "../support/Claims.js"
import { serverLayerOptions } from "../support/TestServers.js"

const relay = await startJwksRelay()
afterAll(() => relay.close())

// -------------------------------------------------------------------------------------------------
// The table
// -------------------------------------------------------------------------------------------------

const callers = ["ownSite", "otherSite", "moderator", "sfwModerator", "siteless", "readOnly", "anonymous"] as const
type Caller = (typeof callers)[number]

const claims = ["released", "draft", "pending", "live", "declined", "hidden", "nsfw"] as const
type ClaimName = (typeof claims)[number]

type Sight = "all" | "public" | "none"

const N = "none" as const
const P = "public" as const
const A = "all" as const

/**
 * What each caller sees of each claim. Every claim is `site_a`'s, made by one user; `nsfw` is a live
 * claim on an nsfw work. `ownSite` is that user's sfw key of `site_a`, `otherSite` the same user's
 * key of `site_b` (a credential reads as its site, not as its user), `moderator` an nsfw key of a
 * moderator, `sfwModerator` the same moderator's sfw key, `siteless` an access token of a client
 * without a site, `readOnly` a `catalog:read` key without a user of a third site.
 */
const table: Record<Caller, Record<ClaimName, Sight>> = {
  //            released draft pending live declined hidden nsfw
  ownSite: { released: A, draft: A, pending: A, live: A, declined: A, hidden: A, nsfw: N },
  otherSite: { released: N, draft: N, pending: N, live: P, declined: N, hidden: N, nsfw: N },
  moderator: { released: A, draft: A, pending: A, live: A, declined: A, hidden: A, nsfw: A },
  sfwModerator: { released: A, draft: A, pending: A, live: A, declined: A, hidden: A, nsfw: N },
  siteless: { released: N, draft: N, pending: N, live: P, declined: N, hidden: N, nsfw: N },
  readOnly: { released: N, draft: N, pending: N, live: P, declined: N, hidden: N, nsfw: N },
  anonymous: { released: N, draft: N, pending: N, live: N, declined: N, hidden: N, nsfw: N }
}

/** What a caller's credential carries, for the route checks (scope, user, role). */
interface Credential {
  readonly key: string | undefined
  readonly scopes: ReadonlySet<Scope>
  readonly userId: number | undefined
  readonly moderator: boolean
}

// -------------------------------------------------------------------------------------------------
// The world: the claims, the callers, and what is stored
// -------------------------------------------------------------------------------------------------

interface StoredEvent {
  readonly id: string
  readonly from_state: string | null
  readonly to_state: string
  readonly reason: string | null
  readonly actor_uid: string
  readonly site: string
}

interface Stored {
  readonly work: string
  readonly state: string
  readonly site: string
  readonly product_work_id: string | null
  readonly live: boolean
  readonly events: ReadonlyArray<StoredEvent>
}

interface World {
  readonly f: ClaimsFixtureShape
  readonly callers: Record<Caller, Credential>
  readonly claims: Record<ClaimName, Stored>
}

let world: World | undefined

const build = Effect.gen(function*() {
  const f = yield* ClaimsFixture
  const sql = yield* SqlClient.SqlClient
  const maker = yield* f.makeUser([])
  const own = yield* f.makeKey("site_a", writeScopes, maker)
  const ownNsfw = yield* f.makeKeyWithLimit("site_a", writeScopes, maker, "nsfw")
  const moderatorNsfw = yield* f.makeKeyWithLimit("mod_site", writeScopes, f.moderator.id, "nsfw")
  const siteless = yield* f.makeUser([])
  const all = new Set<Scope>(writeScopes)
  const credentials: Record<Caller, Credential> = {
    ownSite: { key: own, scopes: all, userId: maker, moderator: false },
    otherSite: { key: yield* f.makeKey("site_b", writeScopes, maker), scopes: all, userId: maker, moderator: false },
    moderator: { key: moderatorNsfw, scopes: all, userId: f.moderator.id, moderator: true },
    sfwModerator: { key: f.moderator.key, scopes: all, userId: f.moderator.id, moderator: true },
    siteless: {
      key: yield* relay.accessToken({ userId: siteless, scope: "openid catalog:read claims:write" }),
      scopes: new Set<Scope>(["catalog:read", "claims:write"]),
      userId: siteless,
      moderator: false
    },
    readOnly: {
      key: yield* f.makeKey("mirror_site", ["catalog:read"], null),
      scopes: new Set<Scope>(["catalog:read"]),
      userId: undefined,
      moderator: false
    },
    anonymous: { key: undefined, scopes: new Set(), userId: undefined, moderator: false }
  }

  const ok = (res: { status: number; body: any }, status = 201) => {
    expect(res.status, JSON.stringify(res.body)).toBe(status)
    return res.body
  }
  const create = (body: unknown, key = own) => Effect.map(f.call("POST", "/v2/claims", { key, body }), ok)
  const decide = (work: string, body: unknown, key = f.moderator.key) =>
    Effect.map(
      f.call("POST", `/v2/moderation/claims/${work}/decisions`, { key, body, headers: { "if-match": "*" } }),
      ok
    )
  const existing = (n: number) => create({ work_id: f.works[n]!, site_work_id: String(500 + n) })

  const released = (yield* existing(0)).id
  ok(yield* f.call("DELETE", `/v2/claims/${released}`, { key: own }), 200)
  const draft = (yield* create({ display_name: `Matrix draft ${Date.now()}`, site_work_id: "600" })).id
  const pending = (yield* existing(1)).id
  const live = (yield* existing(2)).id
  yield* decide(live, { decision: "approve", note: "Approved: looks right." })
  const declined = (yield* existing(3)).id
  yield* decide(declined, { decision: "decline", note: "The moderator's private reason." })
  const hidden = (yield* existing(4)).id
  yield* decide(hidden, { decision: "ban", note: "Banned before it was ever live." })
  const [nsfwWork] = yield* sql<{ id: string }>`
    SELECT w.id::text AS id FROM works w WHERE w.live AND w.nsfw
      AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.work_id = w.id)
    ORDER BY w.id LIMIT 1`
  expect(nsfwWork, "the seeded catalog has no nsfw work").toBeDefined()
  const nsfw = (yield* create({ work_id: nsfwWork!.id, site_work_id: "700" }, ownNsfw)).id
  yield* decide(nsfw, { decision: "approve", note: "Approved, nsfw." }, moderatorNsfw)

  const stored = (work: string) =>
    Effect.gen(function*() {
      const [row] = yield* sql<{ state: string; site: string; product_work_id: string | null; live: boolean }>`
        SELECT c.state, c.site, CASE WHEN c.state = 'none' THEN NULL ELSE c.site_work_id END AS product_work_id,
               w.live
        FROM claims c JOIN works w ON w.id = c.work_id WHERE c.work_id = ${work}::bigint`
      const events = yield* sql<StoredEvent>`
        SELECT e.id::text AS id, e.from_state, e.to_state, e.reason, e.actor_uid, e.site
        FROM claim_events e WHERE e.work_id = ${work}::bigint ORDER BY e.id`
      return { work, ...row!, events }
    }).pipe(Effect.orDie)

  return {
    f,
    callers: credentials,
    claims: {
      released: yield* stored(released),
      draft: yield* stored(draft),
      pending: yield* stored(pending),
      live: yield* stored(live),
      declined: yield* stored(declined),
      hidden: yield* stored(hidden),
      nsfw: yield* stored(nsfw)
    }
  } satisfies World
})

const theWorld = Effect.suspend(() =>
  world !== undefined ? Effect.succeed(world) : Effect.tap(build, (w) => Effect.sync(() => (world = w)))
)

// -------------------------------------------------------------------------------------------------
// What a sight means for one claim
// -------------------------------------------------------------------------------------------------

/** docs/writing.md, "Who sees what": into or out of `live`, on a served work. */
const isPublic = (claim: Stored, event: StoredEvent) =>
  claim.live && (event.from_state === "live" || event.to_state === "live")

const seenEvents = (claim: Stored, sight: Sight) =>
  sight === "all" ? claim.events : sight === "public" ? claim.events.filter((e) => isPublic(claim, e)) : []

/** The route's own checks let the caller through (scope, user, role), from the route's declaration. */
const reaches = (credential: Credential, read: ReadName) => {
  if (credential.key === undefined) return false
  const route = routeOf(read)
  const scope = Context.getOption(route.annotations, RequiredScope)
  const rule: RouteRule | undefined = Option.getOrUndefined(Context.getOption(route.annotations, RouteRules))
  if (Option.isSome(scope) && scope.value !== "any" && !credential.scopes.has(scope.value)) return false
  if (rule?.user === true && credential.userId === undefined) return false
  if (rule?.role !== undefined && !credential.moderator) return false
  return true
}

// -------------------------------------------------------------------------------------------------
// The reads
// -------------------------------------------------------------------------------------------------

type Reply = Effect.Success<ReturnType<ClaimsFixtureShape["call"]>>

const expectRefused = (res: Reply, credential: Credential, what: string) => {
  expect(res.status, `${what}: ${JSON.stringify(res.body)}`).toBe(credential.key === undefined ? 401 : 403)
}

/** Every page of a list (`query` without `cursor`). */
const allPages = (f: ClaimsFixtureShape, key: string | undefined, path: string) =>
  Effect.gen(function*() {
    const items: Array<any> = []
    let cursor: string | undefined
    for (let pages = 0; pages < 100; pages++) {
      const sep = path.includes("?") ? "&" : "?"
      const res = yield* f.call(
        "GET",
        `${path}${cursor === undefined ? "" : `${sep}cursor=${encodeURIComponent(cursor)}`}`,
        {
          ...(key === undefined ? {} : { key })
        }
      )
      if (res.status !== 200) return { res, items: undefined }
      items.push(...res.body.items)
      cursor = res.body.next_cursor
      if (cursor === undefined || res.body.items.length === 0) return { res, items }
    }
    throw new Error(`${path} did not end`)
  })

interface Case {
  readonly caller: Caller
  readonly credential: Credential
  readonly name: ClaimName
  readonly claim: Stored
  readonly sight: Sight
}

const cases = (w: World): ReadonlyArray<Case> =>
  callers.flatMap((caller) =>
    claims.map((name) => ({
      caller,
      credential: w.callers[caller],
      name,
      claim: w.claims[name],
      sight: table[caller][name]
    }))
  )

const label = (c: Case) => `${c.caller} on the ${c.name} claim (${c.sight})`

const reads = {
  getClaim: (w: World) =>
    Effect.forEach(cases(w), (c) =>
      Effect.gen(function*() {
        const res = yield* w.f.call("GET", `/v2/claims/${c.claim.work}`, {
          ...(c.credential.key === undefined ? {} : { key: c.credential.key })
        })
        if (!reaches(c.credential, "getClaim")) return expectRefused(res, c.credential, label(c))
        const ids = c.claim.events.map((e) => e.id)
        if (c.sight === "none") {
          if (res.status === 404) return
          expect(res.status, label(c)).toBe(200)
          expect(res.body, label(c)).toMatchObject({ state: "none", site: "", product_work_id: null })
          expect(ids, label(c)).not.toContain(res.body.last_event?.id)
          return
        }
        expect(res.status, `${label(c)}: ${JSON.stringify(res.body)}`).toBe(200)
        const last = c.claim.events[c.claim.events.length - 1]!
        expect(res.body, label(c)).toMatchObject({
          state: c.claim.state,
          site: c.claim.site,
          product_work_id: c.claim.product_work_id
        })
        expect(res.body.last_event, label(c)).toMatchObject({
          id: last.id,
          to_state: last.to_state,
          reason: c.sight === "all" ? last.reason : null
        })
        expect(res.headers.get("etag"), label(c)).toBe(`"claim-${c.claim.work}-${last.id}"`)
      }), { discard: true }),

  listClaims: (w: World) =>
    Effect.forEach(callers, (caller) =>
      Effect.gen(function*() {
        const credential = w.callers[caller]
        const { items, res } = yield* allPages(w.f, credential.key, "/v2/claims?limit=100")
        if (!reaches(credential, "listClaims")) return expectRefused(res, credential, `${caller} lists`)
        expect(items, `${caller}: ${JSON.stringify(res.body)}`).toBeDefined()
        const listed = new Set(items!.map((item) => item.id))
        for (const name of claims) {
          const claim = w.claims[name]
          const sight = table[caller][name]
          const acted = seenEvents(claim, sight).some((e) => e.actor_uid === String(credential.userId))
          expect(listed.has(claim.work), `${caller} lists the ${name} claim (${sight})`).toBe(acted)
        }
      }), { discard: true }),

  moderationQueue: (w: World) =>
    Effect.forEach(cases(w), (c) =>
      Effect.gen(function*() {
        const site = c.claim.site === "" ? "" : `&site=${c.claim.site}`
        const { items, res } = yield* allPages(
          w.f,
          c.credential.key,
          `/v2/moderation/claims?state=${c.claim.state}${site}&limit=100`
        )
        if (!reaches(c.credential, "moderationQueue")) return expectRefused(res, c.credential, label(c))
        expect(items, `${label(c)}: ${JSON.stringify(res.body)}`).toBeDefined()
        expect(items!.map((item) => item.id).includes(c.claim.work), label(c)).toBe(c.sight !== "none")
      }), { discard: true }),

  listClaimEvents: (w: World) =>
    Effect.forEach(cases(w), (c) =>
      Effect.gen(function*() {
        const res = yield* w.f.call("GET", `/v2/catalog/claim-events?work_id=${c.claim.work}&limit=100`, {
          ...(c.credential.key === undefined ? {} : { key: c.credential.key })
        })
        if (!reaches(c.credential, "listClaimEvents")) return expectRefused(res, c.credential, label(c))
        expect(res.status, `${label(c)}: ${JSON.stringify(res.body)}`).toBe(200)
        const expected = seenEvents(c.claim, c.sight)
        const current = expected.some((e) => e.id === c.claim.events[c.claim.events.length - 1]!.id)
        expect(res.body.items, label(c)).toEqual(expected.map((e) => ({
          object: "claim_event",
          id: e.id,
          work_id: c.claim.work,
          from_state: e.from_state,
          to_state: e.to_state,
          reason: c.sight === "all" ? e.reason : null,
          actor_uid: e.actor_uid,
          site: e.site,
          product_work_id: current ? c.claim.product_work_id : null,
          created_at: expect.any(String)
        })))
      }), { discard: true }),

  snapshot: (w: World) =>
    Effect.forEach(cases(w), (c) =>
      Effect.gen(function*() {
        const res = yield* w.f.call("GET", `/v2/moderation/snapshots/work/${c.claim.work}`, {
          ...(c.credential.key === undefined ? {} : { key: c.credential.key })
        })
        if (!reaches(c.credential, "snapshot")) return expectRefused(res, c.credential, label(c))
        expect(res.status, `${label(c)}: ${JSON.stringify(res.body)}`).toBe(
          c.sight !== "none" && c.claim.live ? 200 : 404
        )
      }), { discard: true })
} as const
type ReadName = keyof typeof reads

// -------------------------------------------------------------------------------------------------
// The routes that read claims: every one is in `reads`
// -------------------------------------------------------------------------------------------------

/** The groups that serve claims, their moderation and their event log (schema/Api/ClaimsApi.ts). */
const claimGroups = new Set(["claims", "moderation", "claimEvents"])

const claimReads = catalogRoutes.routes.filter((route) =>
  route.method === "GET" && (claimGroups.has(route.group.identifier) || /claim/i.test(route.path))
)

const routeOf = (read: ReadName) => {
  const route = claimReads.find((r) => r.endpoint.identifier === read)
  if (route === undefined) throw new Error(`no GET route named ${read} among the claim reads`)
  return route
}

describe("who sees what (docs/writing.md, \"Claims\", \"Who sees what\")", () => {
  it("every GET route of the claim groups, and every GET route naming claims, is a read of the matrix", () => {
    expect(claimReads.length).toBeGreaterThan(0)
    for (const route of claimReads) {
      expect(Object.keys(reads), `${route.method} ${route.path} (${route.endpoint.identifier}) reads claims`)
        .toContain(route.endpoint.identifier)
    }
    for (const read of Object.keys(reads) as Array<ReadName>) expect(routeOf(read).method).toBe("GET")
  })

  it.layer(ClaimsFixtureLive({ config: { IDENTITY_JWKS_URL: relay.url } }), serverLayerOptions())((it) => {
    it.effect("the world: one claim in each state, as stored", () =>
      Effect.gen(function*() {
        const w = yield* theWorld
        expect(Object.fromEntries(claims.map((name) => [name, w.claims[name].state]))).toEqual({
          released: "none",
          draft: "draft",
          pending: "pending",
          live: "live",
          declined: "declined",
          hidden: "hidden",
          nsfw: "live"
        })
        expect(w.claims.draft.live).toBe(false)
      }))

    for (const read of Object.keys(reads) as Array<ReadName>) {
      it.effect(`${read}: each caller sees each claim as the table says`, () =>
        Effect.flatMap(theWorld, (w) => reads[read](w)))
    }
  })
})
