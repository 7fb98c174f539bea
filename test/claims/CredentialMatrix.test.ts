/**
 * The credential matrix (docs/writing.md, "Who may write"), generated from the route
 * declarations: every route of the catalog's route table that carries a `RouteRules` annotation is
 * driven with every kind of credential, and the expected answer is computed from its rule and its
 * `RequiredScope` alone. A new ruled route joins the matrix without anyone editing this file (and
 * fails loudly if it needs a path parameter or a body the matrix does not know how to fill).
 * The OpenAPI document is checked against the same rules.
 *
 * What a route's path names (a claim, or an edit proposal of docs/writing.md, "Edit proposals") is
 * decided from its path prefix (`resources`); a route under a prefix the matrix does not know fails
 * loudly too.
 *
 * Besides API keys, the matrix holds an identity access token of a client without a site: a
 * credential of no site, which no write (a declared route whose method is not GET) accepts.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import sharp from "sharp"
import { RequiredScope, type Scope, Scopes } from "../../schema/Annotations.js"
import { SiteWriteAuthorization, WriteAuthorization } from "../../schema/Api/Security.js"
import { ManagementRoles, type RouteRule, RouteRules } from "../../schema/Api/Writes.js"
import { ClaimDecisionRecord, ClaimRecord, ListClaimRecord, Snapshot } from "../../schema/Catalog/Claim.js"
import { CoverVote, ListCoverVote } from "../../schema/Catalog/CoverVote.js"
import { EditImage } from "../../schema/Catalog/EditImage.js"
import { NewsItem } from "../../schema/Catalog/News.js"
import { ListPlaytime } from "../../schema/Catalog/Playtime.js"
import { Amendment, ListAmendment, ListProposal, Proposal } from "../../schema/Catalog/Proposal.js"
import { FieldError, type ProblemCode, ProblemCodes } from "../../schema/Problem.js"
import { catalogRoutes } from "../../src/catalog/CatalogServer.js"
import type { AppSecret } from "../../src/platform/Config.js"
import type { RouteEntry } from "../../src/platform/RouteTable.js"
import { ClaimsFixture, ClaimsFixtureLive, type ClaimsFixtureShape, startJwksRelay } from "../support/Claims.js"
import { serverLayerOptions, TestServers } from "../support/TestServers.js"

type Reply = Effect.Success<ReturnType<ClaimsFixtureShape["call"]>>

// -------------------------------------------------------------------------------------------------
// The ruled routes, from the route table
// -------------------------------------------------------------------------------------------------

interface Ruled {
  readonly route: RouteEntry
  readonly name: string
  readonly rule: RouteRule
  readonly scope: Scope | "any"
}

const ruled: ReadonlyArray<Ruled> = catalogRoutes.routes.flatMap((route) => {
  const rule = Context.getOption(route.annotations, RouteRules)
  if (Option.isNone(rule)) return []
  const scope = Context.getOption(route.annotations, RequiredScope)
  if (Option.isNone(scope)) throw new Error(`${route.method} ${route.path} has a rule but no RequiredScope`)
  return [{ route, name: route.endpoint.identifier, rule: rule.value, scope: scope.value }]
})

const label = (r: Ruled) => `${r.route.method} ${r.route.path} (${r.name})`

// -------------------------------------------------------------------------------------------------
// Identity access tokens
// -------------------------------------------------------------------------------------------------

const relay = await startJwksRelay()

/** A client without a site: its users' tokens belong to no site. */
const SITELESS_CLIENT = "matrix-siteless"

/**
 * An access token of `SITELESS_CLIENT` for a new user without roles, bound to a live sign-in
 * session, with every catalog scope. The client is a row of `oauth_clients` with no `site`,
 * inserted here as the test support inserts rows (the CLI no longer registers a client without a
 * site that may hold a write scope, but rows from before it did, and nothing else stops such a
 * token); the token is signed with the provider's own key as the provider issues them, without a
 * `site` claim since its client has none.
 */
const sitelessToken = (f: ClaimsFixtureShape) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`
      INSERT INTO oauth_clients (client_id, name, secret_hash, redirect_uris)
      VALUES (${SITELESS_CLIENT}, 'Site-less client', 'unused', ${["https://siteless.example/cb"]})
      ON CONFLICT (client_id) DO NOTHING`.pipe(Effect.orDie)
    const userId = yield* f.makeUser([])
    return yield* relay.accessToken({ userId, scope: ["openid", ...Scopes].join(" "), clientId: SITELESS_CLIENT })
  })

// -------------------------------------------------------------------------------------------------
// Credentials, and what a rule makes of each
// -------------------------------------------------------------------------------------------------

/** The site of the prepared claims and proposals (made by `siteUser`). */
const CLAIM_SITE = "site_a"

interface CredentialKind {
  readonly kind: string
  /** false: no Authorization header at all. */
  readonly present: boolean
  readonly valid: boolean
  readonly scopes: ReadonlySet<Scope>
  readonly user: boolean
  readonly roles: ReadonlyArray<string>
  readonly site: string
  /** The bearer token (made once per fixture). */
  readonly key: (f: ClaimsFixtureShape) => Effect.Effect<string | undefined, never, FixtureServices>
}

const all = new Set<Scope>(Scopes)
const keyCache = new Map<string, string>()
/** What the fixture's layer provides besides the fixture (minting a token needs them). */
type FixtureServices = SqlClient.SqlClient | AppSecret | TestServers

const cachedKey = <R>(kind: string, make: Effect.Effect<string, never, R>) =>
  Effect.suspend(() => {
    const found = keyCache.get(kind)
    return found !== undefined
      ? Effect.succeed(found)
      : Effect.tap(make, (key) => Effect.sync(() => keyCache.set(kind, key)))
  })

const credentials: ReadonlyArray<CredentialKind> = [
  {
    kind: "no credential",
    present: false,
    valid: false,
    scopes: new Set(),
    user: false,
    roles: [],
    site: "",
    key: () => Effect.succeed(undefined)
  },
  {
    kind: "an unknown key",
    present: true,
    valid: false,
    scopes: new Set(),
    user: false,
    roles: [],
    site: "",
    key: () => Effect.succeed("sk_unknownunknownunknownunknown")
  },
  {
    kind: "a read-only key (catalog:read)",
    present: true,
    valid: true,
    scopes: new Set<Scope>(["catalog:read"]),
    user: true,
    roles: [],
    site: CLAIM_SITE,
    key: (f) => Effect.succeed(f.keys.readOnly)
  },
  {
    kind: "a key without a user (every scope)",
    present: true,
    valid: true,
    scopes: all,
    user: false,
    roles: [],
    site: CLAIM_SITE,
    key: (f) => cachedKey("noUser", f.makeKey(CLAIM_SITE, Scopes, null))
  },
  {
    kind: "the claiming site's user without a role (every scope)",
    present: true,
    valid: true,
    scopes: all,
    user: true,
    roles: [],
    site: CLAIM_SITE,
    key: (f) => cachedKey("siteUser", f.makeKey(CLAIM_SITE, Scopes, f.siteUser.id))
  },
  {
    kind: "another site's user (every scope)",
    present: true,
    valid: true,
    scopes: all,
    user: true,
    roles: [],
    site: "site_b",
    key: (f) => cachedKey("otherSiteUser", f.makeKey("site_b", Scopes, f.otherSiteUser.id))
  },
  {
    kind: "a moderator of another site (every scope)",
    present: true,
    valid: true,
    scopes: all,
    user: true,
    roles: ["moderator"],
    site: "mod_site",
    key: (f) => cachedKey("moderator", f.makeKey("mod_site", Scopes, f.moderator.id))
  },
  {
    kind: "a user token of a client without a site (every scope)",
    present: true,
    valid: true,
    scopes: all,
    user: true,
    roles: [],
    site: "",
    key: (f) => cachedKey("sitelessToken", sitelessToken(f))
  }
]

/** A management role, or one above it (the nesting schema/Api/Writes.ts declares). */
const holds = (roles: ReadonlyArray<string>, role: (typeof ManagementRoles)[number]) =>
  ManagementRoles.slice(ManagementRoles.indexOf(role)).some((r) => roles.includes(r))

type Expected = ProblemCode | "not refused"

/** What the rule and scope of a route make of a credential, acting on a claim or proposal of CLAIM_SITE. */
const expectedFor = (r: Ruled, c: CredentialKind): Expected => {
  if (!c.present) return "MISSING_CREDENTIAL"
  if (!c.valid) return "INVALID_CREDENTIAL"
  if (r.scope !== "any" && !c.scopes.has(r.scope)) return "SCOPE_REQUIRED"
  // A write needs a credential of some site (docs/writing.md, "Who may write").
  if (r.route.method !== "GET" && c.site === "") return "TENANT_MISMATCH"
  if (r.rule.user && !c.user) return "USER_IDENTITY_REQUIRED"
  if (r.rule.role !== undefined && !holds(c.roles, r.rule.role)) return "PERMISSION_REQUIRED"
  if (r.rule.tenant && c.site !== CLAIM_SITE) return "TENANT_MISMATCH"
  return "not refused"
}

// -------------------------------------------------------------------------------------------------
// Requests
// -------------------------------------------------------------------------------------------------

/**
 * What a route acts on: a claim (named by its work's id), an edit proposal (named by its id), a
 * cover of a work (named `work:cover`, docs/writing.md, "Cover votes"), news (posted under a news
 * source of the credential's site: docs/writing.md, "News"), or the works a playtime batch reports on
 * (named in its body, docs/writing.md, "Playtimes"), or an uploaded image (its raw bytes are the body,
 * docs/writing.md, "Editor images").
 */
type Resource = "claim" | "proposal" | "cover" | "news" | "playtime" | "image"

/**
 * The resource of each ruled route, by the prefix of its path (the prefix itself or a path under it).
 * A ruled route under none of them fails loudly: the matrix would not know what to prepare for it.
 */
const resources: ReadonlyArray<readonly [prefix: string, resource: Resource]> = [
  ["/v2/claims", "claim"],
  ["/v2/moderation/claims", "claim"],
  // The snapshot of the claimed work.
  ["/v2/moderation/snapshots", "claim"],
  ["/v2/proposals", "proposal"],
  ["/v2/moderation/proposals", "proposal"],
  // The cover votes (`/v2/catalog/works/{id}/covers/{cover_id}/vote`, `.../cover-votes`).
  ["/v2/catalog/works", "cover"],
  ["/v2/news", "news"],
  ["/v2/playtimes", "playtime"],
  ["/v2/media", "image"]
]

const resourceOf = (r: Ruled): Resource => {
  const path = r.route.path
  const found = resources.find(([prefix]) => path === prefix || path.startsWith(`${prefix}/`))
  if (found === undefined) {
    throw new Error(`${label(r)}: the matrix does not know what this path names; add its prefix to \`resources\``)
  }
  return found[1]
}

let used = 0
const freshWork = (f: ClaimsFixtureShape) => {
  const work = f.works[used++]
  if (work === undefined) throw new Error("the fixture ran out of works")
  return work
}

/** A live work claimed by `siteUser` (pending). */
const prepareClaim = (f: ClaimsFixtureShape) =>
  Effect.gen(function*() {
    const work = freshWork(f)
    const res = yield* f.call("POST", "/v2/claims", { key: f.siteUser.key, body: { work_id: work } })
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    return work
  })

/**
 * `siteUser`'s key with every scope (the matrix's own credential of that kind): proposals need
 * `catalog:write`, which the fixture's `siteUser.key` does not hold.
 */
const proposerKey = (f: ClaimsFixtureShape) => cachedKey("siteUser", f.makeKey(CLAIM_SITE, Scopes, f.siteUser.id))

/** A minimal valid proposal on a fresh served work. */
const proposalBody = (f: ClaimsFixtureShape) => ({
  entity_type: "catalog.work",
  entity_id: freshWork(f),
  patch: { "catalog.work.length_minutes": 10 }
})

/** An open proposal of CLAIM_SITE made by `siteUser`: its id and the ETag it was created with. */
const prepareProposal = (f: ClaimsFixtureShape) =>
  Effect.gen(function*() {
    const res = yield* f.call("POST", "/v2/proposals", { key: yield* proposerKey(f), body: proposalBody(f) })
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    return { id: String(res.body.id), etag: res.headers.get("etag")! }
  })

let coversUsed = 0
/**
 * A cover of a served sfw work as `work:cover`, one not handed out before; the `last` one (highest
 * id) is kept for the shared resource.
 */
const prepareCover = (last = false) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ work: string; cover: string }>`
      SELECT c.work_id::text AS work, c.id::text AS cover FROM covers c JOIN works w ON w.id = c.work_id
      WHERE w.live AND NOT w.nsfw
      ORDER BY c.id ${last ? sql`DESC` : sql`ASC`} LIMIT 1 OFFSET ${last ? 0 : coversUsed++}`.pipe(Effect.orDie)
    if (rows[0] === undefined) return yield* Effect.die(new Error("the fixture ran out of covers"))
    return `${rows[0].work}:${rows[0].cover}`
  })

/** The news source bound to `site` (made by `prepareNews`). */
const newsSourceOf = (site: string) => `matrix_${site === "" ? "none" : site}`

/** A news source bound to each site of the matrix's credentials; news routes name nothing in their path. */
const prepareNews = () =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    for (const site of new Set(credentials.map((c) => c.site).filter((site) => site !== ""))) {
      yield* sql`
        INSERT INTO news_sources (source, site) VALUES (${newsSourceOf(site)}, ${site})
        ON CONFLICT (source) DO NOTHING`.pipe(Effect.orDie)
    }
    return ""
  })

let newsPosts = 0
/** News posts that got through authorization. */
let newsPosted = 0

/** The work the playtime cells that get through report on. */
let playtimeWork: string | undefined

/** A fresh resource of each kind, named as the route's path names it. */
const prepare: Record<Resource, (f: ClaimsFixtureShape) => Effect.Effect<string, never, FixtureServices>> = {
  claim: prepareClaim,
  proposal: (f) => Effect.map(prepareProposal(f), (p) => p.id),
  cover: () => prepareCover(),
  news: prepareNews,
  // Reporting again on one work is an update: every cell that gets through shares one work.
  playtime: (f) => Effect.sync(() => playtimeWork ??= freshWork(f)),
  image: () => Effect.succeed("through")
}

/** The shared claim: the work's id. */
let shared: string | undefined
/** The shared proposal, with the ETag it was created with. */
let sharedProposal: { readonly id: string; readonly etag: string } | undefined
/** The work the refused playtime cells report on. */
let sharedPlaytimeWork: string | undefined

/** One resource of each kind for the refused cells: nothing may change it. */
const sharedResource: Record<Resource, (f: ClaimsFixtureShape) => Effect.Effect<string, never, FixtureServices>> = {
  claim: (f) =>
    shared !== undefined
      ? Effect.succeed(shared)
      : Effect.tap(prepareClaim(f), (work) => Effect.sync(() => shared = work)),
  proposal: (f) =>
    sharedProposal !== undefined
      ? Effect.succeed(sharedProposal.id)
      : Effect.map(
        Effect.tap(prepareProposal(f), (p) => Effect.sync(() => sharedProposal = p)),
        (p) => p.id
      ),
  cover: () => prepareCover(true),
  news: prepareNews,
  playtime: (f) => Effect.sync(() => sharedPlaytimeWork ??= freshWork(f)),
  image: () => Effect.succeed("refused")
}

/** Path parameters, by resource and name, from the prepared resource. */
const pathParams: Record<Resource, Record<string, (id: string) => string>> = {
  claim: {
    work_id: (work) => work,
    object: () => "work",
    id: (work) => work
  },
  proposal: {
    id: (proposal) => proposal
  },
  cover: {
    id: (named) => named.split(":")[0]!,
    cover_id: (named) => named.split(":")[1]!
  },
  news: {},
  playtime: {},
  image: {}
}

const pathFor = (r: Ruled, resource: Resource, id: string) =>
  r.route.path.replace(/:([A-Za-z_]+)\??/g, (_, name: string) => {
    const fill = pathParams[resource][name]
    if (fill === undefined) throw new Error(`${label(r)}: the matrix cannot fill the path parameter :${name}`)
    return encodeURIComponent(fill(id))
  })

/**
 * A minimal valid body, by endpoint name (a create consumes a work: a fresh one each time), for a
 * credential of `site`, from the prepared resource `id` where the body names it.
 */
const bodies: Record<
  string,
  (f: ClaimsFixtureShape, context: { readonly site: string; readonly id: string }) => unknown
> = {
  createClaim: (f) => ({ work_id: freshWork(f) }),
  decideClaim: () => ({ decision: "ban", note: "matrix" }),
  createProposal: proposalBody,
  amendProposal: () => ({ set: { "catalog.work.length_minutes": 20 } }),
  decideProposal: () => ({ decision: "decline", note: "matrix" }),
  putCoverVote: () => ({ vote: "up" }),
  createNews: (_, { site }) => ({
    source: newsSourceOf(site),
    title: "Matrix",
    summary: "s",
    source_url: `https://news.example.test/matrix/${++newsPosts}`
  }),
  batchPlaytimes: (_, { id: work }) => ({ items: [{ work_id: work, minutes: 30 }] })
}

/**
 * The image uploads' raw bodies (docs/writing.md, "Editor images"), by the prepared resource: cells
 * that get through send an 11x5 PNG, refused ones a 13x7 one, which must never be stored.
 */
const imageSizes = { through: [11, 5], refused: [13, 7] } as const
const rawBodies: Record<
  string,
  (id: string) => Effect.Effect<{ readonly query: string; readonly contentType: string; readonly bytes: Uint8Array }>
> = {
  uploadImage: (id) =>
    Effect.promise(async () => {
      const [width, height] = imageSizes[id as keyof typeof imageSizes]
      const png = await sharp({ create: { width, height, channels: 3, background: { r: 1, g: 2, b: 3 } } }).png()
        .toBuffer()
      return { query: "?preset=cover", contentType: "image/png", bytes: new Uint8Array(png) }
    })
}

/** `f.call` with a raw body: the answer, its body parsed as JSON when there is one. */
const callRaw = (
  f: ClaimsFixtureShape,
  method: string,
  path: string,
  raw: { readonly contentType: string; readonly bytes: Uint8Array },
  key: string | undefined,
  headers: Record<string, string>
): Effect.Effect<Reply> =>
  Effect.promise(async () => {
    const res = await fetch(`${f.base}${path}`, {
      method,
      headers: {
        ...headers,
        ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
        "content-type": raw.contentType
      },
      body: Buffer.from(raw.bytes)
    })
    const text = await res.text()
    return { status: res.status, headers: res.headers, body: text === "" ? null : JSON.parse(text) }
  })

const bodyFor = (
  r: Ruled,
  f: ClaimsFixtureShape,
  context: { readonly site: string; readonly id: string }
): unknown => {
  const make = bodies[r.name]
  if (make !== undefined) return make(f, context)
  if (rawBodies[r.name] !== undefined) return undefined
  if (r.route.method !== "GET" && r.route.method !== "DELETE" && r.route.endpoint.payload.size > 0) {
    throw new Error(`${label(r)}: the matrix has no minimal body for this route; add one to \`bodies\``)
  }
  return undefined
}

/** The current ETag of a resource, as its owner reads it. */
const etagOf = (f: ClaimsFixtureShape, resource: Resource, id: string) =>
  Effect.gen(function*() {
    const res = resource === "claim"
      ? yield* f.call("GET", `/v2/claims/${id}`, { key: f.siteUser.key })
      : yield* f.call("GET", `/v2/proposals/${id}`, { key: yield* proposerKey(f) })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    return res.headers.get("etag")!
  })

/** The schema of a route's success body, for the cells that get through. */
const successSchemas: Record<string, Schema.Codec<any, any>> = {
  createClaim: ClaimRecord,
  listClaims: ListClaimRecord,
  getClaim: ClaimRecord,
  submitClaim: ClaimRecord,
  releaseClaim: ClaimRecord,
  moderationQueue: ListClaimRecord,
  decideClaim: ClaimDecisionRecord,
  snapshot: Snapshot,
  createProposal: Proposal,
  listProposals: ListProposal,
  getProposal: Proposal,
  amendProposal: Amendment,
  listAmendments: ListAmendment,
  withdrawProposal: Proposal,
  proposalQueue: ListProposal,
  moderationProposal: Proposal,
  decideProposal: Proposal,
  putCoverVote: CoverVote,
  // 204: no body.
  deleteCoverVote: Schema.Null,
  listCoverVotes: ListCoverVote,
  createNews: NewsItem,
  batchPlaytimes: ListPlaytime,
  listPlaytimes: ListPlaytime,
  uploadImage: EditImage
}

/**
 * The routes whose cells that get through are still refused, by the state of the resource the matrix
 * prepares: a `pending` claim cannot be submitted (docs/writing.md, the claim states table). Every
 * other cell that gets through succeeds.
 */
const stateRefusals: Record<string, ProblemCode> = {
  submitClaim: "INVALID_STATE_TRANSITION"
}

let cells = 0
/** Cells run, by route. */
const covered = new Map<string, number>()

const expectRefusal = (res: Reply, code: ProblemCode) => {
  const { status, title } = ProblemCodes[code]
  expect(res.status, JSON.stringify(res.body)).toBe(status)
  expect(res.headers.get("content-type")).toBe("application/problem+json")
  expect(res.body).toMatchObject({ code, status, title })
  for (const error of res.body.errors ?? []) expect(Schema.is(FieldError)(error), JSON.stringify(error)).toBe(true)
}

// -------------------------------------------------------------------------------------------------
// OpenAPI
// -------------------------------------------------------------------------------------------------

/** The problem codes an OpenAPI response documents (through the components' `code` enums). */
const documentedCodes = (spec: any, response: any): Set<string> => {
  const codes = new Set<string>()
  const schema = response?.content?.["application/problem+json"]?.schema
  if (schema === undefined) return codes
  for (const member of schema.anyOf ?? [schema]) {
    const name = String(member.$ref ?? "").replace("#/components/schemas/", "")
    const code = spec.components?.schemas?.[name]?.properties?.code
    for (const value of code?.enum ?? (code?.const === undefined ? [] : [code.const])) codes.add(value)
  }
  return codes
}

describe("credential matrix (docs/writing.md, \"Who may write\"): every ruled route x every kind of credential", () => {
  it("the route table declares ruled routes, each with a scope, and every WriteAuthorization or SiteWriteAuthorization route has a rule", () => {
    expect(ruled.length).toBeGreaterThan(0)
    for (const route of catalogRoutes.routes) {
      // A group's middleware is applied to each of its endpoints.
      const middlewares = route.endpoint.middlewares as ReadonlySet<unknown>
      if (!middlewares.has(WriteAuthorization) && !middlewares.has(SiteWriteAuthorization)) continue
      expect(Option.isSome(Context.getOption(route.annotations, RouteRules)), `${route.method} ${route.path}`).toBe(
        true
      )
    }
  })

  it.layer(ClaimsFixtureLive({ config: { IDENTITY_JWKS_URL: relay.url } }), serverLayerOptions())((it) => {
    for (const r of ruled) {
      for (const c of credentials) {
        const expected = expectedFor(r, c)
        const outcome = expected === "not refused"
          ? "not refused by authorization"
          : `${ProblemCodes[expected].status} ${expected}`
        it.effect(`${label(r)} with ${c.kind} -> ${outcome}`, () =>
          Effect.gen(function*() {
            const f = yield* ClaimsFixture
            const key = yield* c.key(f)
            const resource = resourceOf(r)
            // A cell that gets through may change its claim or proposal: it gets one of its own.
            const id = expected === "not refused" ? yield* prepare[resource](f) : yield* sharedResource[resource](f)
            const headers: Record<string, string> = {}
            if (r.rule.ifMatch !== undefined) headers["if-match"] = yield* etagOf(f, resource, id)
            if (r.rule.idempotent) headers["idempotency-key"] = `matrix-${++cells}-${Date.now()}`
            const body = bodyFor(r, f, { site: c.site, id })
            const raw = rawBodies[r.name]
            const res = raw !== undefined
              ? yield* Effect.flatMap(raw(id), (upload) =>
                callRaw(f, r.route.method, `${pathFor(r, resource, id)}${upload.query}`, upload, key, headers))
              : yield* f.call(r.route.method, pathFor(r, resource, id), {
                ...(key === undefined ? {} : { key }),
                ...(body === undefined ? {} : { body }),
                headers
              })
            if (expected === "not refused") {
              expect([401, 403], JSON.stringify(res.body)).not.toContain(res.status)
              expect(res.status, JSON.stringify(res.body)).toBeLessThan(500)
              const refusedByState = stateRefusals[r.name]
              if (refusedByState !== undefined) {
                expectRefusal(res, refusedByState)
              } else {
                // A resource of its own and a valid body: anything but success means the cell named the
                // wrong thing (a claim's id where a proposal's belongs answers 404).
                expect(res.status, JSON.stringify(res.body)).toBeLessThan(300)
                const schema = successSchemas[r.name]
                if (schema === undefined) {
                  throw new Error(`${label(r)}: the matrix has no success schema; add one to \`successSchemas\``)
                }
                Schema.decodeUnknownSync(schema)(res.body)
                if (r.name === "createNews") {
                  newsPosted++
                }
              }
            } else {
              expectRefusal(res, expected)
            }
            covered.set(label(r), (covered.get(label(r)) ?? 0) + 1)
          }))
      }
    }

    it.effect("a refused request wrote nothing: the shared claim has only the event that created it", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        expect(shared).toBeDefined()
        const events = yield* f.call("GET", `/v2/catalog/claim-events?work_id=${shared}`, { key: f.siteUser.key })
        expect(events.body.items.map((e: any) => e.to_state)).toEqual(["pending"])
      }))

    it.effect(
      "a refused request wrote nothing: the shared proposal is open, at the version it was created with, unamended",
      () =>
        Effect.gen(function*() {
          const f = yield* ClaimsFixture
          expect(sharedProposal).toBeDefined()
          const { etag, id } = sharedProposal!
          const key = yield* proposerKey(f)
          const res = yield* f.call("GET", `/v2/proposals/${id}`, { key })
          expect(res.status, JSON.stringify(res.body)).toBe(200)
          // The ETag names the proposal's version (docs/writing.md, "Edit proposals").
          expect(res.headers.get("etag")).toBe(etag)
          expect(res.body).toMatchObject({
            state: "open",
            amendment_count: 0,
            moderator_uid: null,
            closed_at: null,
            effective_patch: { "catalog.work.length_minutes": 10 }
          })
          const amendments = yield* f.call("GET", `/v2/proposals/${id}/amendments`, { key })
          expect(amendments.status, JSON.stringify(amendments.body)).toBe(200)
          expect(amendments.body.items).toEqual([])
        })
    )

    it.effect("a refused request wrote nothing: the shared cover has no votes", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const cover = (yield* prepareCover(true)).split(":")[1]!
        const [row] = yield* sql<{ votes: number }>`
          SELECT count(*)::int AS votes FROM cover_votes WHERE cover_id = ${cover}::bigint`.pipe(Effect.orDie)
        expect(row!.votes).toBe(0)
      }))

    it.effect("a refused news post wrote nothing: the matrix's sources hold one item per post that got through", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        expect(newsPosted).toBeGreaterThan(0)
        const [row] = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM news_items WHERE source LIKE 'matrix\\_%'`.pipe(Effect.orDie)
        expect(row!.n).toBe(newsPosted)
      }))

    it.effect("a refused request wrote nothing: no playtime on the work the refused batches named (docs/writing.md, \"Playtimes\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        expect(sharedPlaytimeWork).toBeDefined()
        const [stored] = yield* sql<{ playtimes: number; aggregates: number }>`
          SELECT (SELECT count(*)::int FROM playtimes WHERE work_id = ${sharedPlaytimeWork}) AS playtimes,
                 (SELECT count(*)::int FROM work_playtimes WHERE work_id = ${sharedPlaytimeWork}) AS aggregates`.pipe(
          Effect.orDie
        )
        expect(stored).toEqual({ playtimes: 0, aggregates: 0 })
      }))

    it.effect("a refused upload stored nothing: no image of the refused cells' size (docs/writing.md, \"Editor images\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const [width, height] = imageSizes.refused
        const [row] = yield* sql<{ refused: number; through: number }>`
          SELECT count(*) FILTER (WHERE width = ${width} AND height = ${height})::int AS refused,
                 count(*) FILTER (WHERE width = ${imageSizes.through[0]} AND height = ${imageSizes.through[1]})::int
                   AS through
          FROM images WHERE source = 'upload'`.pipe(Effect.orDie)
        expect(row).toEqual({ refused: 0, through: 1 })
      }))

    it.effect("a site-less client's token creating a claim is 403 TENANT_MISMATCH before any write: nothing stored", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const sql = yield* SqlClient.SqlClient
        const token = yield* cachedKey("sitelessToken", sitelessToken(f))
        const work = freshWork(f)
        const res = yield* f.call("POST", "/v2/claims", {
          key: token,
          body: { work_id: work },
          headers: { "idempotency-key": "siteless-create" }
        })
        expectRefusal(res, "TENANT_MISMATCH")
        expect(res.body.detail).toBe("The credential belongs to no site; writes need one.")
        const [stored] = yield* sql<{ claims: number; events: number; answers: number; quota: number }>`
          SELECT (SELECT count(*)::int FROM claims WHERE work_id = ${work}) AS claims,
                 (SELECT count(*)::int FROM claim_events WHERE work_id = ${work}) AS events,
                 (SELECT count(*)::int FROM catalog_idempotency WHERE key = 'siteless-create') AS answers,
                 (SELECT count(*)::int FROM catalog_quota_usage WHERE site = '') AS quota`.pipe(Effect.orDie)
        expect(stored).toEqual({ claims: 0, events: 0, answers: 0, quota: 0 })
        // The same user's reads still work: the token is valid, only writing needs a site.
        const mine = yield* f.call("GET", "/v2/claims", { key: token })
        expect(mine.status, JSON.stringify(mine.body)).toBe(200)
      }))

    it.effect("the matrix covered every ruled route with every kind of credential", () =>
      Effect.sync(() => {
        expect(covered.size).toBeGreaterThan(0)
        expect(covered.size).toBe(ruled.length)
        expect([...covered.keys()].sort()).toEqual(ruled.map(label).sort())
        for (const [route, n] of covered) expect(n, route).toBe(credentials.length)
      }))

    it.effect("OpenAPI: each ruled route documents the 401/403/409/412/428/429 problems and headers its rule implies", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const res = yield* f.call("GET", "/v2/openapi.json", { key: f.siteUser.key })
        expect(res.status).toBe(200)
        const spec = res.body
        let checked = 0
        for (const r of ruled) {
          const path = r.route.path.replace(/:([A-Za-z_]+)\??/g, "{$1}")
          const op = spec.paths?.[path]?.[r.route.method.toLowerCase()]
          expect(op, `${label(r)} is not in the OpenAPI document`).toBeDefined()
          const where = (what: string) => `${label(r)}: ${what}`
          const responses = op.responses ?? {}
          const codesAt = (status: number) => documentedCodes(spec, responses[String(status)])

          expect([...codesAt(401)].sort(), where("401")).toEqual(["INVALID_CREDENTIAL", "MISSING_CREDENTIAL"])
          const forbidden = codesAt(403)
          const implied: Array<string> = []
          if (r.scope !== "any") implied.push("SCOPE_REQUIRED")
          if (r.rule.user) implied.push("USER_IDENTITY_REQUIRED", "PERMISSION_REQUIRED") // a banned user too
          if (r.rule.role !== undefined) implied.push("PERMISSION_REQUIRED")
          if (r.rule.tenant || r.route.method !== "GET") implied.push("TENANT_MISMATCH") // every write
          expect([...forbidden].sort(), where("403")).toEqual([...new Set(implied)].sort())

          const conflicts = codesAt(409)
          for (const code of ["IDEMPOTENCY_KEY_REUSED", "IDEMPOTENCY_REQUEST_IN_PROGRESS"]) {
            expect(conflicts.has(code), where(`409 ${code}`)).toBe(r.rule.idempotent)
          }
          expect(codesAt(412).has("PRECONDITION_FAILED"), where("412")).toBe(r.rule.ifMatch !== undefined)
          expect(codesAt(428).has("PRECONDITION_REQUIRED"), where("428")).toBe(r.rule.ifMatch === "required")
          expect(codesAt(429).has("QUOTA_EXCEEDED"), where("429 QUOTA_EXCEEDED")).toBe(r.rule.quota !== undefined)
          expect(codesAt(429).has("RATE_LIMITED"), where("429 RATE_LIMITED")).toBe(true)

          const headerNames = (op.parameters ?? [])
            .filter((p: any) => p.in === "header")
            .map((p: any) => String(p.name).toLowerCase())
          expect(headerNames.includes("idempotency-key"), where("Idempotency-Key header")).toBe(r.rule.idempotent)
          expect(headerNames.includes("if-match"), where("If-Match header")).toBe(r.rule.ifMatch !== undefined)
          expect(op.security, where("security")).toEqual([{ bearer: [] }])
          checked++
        }
        expect(checked).toBe(ruled.length)
      }))
  })
})
