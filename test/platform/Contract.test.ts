/**
 * Every answer of every route decodes with the schema its declaration gives for that status
 * (docs/api-contract.md; the OpenAPI documents are generated from the same declarations). Each
 * endpoint of `CatalogApi` and `IdentityApi` (walked with `HttpApi.reflect`, so a new route is not
 * forgotten: one missing from the request tables below fails) gets at least one request that
 * reaches its success answer and, where it is cheap, one that gets a declared error. Each answer is
 * checked by `check` (test/support/Contract.ts):
 *
 * - its status is declared for the route and listed in the OpenAPI document (which adds one status
 *   of its own: the identity 415 of every endpoint that takes JSON, schema/Api/IdentityErrors.ts);
 * - a JSON body decodes with a schema declared for that status, an undeclared member failing as the
 *   documents' `additionalProperties: false` promises; an HTML page or stylesheet has its declared
 *   content type; a 304, a 200 without content or a redirect has no body, and a redirect a Location;
 * - a JSON body is byte for byte what the schema writes for the decoded value, except on the routes
 *   of `notByteCanonical`, whose bodies are compared as JSON values.
 *
 * Mismatches the code has today are listed in `knownMismatches` with their reason; a listed one
 * that no longer occurs fails, so both tables only shrink.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { SqlClient } from "effect/sql"
import * as OTPAuth from "otpauth"
import sharp from "sharp"
import { CatalogApiDocumented } from "../../schema/Api/CatalogApi.js"
import { IdentityApi } from "../../schema/Api/IdentityApi.js"
import { unsupportedMediaType } from "../../schema/Api/IdentityErrors.js"
import { problemSlug } from "../../schema/Problem.js"
import { ClaimsFixture, ClaimsFixtureLive, type ClaimsFixtureShape } from "../support/Claims.js"
import {
  check,
  type ContractAnswer,
  type ContractRequest,
  type ContractRoute,
  contractRoutes,
  type Declared,
  firstDifference,
  send
} from "../support/Contract.js"
import {
  codeParams,
  cookiesOf,
  createClient,
  createUser,
  getCode,
  hiddenValue,
  IdentityServers,
  IdentityTestEnv,
  login,
  serverLayerOptions as identityLayerOptions,
  signIn,
  type TestClient,
  tokensFor
} from "../support/IdentityServers.js"
import { proposalKeys, propose } from "../support/Proposals.js"
import { serverLayerOptions } from "../support/TestServers.js"

// ---------------------------------------------------------------------------------------------
// Known departures from the declarations
// ---------------------------------------------------------------------------------------------

/**
 * Answers that do not match their declaration today (a status it does not declare, or a body that
 * does not decode), by `group.endpoint status`, with the reason. A listed answer that matches fails
 * the test: take it out of the list.
 */
const knownMismatches: Record<string, string> = {}

/**
 * JSON answers that are the schema's value but not the schema's bytes, by `group.endpoint status`,
 * with the reason; their bodies are compared as JSON values. A listed answer that comes out byte for
 * byte fails the test: take it out of the list.
 */
const notByteCanonical: Record<string, string> = {
  // A work's JSON is built by PostgreSQL (`itemJsonSql`, src/catalog/works/WorkSql.ts) and spliced into
  // the answer as text: `json_build_object` writes `"key" : value`, and `localized` is the stored jsonb
  // column, whose members come in jsonb's order (`latin` before `value`), not the schema's.
  "works.listWorks 200": "works built by PostgreSQL: json_build_object spacing, jsonb member order of `localized`",
  "works.searchWorks 200": "works built by PostgreSQL: json_build_object spacing, jsonb member order of `localized`",
  "works.getWork 200": "the work built by PostgreSQL: json_build_object spacing, jsonb member order of `localized`"
}

// ---------------------------------------------------------------------------------------------
// Running a route's requests
// ---------------------------------------------------------------------------------------------

interface Probe {
  readonly request: ContractRequest
  /** `success`: any of the route's success statuses; a number: exactly that status. */
  readonly expect: "success" | number
}

type Probes<R> = Effect.Effect<ReadonlyArray<Probe>, never, R>

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

interface Observed {
  readonly key: string
  readonly mismatches: ReadonlyArray<string>
  /** `bytes`, `structure` or `none` (no JSON body). */
  readonly canonical: "bytes" | "structure" | "none"
}

/** The table key of an answer: `group.endpoint status`. */
const answerKey = (route: ContractRoute, answer: ContractAnswer) => `${route.key} ${answer.status}`

/** Sends the probes of `route` and checks every answer; answers what was seen, by answer key. */
const runProbes = (
  route: ContractRoute,
  base: string,
  probes: ReadonlyArray<Probe>,
  extra: ReadonlyMap<number, ReadonlyArray<Declared>> = new Map()
) =>
  Effect.gen(function*() {
    const observed: Array<Observed> = []
    const setup: Array<string> = []
    let reachedSuccess = false
    for (const probe of probes) {
      const answer = yield* promise(() => send(base, probe.request))
      const verdict = check(route, answer, extra)
      const where = `${probe.request.method} ${probe.request.path.slice(0, 160)}`
      if (verdict.success) reachedSuccess = true
      const expected = probe.expect === "success" ? verdict.success : answer.status === probe.expect
      if (!expected) {
        setup.push(`${where}: expected ${probe.expect}, got ${answer.status} ${answer.text.slice(0, 300)}`)
      }
      const key = answerKey(route, answer)
      const mismatches = verdict.mismatches.map((m) => `${key} (${where}): ${m}`)
      if (verdict.canonical._tag === "Differs") {
        mismatches.push(
          `${key} (${where}): the body is not the value the schema writes: ${
            firstDifference(answer.text, verdict.canonical.expected)
          }`
        )
      }
      observed.push({
        key,
        mismatches,
        canonical: verdict.canonical._tag === "Bytes"
          ? "bytes"
          : verdict.canonical._tag === "Structure"
          ? "structure"
          : "none"
      })
      if (verdict.canonical._tag === "Structure" && notByteCanonical[key] === undefined) {
        mismatches.push(
          `${key} (${where}): the schema's value in other bytes (${verdict.canonical.how}); add it to ` +
            `notByteCanonical with the reason, or make the route write the schema's bytes: ${
              firstDifference(
                verdict.canonical.how === "order" ? verdict.canonical.compact : answer.text,
                verdict.canonical.expected
              )
            }`
        )
      }
    }
    if (!reachedSuccess) setup.push(`${route.key}: no request reached a success answer`)
    return { observed, setup }
  })

/** Asserts a route's observations against the two tables, and reports them in one line. */
const judge = (route: ContractRoute, result: { observed: ReadonlyArray<Observed>; setup: ReadonlyArray<string> }) => {
  const unexpected: Array<string> = []
  const known = new Set<string>()
  for (const o of result.observed) {
    if (o.mismatches.length === 0) continue
    if (knownMismatches[o.key] !== undefined) known.add(o.key)
    else unexpected.push(...o.mismatches)
  }
  const keysOf = (table: Record<string, string>) => Object.keys(table).filter((k) => k.startsWith(`${route.key} `))
  const seen = (k: string) => result.observed.filter((o) => o.key === k)
  const fixed = keysOf(knownMismatches).filter((k) => !known.has(k))
  const nowBytes = keysOf(notByteCanonical).filter((k) => seen(k).every((o) => o.canonical === "bytes"))
  const statuses = [...new Set(result.observed.map((o) => `${o.key.split(" ")[1]}:${o.canonical}`))].join(" ")
  console.log(
    `${route.method} ${route.path} (${route.key}): ${statuses}${
      known.size > 0 ? `; known: ${[...known].join(", ")}` : ""
    }`
  )
  expect({
    "requests that did not get the answer they were made for": result.setup,
    "answers that do not match their declaration": unexpected,
    "listed in knownMismatches but not seen mismatching (remove them)": fixed,
    "listed in notByteCanonical but not seen other than byte for byte (remove them)": nowBytes
  }).toEqual({
    "requests that did not get the answer they were made for": [],
    "answers that do not match their declaration": [],
    "listed in knownMismatches but not seen mismatching (remove them)": [],
    "listed in notByteCanonical but not seen other than byte for byte (remove them)": []
  })
}

const unlisted = (routes: ReadonlyArray<ContractRoute>, table: Record<string, unknown>) =>
  routes.filter((r) => table[r.key] === undefined).map((r) => `${r.method} ${r.path} (${r.key})`)

// ---------------------------------------------------------------------------------------------
// The catalog
// ---------------------------------------------------------------------------------------------

const catalogRoutes = contractRoutes(CatalogApiDocumented)

interface CatalogContext {
  readonly f: ClaimsFixtureShape
  /** A read key that sees nsfw records too. */
  readonly read: string
  readonly sql: SqlClient.SqlClient
}

const bearer = (key: string) => ({ authorization: `Bearer ${key}` })

const getAs = (key: string, path: string, expectation: Probe["expect"] = "success", headers = {}): Probe => ({
  request: { method: "GET", path, headers: { ...bearer(key), ...headers } },
  expect: expectation
})

const writeAs = (
  key: string,
  method: string,
  path: string,
  body: unknown,
  expectation: Probe["expect"] = "success",
  headers: Record<string, string> = {}
): Probe => ({
  request: {
    method,
    path,
    headers: { ...bearer(key), ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  },
  expect: expectation
})

const UNKNOWN_ID = "999999999"

/** A GET that must answer 200: its body. */
const fetchJson = (c: CatalogContext, path: string, key = c.read) =>
  Effect.map(c.f.call("GET", path, { key }), (res) => {
    if (res.status !== 200) throw new Error(`set-up GET ${path}: ${res.status} ${JSON.stringify(res.body)}`)
    return res.body as any
  })

const firstItem = (c: CatalogContext, path: string) =>
  Effect.map(fetchJson(c, path), (body) => {
    const item = body.items.find((i: any) => i !== undefined)
    if (item === undefined) throw new Error(`set-up GET ${path}: no items`)
    return item
  })

/** The first item of a works page with something in `member`. */
const workWith = (c: CatalogContext, include: string, member: string) =>
  Effect.map(fetchJson(c, `/v2/catalog/works?limit=100&include=${include}`), (body) => {
    const work = body.items.find((w: any) => Array.isArray(w[member]) && w[member].length > 0)
    if (work === undefined) throw new Error(`set-up: no work with ${member}`)
    return work.id as string
  })

/** A record read with its ETag, then again with `If-None-Match` (304), and an unknown id (404). */
const record = (c: CatalogContext, path: string, unknown: string | undefined) =>
  Effect.gen(function*() {
    const res = yield* c.f.call("GET", path, { key: c.read })
    const etag = res.headers.get("etag")
    return [
      getAs(c.read, path),
      ...(etag === null ? [] : [getAs(c.read, path, 304, { "if-none-match": etag })]),
      ...(unknown === undefined ? [] : [getAs(c.read, unknown, 404)])
    ]
  })

/** A merged id of `table`, if the seeded catalog has one (ENTITY_MERGED). */
const mergedId = (c: CatalogContext, table: "works" | "characters") =>
  Effect.map(
    c.sql<{ id: string }>`SELECT id::text AS id FROM ${c.sql(table)} WHERE merged_into IS NOT NULL ORDER BY id LIMIT 1`
      .pipe(Effect.orDie),
    (rows) => rows[0]?.id
  )

let nextWork = 0
/** A work no earlier request of this file claimed. */
const freshWork = (c: CatalogContext) => {
  const work = c.f.works[nextWork++]
  if (work === undefined) throw new Error("the fixture ran out of works")
  return work
}

const claim = (c: CatalogContext, key = c.f.siteUser.key) =>
  Effect.gen(function*() {
    const work = freshWork(c)
    const res = yield* c.f.call("POST", "/v2/claims", { key, body: { work_id: work } })
    if (res.status !== 201) throw new Error(`set-up claim: ${res.status} ${JSON.stringify(res.body)}`)
    return work
  })

type ProposalKeys = Effect.Success<ReturnType<typeof proposalKeys>>
let proposalKeysMade: ProposalKeys | undefined
/** Keys with the proposal scopes for the fixture's people (test/support/Proposals.ts), made once. */
const proposers = (c: CatalogContext) =>
  proposalKeysMade !== undefined
    ? Effect.succeed(proposalKeysMade)
    : Effect.tap(proposalKeys(c.f), (keys) => Effect.sync(() => proposalKeysMade = keys))

let voterKeyMade: string | undefined
/** `siteUser`'s key with the vote scopes (docs/writing.md, "Cover votes"), made once. */
const voterKey = (c: CatalogContext) =>
  voterKeyMade !== undefined
    ? Effect.succeed(voterKeyMade)
    : Effect.tap(
      c.f.makeKey("site_a", ["catalog:read", "votes:write"], c.f.siteUser.id),
      (key) => Effect.sync(() => voterKeyMade = key)
    )

/** A cover of a served sfw work, and another such work (whose covers the first's is not one of). */
const votedCover = (c: CatalogContext) =>
  Effect.gen(function*() {
    const rows = yield* c.sql<{ work: string; cover: string }>`
      SELECT c.work_id::text AS work, c.id::text AS cover FROM covers c JOIN works w ON w.id = c.work_id
      WHERE w.live AND NOT w.nsfw ORDER BY c.id LIMIT 1`.pipe(Effect.orDie)
    const row = rows[0]
    if (row === undefined) throw new Error("set-up: no cover of a served work")
    const other = c.f.works.find((w) => w !== row.work)!
    return { work: row.work, cover: row.cover, other }
  })

let playtimesKey: string | undefined
/** `siteUser`'s key with the playtime scope (docs/writing.md, "Playtimes"), made once. */
const players = (c: CatalogContext) =>
  playtimesKey !== undefined
    ? Effect.succeed(playtimesKey)
    : Effect.tap(
      c.f.makeKey("site_a", ["catalog:read", "playtimes:write"], c.f.siteUser.id),
      (key) => Effect.sync(() => playtimesKey = key)
    )

let editorKeyMade: string | undefined
/** `siteUser`'s key with the media scope (docs/writing.md, "Editor images"), made once. */
const editorKey = (c: CatalogContext) =>
  editorKeyMade !== undefined
    ? Effect.succeed(editorKeyMade)
    : Effect.tap(
      c.f.makeKey("site_a", ["catalog:read", "media:write"], c.f.siteUser.id),
      (key) => Effect.sync(() => editorKeyMade = key)
    )

/** A small PNG of a colour of its own per `seed` and test run. */
const contractPng = (c: CatalogContext, seed: number) =>
  Effect.promise(() =>
    sharp({
      create: { width: 16, height: 12, channels: 3, background: { r: seed * 40, g: c.f.works.length % 256, b: 77 } }
    }).png().toBuffer().then((b) => new Uint8Array(b))
  )

/** An upload of raw image bytes. */
const imageAs = (
  key: string,
  path: string,
  bytes: Uint8Array,
  contentType: string,
  expectation: Probe["expect"]
): Probe => ({
  request: { method: "POST", path, headers: { ...bearer(key), "content-type": contentType }, body: bytes },
  expect: expectation
})

/** An image uploaded for the set-up: its hash. */
const setUpImage = (c: CatalogContext, bytes: Uint8Array) =>
  Effect.flatMap(editorKey(c), (key) =>
    Effect.promise(async () => {
      const res = await fetch(`${c.f.base}/v2/media/images?preset=cover`, {
        method: "POST",
        headers: { ...bearer(key), "content-type": "image/png" },
        body: Buffer.from(bytes)
      })
      const body = await res.json() as { hash?: string }
      if (res.status !== 201 && res.status !== 200) throw new Error(`set-up upload: ${res.status}`)
      return body.hash!
    }))

/** The patch of the proposals made here: a writable key of `catalog.work`. */
const lengthPatch = (minutes: number) => ({ "catalog.work.length_minutes": minutes })

/** An open proposal of site_a (by `siteUser`) on a fresh work: its id, ETag and work. */
const openProposal = (c: CatalogContext) =>
  Effect.gen(function*() {
    const keys = yield* proposers(c)
    const work = freshWork(c)
    const res = yield* propose(c.f, keys.site, { entity_type: "catalog.work", entity_id: work, patch: lengthPatch(10) })
    if (res.status !== 201) throw new Error(`set-up proposal: ${res.status} ${JSON.stringify(res.body)}`)
    return { id: String(res.body.id), etag: res.headers.get("etag")!, work }
  })

/** A set-up write that must answer `status`: its answer. */
const setUp = (c: CatalogContext, status: number, method: string, path: string, key: string, options: {
  readonly body?: unknown
  readonly headers?: Record<string, string>
} = {}) =>
  Effect.map(c.f.call(method, path, { key, ...options }), (res) => {
    if (res.status !== status) throw new Error(`set-up ${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`)
    return res
  })

/** A proposal of a fresh work merged by the moderator: the proposal's answer (with `revision_id`). */
const mergedProposal = (c: CatalogContext) =>
  Effect.gen(function*() {
    const keys = yield* proposers(c)
    const proposal = yield* openProposal(c)
    const merged = yield* setUp(c, 200, "POST", `/v2/moderation/proposals/${proposal.id}/decisions`, keys.moderator, {
      body: { decision: "merge" },
      headers: { "if-match": proposal.etag }
    })
    return { ...proposal, revision: String(merged.body.revision_id) }
  })

let newsMade: { readonly source: string; readonly bot: string } | undefined
/** A news source of site_a and a key of its bot (docs/writing.md, "News"), made once. */
const newsPoster = (c: CatalogContext) =>
  newsMade !== undefined ? Effect.succeed(newsMade) : Effect.gen(function*() {
    yield* c.sql`INSERT INTO news_sources (source, site) VALUES ('contract_news', 'site_a')`.pipe(Effect.orDie)
    const bot = yield* c.f.makeKey("site_a", ["catalog:read", "news:write"], null)
    newsMade = { source: "contract_news", bot }
    return newsMade
  })

let newsUrls = 0
/** A news item of site_a linking `work`: its id. */
const newsItem = (c: CatalogContext, work: string) =>
  Effect.gen(function*() {
    const { bot, source } = yield* newsPoster(c)
    const res = yield* setUp(c, 201, "POST", "/v2/news", bot, {
      body: {
        source,
        title: "Contract",
        summary: "s",
        source_url: `https://news.example.test/c/${++newsUrls}`,
        work_ids: [work]
      }
    })
    return String(res.body.id)
  })

const listed = (c: CatalogContext, path: string, extra: ReadonlyArray<Probe> = []): Probes<never> =>
  Effect.succeed([getAs(c.read, `${path}${path.includes("?") ? "&" : "?"}limit=5`), ...extra])

const tooLarge = (c: CatalogContext, path: string) => getAs(c.read, `${path}?limit=1000`, 400)

const catalogProbes: Record<string, (c: CatalogContext) => Probes<never>> = {
  "health.healthz": () => Effect.succeed([{ request: { method: "GET", path: "/healthz" }, expect: "success" }]),
  "health.readyz": () => Effect.succeed([{ request: { method: "GET", path: "/readyz" }, expect: "success" }]),
  "problems.listReasons": () =>
    Effect.succeed([{ request: { method: "GET", path: "/v2/problems/reasons" }, expect: "success" }]),
  "problems.problemType": () =>
    Effect.succeed([
      { request: { method: "GET", path: `/v2/docs/problems/${problemSlug("NOT_FOUND")}` }, expect: "success" },
      { request: { method: "GET", path: "/v2/docs/problems/resource/no-such-problem" }, expect: 404 }
    ]),
  "credentials.getCredential": (c) =>
    Effect.succeed([
      getAs(c.read, "/v2/credential"),
      { request: { method: "GET", path: "/v2/credential" }, expect: 401 }
    ]),
  "works.listWorks": (c) =>
    Effect.gen(function*() {
      const ids = (yield* fetchJson(c, "/v2/catalog/works?limit=3")).items.map((w: any) => w.id)
      return [
        getAs(c.read, "/v2/catalog/works?limit=5"),
        getAs(c.read, "/v2/catalog/works?limit=5&view=full&include=titles,refs,intros,covers,companies,ratings,tags"),
        getAs(c.read, "/v2/catalog/works?limit=3&include=credits,playtime&include_total=true&sort=updated"),
        getAs(c.read, `/v2/catalog/works?ids=${ids.join(",")},${UNKNOWN_ID}`),
        getAs(c.read, "/v2/catalog/works?page=1&limit=5&facets=tag_id,company_id,olang,content_rating,medium,platform"),
        tooLarge(c, "/v2/catalog/works"),
        getAs(c.read, "/v2/catalog/works?include=nope", 400)
      ]
    }),
  "works.searchWorks": (c) =>
    Effect.gen(function*() {
      const work = yield* firstItem(c, "/v2/catalog/works?limit=1")
      const word = String(work.display_name).split(/\s+/)[0]!
      return [
        getAs(c.read, `/v2/catalog/search?q=${encodeURIComponent(word)}&limit=5&facets=olang,medium`),
        getAs(c.read, "/v2/catalog/search?limit=5&page=2&sort=popularity"),
        getAs(c.read, "/v2/catalog/search?sort=nope", 400)
      ]
    }),
  "works.getWork": (c) =>
    Effect.gen(function*() {
      const work = yield* firstItem(c, "/v2/catalog/works?limit=1")
      const merged = yield* mergedId(c, "works")
      return [
        ...(yield* record(c, `/v2/catalog/works/${work.id}`, `/v2/catalog/works/${UNKNOWN_ID}`)),
        getAs(
          c.read,
          `/v2/catalog/works/${work.id}?include=titles,refs,intros,covers,companies,ratings,tags,credits,playtime`
        ),
        getAs(c.read, `/v2/catalog/works/${work.id}?view=basic`),
        ...(merged === undefined ? [] : [getAs(c.read, `/v2/catalog/works/${merged}`, 404)])
      ]
    }),
  "works.listWorkCharacters": (c) =>
    Effect.gen(function*() {
      const character = yield* firstItem(c, "/v2/catalog/characters?limit=1")
      const appearance = yield* firstItem(c, `/v2/catalog/characters/${character.id}/appearances?limit=1`)
      const work = appearance.work?.id ?? appearance.work_id
      return [
        getAs(c.read, `/v2/catalog/works/${work}/characters?limit=5`),
        tooLarge(c, `/v2/catalog/works/${work}/characters`)
      ]
    }),
  "works.listWorkCredits": (c) =>
    Effect.gen(function*() {
      const work = yield* workWith(c, "credits", "credits")
      return [
        getAs(c.read, `/v2/catalog/works/${work}/credits?limit=5`),
        getAs(c.read, `/v2/catalog/works/${UNKNOWN_ID}/credits`, 404)
      ]
    }),
  "works.listWorkCovers": (c) =>
    Effect.gen(function*() {
      const work = yield* workWith(c, "covers", "covers")
      return [
        getAs(c.read, `/v2/catalog/works/${work}/covers?limit=5`),
        getAs(c.read, `/v2/catalog/works/${work}/covers?cursor=x`, 400)
      ]
    }),
  "works.listWorkIntros": (c) =>
    Effect.gen(function*() {
      const work = yield* workWith(c, "intros", "intros")
      return [
        getAs(c.read, `/v2/catalog/works/${work}/intros?limit=5`),
        getAs(c.read, `/v2/catalog/works/${UNKNOWN_ID}/intros`, 404)
      ]
    }),
  "companies.listCompanies": (c) => listed(c, "/v2/catalog/companies", [tooLarge(c, "/v2/catalog/companies")]),
  "companies.getCompany": (c) =>
    Effect.flatMap(
      firstItem(c, "/v2/catalog/companies?limit=1"),
      (company) => record(c, `/v2/catalog/companies/${company.id}`, `/v2/catalog/companies/${UNKNOWN_ID}`)
    ),
  "companies.getCompanyGraph": (c) =>
    Effect.flatMap(
      firstItem(c, "/v2/catalog/companies?limit=1"),
      (company) => record(c, `/v2/catalog/companies/${company.id}/graph`, `/v2/catalog/companies/${UNKNOWN_ID}/graph`)
    ),
  "engines.listEngines": (c) => listed(c, "/v2/catalog/engines", [tooLarge(c, "/v2/catalog/engines")]),
  "engines.getEngine": (c) =>
    Effect.flatMap(
      firstItem(c, "/v2/catalog/engines?limit=1"),
      (engine) => record(c, `/v2/catalog/engines/${engine.id}`, `/v2/catalog/engines/${UNKNOWN_ID}`)
    ),
  "tags.listTags": (c) => listed(c, "/v2/catalog/tags", [tooLarge(c, "/v2/catalog/tags")]),
  "tags.getTag": (c) =>
    Effect.flatMap(
      firstItem(c, "/v2/catalog/tags?limit=1"),
      (tag) => record(c, `/v2/catalog/tags/${tag.id}`, `/v2/catalog/tags/${UNKNOWN_ID}`)
    ),
  "releases.listReleases": (c) => listed(c, "/v2/catalog/releases", [tooLarge(c, "/v2/catalog/releases")]),
  "releases.getRelease": (c) =>
    Effect.flatMap(
      firstItem(c, "/v2/catalog/releases?limit=1"),
      (release) => record(c, `/v2/catalog/releases/${release.id}`, `/v2/catalog/releases/${UNKNOWN_ID}`)
    ),
  "calendar.listCalendar": (c) => listed(c, "/v2/catalog/calendar", [tooLarge(c, "/v2/catalog/calendar")]),
  "stats.getStats": (c) => record(c, "/v2/catalog/stats", undefined),
  "mirror.listChanges": (c) => listed(c, "/v2/catalog/changes", [tooLarge(c, "/v2/catalog/changes")]),
  "mirror.listRedirects": (c) => listed(c, "/v2/catalog/redirects", [tooLarge(c, "/v2/catalog/redirects")]),
  "characters.listCharacters": (c) => listed(c, "/v2/catalog/characters", [tooLarge(c, "/v2/catalog/characters")]),
  "characters.getCharacter": (c) =>
    Effect.gen(function*() {
      const character = yield* firstItem(c, "/v2/catalog/characters?limit=1")
      const merged = yield* mergedId(c, "characters")
      return [
        ...(yield* record(c, `/v2/catalog/characters/${character.id}`, `/v2/catalog/characters/${UNKNOWN_ID}`)),
        ...(merged === undefined ? [] : [getAs(c.read, `/v2/catalog/characters/${merged}`, 404)])
      ]
    }),
  "characters.listCharacterAppearances": (c) =>
    Effect.map(firstItem(c, "/v2/catalog/characters?limit=1"), (character) => [
      getAs(c.read, `/v2/catalog/characters/${character.id}/appearances?limit=5`),
      getAs(c.read, `/v2/catalog/characters/${UNKNOWN_ID}/appearances`, 404)
    ]),
  "creditNames.listCreditNames": (c) =>
    listed(c, "/v2/catalog/credit-names", [tooLarge(c, "/v2/catalog/credit-names")]),
  "creditNames.getCreditName": (c) =>
    Effect.flatMap(
      firstItem(c, "/v2/catalog/credit-names?limit=1"),
      (name) => record(c, `/v2/catalog/credit-names/${name.id}`, `/v2/catalog/credit-names/${UNKNOWN_ID}`)
    ),
  "creditNames.listNameCredits": (c) =>
    Effect.map(firstItem(c, "/v2/catalog/credit-names?limit=1"), (name) => [
      getAs(c.read, `/v2/catalog/credit-names/${name.id}/credits?limit=5`),
      getAs(c.read, `/v2/catalog/credit-names/${UNKNOWN_ID}/credits`, 404)
    ]),
  "persons.listPersons": (c) => listed(c, "/v2/catalog/persons", [tooLarge(c, "/v2/catalog/persons")]),
  "persons.getPerson": (c) =>
    Effect.flatMap(
      firstItem(c, "/v2/catalog/persons?limit=1"),
      (person) => record(c, `/v2/catalog/persons/${person.id}`, `/v2/catalog/persons/${UNKNOWN_ID}`)
    ),
  "claims.createClaim": (c) =>
    Effect.sync(() => [
      writeAs(c.f.siteUser.key, "POST", "/v2/claims", { work_id: freshWork(c) }),
      writeAs(c.f.siteUser.key, "POST", "/v2/claims", { site_work_id: "7001", display_name: "A minted work" }),
      writeAs(c.f.siteUser.key, "POST", "/v2/claims", {}, 422),
      writeAs(c.f.keys.noUser, "POST", "/v2/claims", { work_id: c.f.works.at(-1) }, 403)
    ]),
  "claims.listClaims": (c) =>
    Effect.gen(function*() {
      yield* claim(c)
      return [getAs(c.f.siteUser.key, "/v2/claims"), getAs(c.f.siteUser.key, "/v2/claims?limit=1000", 400)]
    }),
  "claims.getClaim": (c) =>
    Effect.gen(function*() {
      const work = yield* claim(c)
      const res = yield* c.f.call("GET", `/v2/claims/${work}`, { key: c.f.siteUser.key })
      const etag = res.headers.get("etag")
      return [
        getAs(c.f.siteUser.key, `/v2/claims/${work}`),
        ...(etag === null ? [] : [getAs(c.f.siteUser.key, `/v2/claims/${work}`, 304, { "if-none-match": etag })]),
        getAs(c.f.siteUser.key, `/v2/claims/${UNKNOWN_ID}`, 404)
      ]
    }),
  "claims.submitClaim": (c) =>
    Effect.gen(function*() {
      // A minted work's claim starts as a draft (docs/writing.md): it is the one that is submitted.
      const minted = yield* c.f.call("POST", "/v2/claims", {
        key: c.f.siteUser.key,
        body: { site_work_id: "7002", display_name: "A minted work to submit" }
      })
      const work = minted.body.id as string
      return [
        writeAs(c.f.siteUser.key, "POST", `/v2/claims/${work}/submission`, undefined),
        writeAs(c.f.siteUser.key, "POST", `/v2/claims/${UNKNOWN_ID}/submission`, undefined, 404)
      ]
    }),
  "claims.releaseClaim": (c) =>
    Effect.gen(function*() {
      const work = yield* claim(c)
      return [
        writeAs(c.f.siteUser.key, "DELETE", `/v2/claims/${work}`, undefined),
        writeAs(c.f.siteUser.key, "DELETE", `/v2/claims/${UNKNOWN_ID}`, undefined, 404)
      ]
    }),
  "moderation.moderationQueue": (c) =>
    Effect.gen(function*() {
      const work = yield* claim(c)
      yield* c.f.call("POST", `/v2/claims/${work}/submission`, { key: c.f.siteUser.key })
      return [getAs(c.f.moderator.key, "/v2/moderation/claims"), getAs(c.f.siteUser.key, "/v2/moderation/claims", 403)]
    }),
  "moderation.decideClaim": (c) =>
    Effect.gen(function*() {
      const [approved, declined, unasked] = [yield* claim(c), yield* claim(c), yield* claim(c)]
      for (const work of [approved, declined, unasked]) {
        yield* c.f.call("POST", `/v2/claims/${work}/submission`, { key: c.f.siteUser.key })
      }
      const decide = (
        work: string,
        body: unknown,
        expectation: Probe["expect"],
        headers: Record<string, string> = { "if-match": "*" }
      ) => writeAs(c.f.moderator.key, "POST", `/v2/moderation/claims/${work}/decisions`, body, expectation, headers)
      return [
        decide(approved, { decision: "approve" }, "success"),
        decide(declined, { decision: "decline", note: "Not a visual novel." }, "success"),
        decide(unasked, { decision: "approve" }, 428, {})
      ]
    }),
  "moderation.snapshot": (c) =>
    Effect.succeed([
      getAs(c.f.moderator.key, `/v2/moderation/snapshots/work/${c.f.works[0]}`),
      getAs(c.f.moderator.key, `/v2/moderation/snapshots/work/${UNKNOWN_ID}`, 404)
    ]),
  "claimEvents.listClaimEvents": (c) =>
    listed(c, "/v2/catalog/claim-events", [tooLarge(c, "/v2/catalog/claim-events")]),
  // Edit proposals (docs/writing.md, "Edit proposals").
  "proposals.createProposal": (c) =>
    Effect.gen(function*() {
      const keys = yield* proposers(c)
      const merged = yield* mergedId(c, "works")
      const create = (body: unknown, expectation: Probe["expect"], key = keys.site) =>
        writeAs(key, "POST", "/v2/proposals", body, expectation)
      const work = freshWork(c)
      const idempotent = { "idempotency-key": `contract-create-${work}` }
      const body = { entity_type: "catalog.work", entity_id: work, patch: lengthPatch(10), note: "Runs ten minutes." }
      return [
        writeAs(keys.site, "POST", "/v2/proposals", body, 201, idempotent),
        // The same key and request: the stored answer, replayed.
        writeAs(keys.site, "POST", "/v2/proposals", body, 201, idempotent),
        // The same key, another request.
        writeAs(keys.site, "POST", "/v2/proposals", { ...body, note: "Another note." }, 409, idempotent),
        create({ entity_type: "catalog.nope", entity_id: work, patch: lengthPatch(10) }, 422),
        create({ entity_type: "catalog.work", entity_id: work, patch: {} }, 422),
        create({ entity_type: "catalog.work", entity_id: work, patch: { "catalog.work.popularity": 1 } }, 422),
        create({ entity_type: "catalog.work", entity_id: work, patch: lengthPatch(10), extra: 1 }, 422),
        create({ entity_type: "catalog.work", entity_id: UNKNOWN_ID, patch: lengthPatch(10) }, 404),
        ...(merged === undefined
          ? []
          : [create({ entity_type: "catalog.work", entity_id: merged, patch: lengthPatch(10) }, 404)]),
        // The fixture's keys without a user: the route acts for a person.
        create({ entity_type: "catalog.work", entity_id: work, patch: lengthPatch(10) }, 403, c.f.keys.noUser),
        writeAs(keys.site, "POST", "/v2/proposals", { entity_type: "catalog.work", entity_id: work, patch: 3 }, 422)
      ]
    }),
  "proposals.listProposals": (c) =>
    Effect.gen(function*() {
      const keys = yield* proposers(c)
      const proposal = yield* openProposal(c)
      yield* openProposal(c)
      const first = yield* fetchJson(c, "/v2/proposals?limit=1", keys.site)
      return [
        getAs(keys.site, "/v2/proposals?limit=5"),
        getAs(keys.site, `/v2/proposals?state=open&entity_type=catalog.work&entity_id=${proposal.work}`),
        getAs(keys.site, `/v2/proposals?limit=1&cursor=${encodeURIComponent(first.next_cursor)}`),
        getAs(keys.site, "/v2/proposals?limit=1000", 400),
        getAs(keys.site, "/v2/proposals?cursor=x", 400),
        getAs(c.read, "/v2/proposals", 403)
      ]
    }),
  "proposals.getProposal": (c) =>
    Effect.gen(function*() {
      const keys = yield* proposers(c)
      const proposal = yield* openProposal(c)
      const path = `/v2/proposals/${proposal.id}`
      return [
        getAs(keys.site, path),
        getAs(keys.site, path, 304, { "if-none-match": proposal.etag }),
        getAs(keys.site, `/v2/proposals/${UNKNOWN_ID}`, 404),
        // Another site's proposal (docs/writing.md, "Who may write").
        getAs(keys.other, path, 403)
      ]
    }),
  "proposals.amendProposal": (c) =>
    Effect.gen(function*() {
      const keys = yield* proposers(c)
      const [open, withdrawn] = [yield* openProposal(c), yield* openProposal(c)]
      yield* setUp(c, 200, "POST", `/v2/proposals/${withdrawn.id}/withdrawal`, keys.site)
      const amend = (
        id: string,
        body: unknown,
        expectation: Probe["expect"],
        headers: Record<string, string> = { "if-match": "*" },
        key = keys.site
      ) => writeAs(key, "POST", `/v2/proposals/${id}/amendments`, body, expectation, headers)
      const idempotent = { "if-match": open.etag, "idempotency-key": `contract-amend-${open.id}` }
      return [
        amend(open.id, { set: lengthPatch(20), note: "Twenty, in fact." }, 201, idempotent),
        amend(open.id, { set: lengthPatch(20), note: "Twenty, in fact." }, 201, idempotent),
        amend(open.id, { set: lengthPatch(30) }, 409, idempotent),
        amend(open.id, { unset: ["catalog.work.length_minutes"] }, 201),
        // The proposal changed since `open.etag` was read.
        amend(open.id, { set: lengthPatch(40) }, 412, { "if-match": open.etag }),
        amend(open.id, { set: lengthPatch(40) }, 428, {}),
        amend(open.id, { set: { "catalog.work.nope": 1 }, unset: ["catalog.work.released"] }, 422),
        amend(open.id, { set: lengthPatch(40), unset: ["catalog.work.length_minutes"] }, 422),
        amend(withdrawn.id, { set: lengthPatch(40) }, 409),
        amend(UNKNOWN_ID, { set: lengthPatch(40) }, 404),
        amend(open.id, { set: lengthPatch(40) }, 403, { "if-match": "*" }, keys.other)
      ]
    }),
  "proposals.listAmendments": (c) =>
    Effect.gen(function*() {
      const keys = yield* proposers(c)
      const proposal = yield* openProposal(c)
      const path = `/v2/proposals/${proposal.id}/amendments`
      for (const minutes of [20, 30]) {
        yield* setUp(c, 201, "POST", path, keys.site, {
          body: { set: lengthPatch(minutes) },
          headers: { "if-match": "*" }
        })
      }
      const first = yield* fetchJson(c, `${path}?limit=1`, keys.site)
      return [
        getAs(keys.site, path),
        getAs(keys.site, `${path}?limit=1&cursor=${encodeURIComponent(first.next_cursor)}`),
        getAs(keys.site, `${path}?limit=1000`, 400),
        getAs(keys.site, `${path}?cursor=x`, 400),
        getAs(keys.site, `/v2/proposals/${UNKNOWN_ID}/amendments`, 404),
        getAs(keys.other, path, 403)
      ]
    }),
  "proposals.withdrawProposal": (c) =>
    Effect.gen(function*() {
      const keys = yield* proposers(c)
      const [plain, stale, matched] = [yield* openProposal(c), yield* openProposal(c), yield* openProposal(c)]
      yield* setUp(c, 201, "POST", `/v2/proposals/${stale.id}/amendments`, keys.site, {
        body: { set: lengthPatch(20) },
        headers: { "if-match": stale.etag }
      })
      const withdraw = (
        id: string,
        expectation: Probe["expect"],
        headers: Record<string, string> = {},
        key = keys.site
      ) => writeAs(key, "POST", `/v2/proposals/${id}/withdrawal`, undefined, expectation, headers)
      return [
        // `If-Match` is optional here.
        withdraw(plain.id, 200),
        withdraw(matched.id, 200, { "if-match": matched.etag }),
        withdraw(plain.id, 409),
        withdraw(stale.id, 412, { "if-match": stale.etag }),
        withdraw(UNKNOWN_ID, 404),
        withdraw(stale.id, 403, {}, keys.other)
      ]
    }),
  "proposalModeration.proposalQueue": (c) =>
    Effect.gen(function*() {
      const keys = yield* proposers(c)
      yield* openProposal(c)
      yield* openProposal(c)
      yield* mergedProposal(c)
      const first = yield* fetchJson(c, "/v2/moderation/proposals?limit=1", keys.moderator)
      return [
        getAs(keys.moderator, "/v2/moderation/proposals?limit=5"),
        getAs(keys.moderator, "/v2/moderation/proposals?state=merged&entity_type=catalog.work&site=site_a"),
        getAs(keys.moderator, `/v2/moderation/proposals?limit=1&cursor=${encodeURIComponent(first.next_cursor)}`),
        getAs(keys.moderator, "/v2/moderation/proposals?limit=1000", 400),
        getAs(keys.moderator, "/v2/moderation/proposals?cursor=x", 400),
        // A user without the moderator role.
        getAs(keys.site, "/v2/moderation/proposals", 403)
      ]
    }),
  "proposalModeration.moderationProposal": (c) =>
    Effect.gen(function*() {
      const keys = yield* proposers(c)
      const proposal = yield* openProposal(c)
      const path = `/v2/moderation/proposals/${proposal.id}`
      return [
        getAs(keys.moderator, path),
        getAs(keys.moderator, path, 304, { "if-none-match": proposal.etag }),
        getAs(keys.moderator, `/v2/moderation/proposals/${UNKNOWN_ID}`, 404),
        getAs(keys.site, path, 403)
      ]
    }),
  "proposalModeration.decideProposal": (c) =>
    Effect.gen(function*() {
      const keys = yield* proposers(c)
      const [merged, declined, unasked] = [yield* openProposal(c), yield* openProposal(c), yield* openProposal(c)]
      const decide = (
        id: string,
        body: unknown,
        expectation: Probe["expect"],
        headers: Record<string, string> = { "if-match": "*" },
        key = keys.moderator
      ) => writeAs(key, "POST", `/v2/moderation/proposals/${id}/decisions`, body, expectation, headers)
      return [
        decide(merged.id, { decision: "merge", note: "Checked." }, 200, { "if-match": merged.etag }),
        decide(declined.id, { decision: "decline" }, 200),
        // Already decided; then with the ETag from before the decision.
        decide(merged.id, { decision: "decline" }, 409),
        decide(declined.id, { decision: "merge" }, 412, { "if-match": declined.etag }),
        decide(unasked.id, { decision: "merge" }, 428, {}),
        decide(unasked.id, { decision: "approve" }, 422),
        decide(UNKNOWN_ID, { decision: "merge" }, 404),
        decide(unasked.id, { decision: "merge" }, 403, { "if-match": "*" }, keys.site)
      ]
    }),
  "revisions.listFields": (c) =>
    Effect.succeed([
      getAs(c.read, "/v2/catalog/fields"),
      { request: { method: "GET", path: "/v2/catalog/fields" }, expect: 401 }
    ]),
  "revisions.listRevisions": (c) =>
    Effect.gen(function*() {
      const proposal = yield* mergedProposal(c)
      const keys = yield* proposers(c)
      // A second merge on the same work: two revisions, so the first page has a cursor.
      const again = yield* propose(c.f, keys.site, {
        entity_type: "catalog.work",
        entity_id: proposal.work,
        patch: lengthPatch(25)
      })
      if (again.status !== 201) throw new Error(`set-up proposal: ${again.status} ${JSON.stringify(again.body)}`)
      yield* setUp(c, 200, "POST", `/v2/moderation/proposals/${again.body.id}/decisions`, keys.moderator, {
        body: { decision: "merge" },
        headers: { "if-match": again.headers.get("etag")! }
      })
      const path = `/v2/catalog/works/${proposal.work}/revisions`
      const first = yield* fetchJson(c, `${path}?limit=1`)
      const tag = yield* firstItem(c, "/v2/catalog/tags?limit=1")
      const merged = yield* mergedId(c, "works")
      return [
        getAs(c.read, path),
        getAs(c.read, `${path}?limit=1&cursor=${encodeURIComponent(first.next_cursor)}`),
        // An entity without revisions: an empty list.
        getAs(c.read, `/v2/catalog/tags/${tag.id}/revisions`),
        getAs(c.read, `/v2/catalog/works/${UNKNOWN_ID}/revisions`, 404),
        ...(merged === undefined ? [] : [getAs(c.read, `/v2/catalog/works/${merged}/revisions`, 404)]),
        getAs(c.read, `${path}?limit=1000`, 400),
        getAs(c.read, `${path}?cursor=x`, 400),
        // Persons are not edited by proposals: not a collection of this path.
        getAs(c.read, `/v2/catalog/persons/1/revisions`, 400)
      ]
    }),
  // News (docs/writing.md, "News").
  "newsWrite.createNews": (c) =>
    Effect.gen(function*() {
      const { bot, source } = yield* newsPoster(c)
      const body = { source, title: "Contract", summary: "s", source_url: "https://news.example.test/contract-create" }
      const idempotent = { "idempotency-key": "contract-news-create" }
      return [
        writeAs(bot, "POST", "/v2/news", body, 201, idempotent),
        writeAs(bot, "POST", "/v2/news", body, 201, idempotent),
        writeAs(bot, "POST", "/v2/news", { ...body, title: "Another" }, 409, idempotent),
        // The same article again.
        writeAs(bot, "POST", "/v2/news", body, 409),
        writeAs(bot, "POST", "/v2/news", {
          ...body,
          source_url: "https://news.example.test/c-x",
          work_ids: [UNKNOWN_ID]
        }, 422),
        writeAs(bot, "POST", "/v2/news", { ...body, source: "no_such_source" }, 422),
        writeAs(bot, "POST", "/v2/news", { ...body, extra: 1 }, 422),
        writeAs(c.read, "POST", "/v2/news", body, 403)
      ]
    }),
  "news.listNews": (c) =>
    Effect.gen(function*() {
      const work = c.f.works[0]!
      yield* newsItem(c, work)
      yield* newsItem(c, work)
      const first = yield* fetchJson(c, "/v2/news?limit=1")
      return [
        getAs(c.read, "/v2/news?limit=5"),
        getAs(c.read, `/v2/news?lane=news&source=contract_news&work_id=${work}`),
        getAs(c.read, `/v2/news?limit=1&cursor=${encodeURIComponent(first.next_cursor)}`),
        getAs(c.read, "/v2/news?limit=1000", 400),
        getAs(c.read, "/v2/news?cursor=x", 400),
        getAs(c.read, "/v2/news?lane=opinion", 400)
      ]
    }),
  "news.getNews": (c) =>
    Effect.flatMap(newsItem(c, c.f.works[0]!), (id) => record(c, `/v2/news/${id}`, `/v2/news/${UNKNOWN_ID}`)),
  "news.listWorkNews": (c) =>
    Effect.gen(function*() {
      const work = c.f.works[0]!
      yield* newsItem(c, work)
      const merged = yield* mergedId(c, "works")
      return [
        getAs(c.read, `/v2/catalog/works/${work}/news?limit=5`),
        getAs(c.read, `/v2/catalog/works/${work}/news?lane=column`),
        getAs(c.read, `/v2/catalog/works/${UNKNOWN_ID}/news`, 404),
        ...(merged === undefined ? [] : [getAs(c.read, `/v2/catalog/works/${merged}/news`, 404)]),
        getAs(c.read, `/v2/catalog/works/${work}/news?limit=1000`, 400)
      ]
    }),
  "revisions.getRevision": (c) =>
    Effect.map(mergedProposal(c), (proposal) => [
      getAs(c.read, `/v2/revisions/${proposal.revision}`),
      getAs(c.read, `/v2/revisions/${UNKNOWN_ID}`, 404),
      getAs(c.read, "/v2/revisions/abc", 400)
    ]),
  // Cover votes (docs/writing.md, "Cover votes").
  "coverVotes.putCoverVote": (c) =>
    Effect.gen(function*() {
      const { cover, other, work } = yield* votedCover(c)
      const key = yield* voterKey(c)
      const path = `/v2/catalog/works/${work}/covers/${cover}/vote`
      return [
        writeAs(key, "PUT", path, { vote: "up" }),
        // Idempotent by nature: the same answer again.
        writeAs(key, "PUT", path, { vote: "up" }),
        writeAs(key, "PUT", path, { vote: "down" }, 422),
        writeAs(key, "PUT", `/v2/catalog/works/${UNKNOWN_ID}/covers/${cover}/vote`, { vote: "up" }, 404),
        writeAs(key, "PUT", `/v2/catalog/works/${other}/covers/${cover}/vote`, { vote: "up" }, 404),
        writeAs(c.f.keys.noUser, "PUT", path, { vote: "up" }, 403)
      ]
    }),
  "coverVotes.deleteCoverVote": (c) =>
    Effect.gen(function*() {
      const { cover, work } = yield* votedCover(c)
      const key = yield* voterKey(c)
      const path = `/v2/catalog/works/${work}/covers/${cover}/vote`
      return [
        writeAs(key, "DELETE", path, undefined),
        // No vote to take back: fine.
        writeAs(key, "DELETE", path, undefined),
        writeAs(key, "DELETE", `/v2/catalog/works/${UNKNOWN_ID}/covers/${cover}/vote`, undefined, 404)
      ]
    }),
  "coverVotes.listCoverVotes": (c) =>
    Effect.gen(function*() {
      const { work } = yield* votedCover(c)
      const key = yield* voterKey(c)
      return [
        getAs(key, `/v2/catalog/works/${work}/cover-votes`),
        getAs(key, `/v2/catalog/works/${UNKNOWN_ID}/cover-votes`, 404),
        getAs(c.f.keys.noUser, `/v2/catalog/works/${work}/cover-votes`, 403)
      ]
    }),
  // Playtimes (docs/writing.md, "Playtimes").
  "playtimes.batchPlaytimes": (c) =>
    Effect.gen(function*() {
      const key = yield* players(c)
      const [a, b] = [freshWork(c), freshWork(c)]
      const body = { items: [{ work_id: a, minutes: 90 }, { work_id: b, minutes: 0 }] }
      const idempotent = { "idempotency-key": `contract-playtimes-${a}` }
      const batch = (items: unknown, expectation: Probe["expect"], as = key) =>
        writeAs(as, "POST", "/v2/playtimes", { items }, expectation)
      return [
        writeAs(key, "POST", "/v2/playtimes", body, 200, idempotent),
        // The same key and request: the stored answer, replayed; another request: 409.
        writeAs(key, "POST", "/v2/playtimes", body, 200, idempotent),
        writeAs(key, "POST", "/v2/playtimes", { items: [{ work_id: a, minutes: 91 }] }, 409, idempotent),
        batch([{ work_id: a, minutes: 120 }], 200),
        batch([{ work_id: UNKNOWN_ID, minutes: 1 }], 422),
        batch([{ work_id: a, minutes: 1 }, { work_id: a, minutes: 2 }], 422),
        batch([{ work_id: a, minutes: 60_001 }], 422),
        batch([{ work_id: a, minutes: 1 }], 403, c.f.keys.noUser)
      ]
    }),
  "playtimes.listPlaytimes": (c) =>
    Effect.gen(function*() {
      const key = yield* players(c)
      yield* setUp(c, 200, "POST", "/v2/playtimes", key, {
        body: { items: [{ work_id: freshWork(c), minutes: 5 }, { work_id: freshWork(c), minutes: 6 }] }
      })
      const first = yield* fetchJson(c, "/v2/playtimes?limit=1", key)
      return [
        getAs(key, "/v2/playtimes"),
        getAs(key, `/v2/playtimes?limit=1&cursor=${encodeURIComponent(first.next_cursor)}`),
        getAs(key, "/v2/playtimes?limit=1000", 400),
        getAs(key, "/v2/playtimes?cursor=x", 400),
        getAs(c.f.keys.noUser, "/v2/playtimes", 403)
      ]
    }),
  // Editor images (docs/writing.md, "Editor images").
  "mediaWrite.uploadImage": (c) =>
    Effect.gen(function*() {
      const key = yield* editorKey(c)
      const png = yield* contractPng(c, 1)
      const image = (bytes: Uint8Array, contentType: string, expectation: Probe["expect"], as = key, query = "cover") =>
        imageAs(as, `/v2/media/images?preset=${query}`, bytes, contentType, expectation)
      return [
        image(png, "image/png", 201),
        // The same bytes again: stored already.
        image(png, "image/png", 200),
        image(yield* contractPng(c, 2), "image/png", 201, key, "screenshot"),
        image(png, "image/jpeg", 422),
        image(new TextEncoder().encode("not an image"), "image/png", 422),
        image(png, "text/plain", 422),
        image(png, "image/png", 400, key, "poster"),
        image(png, "image/png", 403, c.f.keys.noUser)
      ]
    }),
  "media.getImage": (c) =>
    Effect.gen(function*() {
      const stored = yield* setUpImage(c, yield* contractPng(c, 3))
      return [
        { request: { method: "GET", path: `/v2/media/images/${stored}` }, expect: "success" },
        { request: { method: "GET", path: `/v2/media/images/${"0".repeat(64)}` }, expect: 404 },
        { request: { method: "GET", path: "/v2/media/images/not-a-hash" }, expect: 400 }
      ]
    })
}

// ---------------------------------------------------------------------------------------------
// The identity provider
// ---------------------------------------------------------------------------------------------

const identityRoutes = contractRoutes(IdentityApi)

/** The 415 the identity document adds to every endpoint that takes JSON (schema/Api/IdentityErrors.ts). */
const identityExtra = new Map<number, ReadonlyArray<Declared>>([
  [415, [{
    schema: unsupportedMediaType,
    body: { _tag: "Json", contentType: "application/json" },
    identifier: "EnvelopeError415"
  }]]
])

interface IdentityContext {
  readonly identity: string
  readonly client: TestClient
}

const API = "/api/v1"

const plain = (method: string, path: string, expectation: Probe["expect"] = "success", headers = {}): Probe => ({
  request: { method, path: `${API}${path}`, headers },
  expect: expectation
})

const jsonTo = (
  method: string,
  path: string,
  body: unknown,
  expectation: Probe["expect"] = "success",
  headers: Record<string, string> = {}
): Probe => ({
  request: {
    method,
    path: `${API}${path}`,
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body)
  },
  expect: expectation
})

const formTo = (
  path: string,
  fields: Record<string, string>,
  expectation: Probe["expect"] = "success",
  headers: Record<string, string> = {}
): Probe => ({
  request: {
    method: "POST",
    path: `${API}${path}`,
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(fields).toString()
  },
  expect: expectation
})

const basicOf = (client: TestClient) => ({
  authorization: `Basic ${
    Buffer.from(`${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.secret ?? "")}`).toString("base64")
  }`
})

const freshEmail = (what: string) =>
  `${what}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}@example.com`

/** The last 6-digit code the development mailbox holds for `to`. */
const mailedCode = (ctx: IdentityContext, to: string) =>
  promise(async () => {
    const res = await fetch(`${ctx.identity}${API}/dev/mailbox?to=${encodeURIComponent(to)}`)
    const body = await res.json() as any
    const match = /\b([0-9]{6})\b/.exec(body.data.items.at(-1)?.text ?? "")
    if (match === null) throw new Error(`no code mailed to ${to}`)
    return match[1]!
  })

const postJson = (
  ctx: IdentityContext,
  method: string,
  path: string,
  body: unknown,
  headers: Record<string, string> = {}
) =>
  promise(async () => {
    const res = await fetch(`${ctx.identity}${API}${path}`, {
      method,
      headers: { "content-type": "application/json", ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    const text = await res.text()
    if (res.status !== 200) throw new Error(`set-up ${method} ${path}: ${res.status} ${text}`)
    return JSON.parse(text) as any
  })

/** A page's CSRF cookie and token (bound to `session` when given), and the hidden fields named. */
const pageForm = (ctx: IdentityContext, page: string, session?: string, hidden: ReadonlyArray<string> = []) =>
  promise(async () => {
    const res = await fetch(`${ctx.identity}${page}`, {
      redirect: "manual",
      headers: session === undefined ? {} : { cookie: session }
    })
    const html = await res.text()
    if (res.status !== 200) throw new Error(`set-up GET ${page}: ${res.status} ${html.slice(0, 200)}`)
    const cookie = [session, ...cookiesOf(res)].filter((c) => c !== undefined).join("; ")
    const fields: Record<string, string> = { csrf: hiddenValue(html, "csrf") }
    for (const name of hidden) fields[name] = hiddenValue(html, name)
    return { cookie, fields }
  })

/** A signed-in browser on the account page: its cookies and form token, and the user. */
const accountForm = (ctx: IdentityContext, page = `${API}/ui/account`) =>
  Effect.gen(function*() {
    const s = yield* signIn(ctx.identity)
    const form = yield* pageForm(ctx, page, s.cookie)
    return { ...form, s }
  })

const PERIOD_MS = 30_000

/** The TOTP code of `secret` (base32) for time step `step` (RFC 6238 section 4). */
const codeAt = (secret: string, step: number) =>
  OTPAuth.HOTP.generate({ secret: OTPAuth.Secret.fromBase32(secret), algorithm: "SHA1", digits: 6, counter: step })

/**
 * The current time step, waiting for the next one when less than 3 seconds are left, so a code of
 * the step before it is still accepted when it arrives (RFC 6238 section 5.2: one step back).
 */
const quietStep = promise(async () => {
  const into = Date.now() % PERIOD_MS
  if (into > PERIOD_MS - 3_000) await new Promise((resolve) => setTimeout(resolve, PERIOD_MS - into + 100))
  return Math.floor(Date.now() / PERIOD_MS)
})

/** A signed-in user whose second factor is on (turned on with the previous step's code), and the current code. */
const userWithFactor = (ctx: IdentityContext) =>
  Effect.gen(function*() {
    const s = yield* signIn(ctx.identity)
    const auth = { authorization: `Bearer ${s.accessToken}` }
    const setup = yield* postJson(ctx, "POST", "/auth/2fa/setup", undefined, auth)
    const secret: string = setup.data.secret
    const step = yield* quietStep
    yield* postJson(ctx, "POST", "/auth/2fa/enable", {
      code: codeAt(secret, step - 1),
      current_password: s.user.password
    }, auth)
    return { s, auth, code: codeAt(secret, step) }
  })

const tinyImage = promise(() =>
  sharp({ create: { width: 32, height: 32, channels: 3, background: "#336699" } }).png().toBuffer()
)

const avatarForm = (bytes: Buffer, fields: Record<string, string> = {}) => {
  const data = new FormData()
  for (const [k, v] of Object.entries(fields)) data.append(k, v)
  data.append("file", new Blob([new Uint8Array(bytes)], { type: "image/png" }), "me.png")
  return data
}

const identityProbes: Record<string, (ctx: IdentityContext) => Probes<any>> = {
  "health.healthz": () => Effect.succeed([{ request: { method: "GET", path: "/healthz" }, expect: "success" }]),
  "health.readyz": () => Effect.succeed([{ request: { method: "GET", path: "/readyz" }, expect: "success" }]),
  "discovery.openidConfiguration": () => Effect.succeed([plain("GET", "/.well-known/openid-configuration")]),
  "discovery.authorizationServerMetadata": () =>
    Effect.succeed([
      { request: { method: "GET", path: `/.well-known/oauth-authorization-server${API}` }, expect: "success" }
    ]),
  "oauth.authorize": (ctx) =>
    Effect.map(signIn(ctx.identity), (s) => [
      plain("GET", `/oauth/authorize?${new URLSearchParams(codeParams(ctx.client))}`, "success", {
        authorization: `Bearer ${s.accessToken}`
      }),
      plain(
        "GET",
        `/oauth/authorize?${new URLSearchParams({
          ...codeParams(ctx.client),
          redirect_uri: "https://elsewhere.example/cb"
        })}`,
        400
      ),
      plain("GET", `/oauth/authorize?${new URLSearchParams({ ...codeParams(ctx.client), client_id: "ghost" })}`, 404)
    ]),
  "oauth.token": (ctx) =>
    Effect.gen(function*() {
      const s = yield* signIn(ctx.identity)
      const { code } = yield* promise(() =>
        getCode(ctx.identity, ctx.client, s.accessToken, { scope: "openid profile" })
      )
      const fields = {
        grant_type: "authorization_code",
        code,
        redirect_uri: ctx.client.redirectUri,
        client_id: ctx.client.clientId,
        client_secret: ctx.client.secret!
      }
      return [
        formTo("/oauth/token", fields),
        formTo("/oauth/token", { ...fields, grant_type: "password" }, 400),
        formTo("/oauth/token", { ...fields, client_secret: "wrong" }, 401)
      ]
    }),
  "oauth.userinfo": (ctx) =>
    Effect.gen(function*() {
      const s = yield* signIn(ctx.identity)
      const tokens = yield* promise(() => tokensFor(ctx.identity, ctx.client, s))
      return [
        plain("GET", "/oauth/userinfo", "success", { authorization: `Bearer ${tokens.access_token}` }),
        plain("GET", "/oauth/userinfo", 401)
      ]
    }),
  "oauth.userinfoPost": (ctx) =>
    Effect.gen(function*() {
      const s = yield* signIn(ctx.identity)
      const tokens = yield* promise(() => tokensFor(ctx.identity, ctx.client, s))
      return [
        plain("POST", "/oauth/userinfo", "success", { authorization: `Bearer ${tokens.access_token}` }),
        plain("POST", "/oauth/userinfo", 401, { authorization: "Bearer not-a-token" })
      ]
    }),
  "oauth.revoke": (ctx) =>
    Effect.gen(function*() {
      const s = yield* signIn(ctx.identity)
      const tokens = yield* promise(() => tokensFor(ctx.identity, ctx.client, s))
      const fields = { token: tokens.refresh_token, client_id: ctx.client.clientId, client_secret: ctx.client.secret! }
      return [formTo("/oauth/revoke", fields), formTo("/oauth/revoke", { ...fields, client_secret: "wrong" }, 401)]
    }),
  "oauth.logout": (ctx) =>
    Effect.succeed([
      plain(
        "GET",
        `/oauth/logout?${new URLSearchParams({ client_id: ctx.client.clientId, redirect: ctx.client.redirectUri })}`
      )
    ]),
  "oauth.postLogoutRedirect": (ctx) =>
    Effect.succeed([
      plain(
        "GET",
        `/oauth/post-logout-redirect?${new URLSearchParams({
          client_id: ctx.client.clientId,
          redirect: ctx.client.redirectUri
        })}`
      ),
      plain("GET", "/oauth/post-logout-redirect?client_id=ghost&redirect=https://rp.example/", 404)
    ]),
  "oauth.jwks": () => Effect.succeed([plain("GET", "/oauth/jwks")]),
  "auth.login": () =>
    Effect.map(createUser(), (user) => [
      jsonTo("POST", "/auth/login", { email: user.email, password: user.password }),
      jsonTo("POST", "/auth/login", { email: user.email, password: "wrong password" }, 401),
      jsonTo("POST", "/auth/login", { email: user.email }, 400)
    ]),
  "account.me": (ctx) =>
    Effect.map(signIn(ctx.identity), (s) => [
      plain("GET", "/auth/me", "success", { authorization: `Bearer ${s.accessToken}` }),
      plain("GET", "/auth/me", 401)
    ]),
  "account.updateMe": (ctx) =>
    Effect.map(signIn(ctx.identity), (s) => [
      jsonTo("PATCH", "/auth/me", { name: "A new name", bio: "A few words." }, "success", {
        authorization: `Bearer ${s.accessToken}`
      }),
      jsonTo("PATCH", "/auth/me", { name: "   " }, 400, { authorization: `Bearer ${s.accessToken}` })
    ]),
  "account.uploadAvatar": (ctx) =>
    Effect.gen(function*() {
      const s = yield* signIn(ctx.identity)
      const image = yield* tinyImage
      const auth = { authorization: `Bearer ${s.accessToken}` }
      return [
        {
          request: { method: "POST", path: `${API}/auth/me/avatar`, headers: auth, body: avatarForm(image) },
          expect: "success"
        },
        {
          request: {
            method: "POST",
            path: `${API}/auth/me/avatar`,
            headers: auth,
            body: avatarForm(Buffer.from("not an image"))
          },
          expect: 422
        }
      ] satisfies ReadonlyArray<Probe>
    }),
  "account.avatar": (ctx) =>
    Effect.gen(function*() {
      const s = yield* signIn(ctx.identity)
      const image = yield* tinyImage
      const uploaded = yield* promise(() =>
        fetch(`${ctx.identity}${API}/auth/me/avatar`, {
          method: "POST",
          headers: { authorization: `Bearer ${s.accessToken}` },
          body: avatarForm(image)
        }).then((r) => r.json() as Promise<any>)
      )
      const picture = new URL(uploaded.data.picture as string)
      return [
        { request: { method: "GET", path: picture.pathname }, expect: "success" },
        plain("GET", `/avatars/${"0".repeat(64)}.webp`, 404)
      ] satisfies ReadonlyArray<Probe>
    }),
  "account.sendEmailCode": (ctx) =>
    Effect.map(signIn(ctx.identity), (s) => [
      jsonTo("POST", "/auth/email/send-code", { email: freshEmail("new") }, "success", {
        authorization: `Bearer ${s.accessToken}`
      }),
      jsonTo("POST", "/auth/email/send-code", { email: "not an address" }, 400, {
        authorization: `Bearer ${s.accessToken}`
      })
    ]),
  "account.changeEmail": (ctx) =>
    Effect.gen(function*() {
      const s = yield* signIn(ctx.identity)
      const auth = { authorization: `Bearer ${s.accessToken}` }
      const email = freshEmail("new")
      yield* postJson(ctx, "POST", "/auth/email/send-code", { email }, auth)
      const code = yield* mailedCode(ctx, email)
      const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, "0")
      return [
        jsonTo("PUT", "/auth/email", { email, code: wrong, current_password: s.user.password }, 400, auth),
        jsonTo("PUT", "/auth/email", { email, code, current_password: s.user.password }, "success", auth)
      ]
    }),
  "account.changePassword": (ctx) =>
    Effect.map(signIn(ctx.identity), (s) => [
      jsonTo(
        "PUT",
        "/auth/password",
        { current_password: s.user.password, new_password: "a much longer new password" },
        "success",
        { authorization: `Bearer ${s.accessToken}` }
      ),
      jsonTo("PUT", "/auth/password", { current_password: "x", new_password: "a much longer new password" }, 401)
    ]),
  "account.sessions": (ctx) =>
    Effect.map(signIn(ctx.identity), (s) => [
      plain("GET", "/auth/sessions", "success", { authorization: `Bearer ${s.accessToken}` })
    ]),
  "account.endSession": (ctx) =>
    Effect.gen(function*() {
      const s = yield* signIn(ctx.identity)
      yield* promise(() => login(ctx.identity, s.user))
      const auth = { authorization: `Bearer ${s.accessToken}` }
      const list = yield* promise(() =>
        fetch(`${ctx.identity}${API}/auth/sessions`, { headers: auth }).then((r) => r.json() as Promise<any>)
      )
      const other = (list.data.items as Array<{ id: string; current: boolean }>).find((i) => !i.current)!
      return [
        plain("DELETE", `/auth/sessions/${other.id}`, "success", auth),
        plain("DELETE", `/auth/sessions/${other.id}`, 404, auth)
      ]
    }),
  "account.sendRegistrationCode": () =>
    Effect.succeed([
      jsonTo("POST", "/auth/register/send-code", { email: freshEmail("register") }),
      jsonTo("POST", "/auth/register/send-code", { email: 3 }, 400),
      // Not sent as JSON: the 415 the document adds to every endpoint that takes JSON.
      jsonTo("POST", "/auth/register/send-code", { email: freshEmail("register") }, 415, {
        "content-type": "text/plain"
      })
    ]),
  "account.register": (ctx) =>
    Effect.gen(function*() {
      const email = freshEmail("register")
      const sent = yield* postJson(ctx, "POST", "/auth/register/send-code", { email })
      const code = yield* mailedCode(ctx, email)
      const body = { email, pending: sent.data.pending, code, password: "a long enough password", name: "New User" }
      return [jsonTo("POST", "/auth/register", body), jsonTo("POST", "/auth/register", { ...body, password: "" }, 400)]
    }),
  "account.sendRecoveryCode": () =>
    Effect.succeed([
      jsonTo("POST", "/auth/password/forgot/send-code", { email: freshEmail("recover") }),
      jsonTo("POST", "/auth/password/forgot/send-code", {}, 400)
    ]),
  "account.resetPassword": (ctx) =>
    Effect.gen(function*() {
      const user = yield* createUser()
      const sent = yield* postJson(ctx, "POST", "/auth/password/forgot/send-code", { email: user.email })
      const code = yield* mailedCode(ctx, user.email)
      const body = { pending: sent.data.pending, code, password: "a long enough new password" }
      return [jsonTo("POST", "/auth/password/reset", body), jsonTo("POST", "/auth/password/reset", { code }, 400)]
    }),
  "directory.clientInfo": (ctx) =>
    Effect.succeed([
      plain("GET", `/oauth/client-info?client_id=${ctx.client.clientId}`),
      plain("GET", "/oauth/client-info?client_id=ghost", 404),
      plain("GET", "/oauth/client-info", 400)
    ]),
  "directory.ecosystem": () => Effect.succeed([plain("GET", "/oauth/ecosystem")]),
  "directory.usersBatch": (ctx) =>
    Effect.map(createUser({ name: "Batch Person" }), (user) => [
      plain("GET", `/users/batch?ids=${user.id},${UNKNOWN_ID}`, "success", basicOf(ctx.client)),
      plain("GET", `/users/batch?ids=${user.id}`, 401)
    ]),
  "directory.usersSearch": (ctx) =>
    Effect.map(createUser({ name: "Searchable Person" }), () => [
      plain("GET", "/users/search?q=Searchable", "success", basicOf(ctx.client)),
      plain("GET", "/users/search", 400, basicOf(ctx.client))
    ]),
  "creator.apply": (ctx) =>
    Effect.map(signIn(ctx.identity), (s) => {
      const body = { statement: "I write visual novels and would like to list my own works in the catalog." }
      const auth = { authorization: `Bearer ${s.accessToken}` }
      return [
        jsonTo("POST", "/creator/applications", body, "success", auth),
        jsonTo("POST", "/creator/applications", body, 409, auth)
      ]
    }),
  "creator.mine": (ctx) =>
    Effect.gen(function*() {
      const s = yield* signIn(ctx.identity)
      const auth = { authorization: `Bearer ${s.accessToken}` }
      const fresh = yield* signIn(ctx.identity)
      yield* postJson(ctx, "POST", "/creator/applications", {
        statement: "I write visual novels and would like to list my own works in the catalog."
      }, auth)
      return [
        plain("GET", "/creator/applications/me", "success", auth),
        plain("GET", "/creator/applications/me", "success", { authorization: `Bearer ${fresh.accessToken}` }),
        plain("GET", "/creator/applications/me", 401)
      ]
    }),
  "twoFactor.setup": (ctx) =>
    Effect.gen(function*() {
      const s = yield* signIn(ctx.identity)
      const on = yield* userWithFactor(ctx)
      return [
        plain("POST", "/auth/2fa/setup", "success", { authorization: `Bearer ${s.accessToken}` }),
        plain("POST", "/auth/2fa/setup", 409, on.auth)
      ]
    }),
  "twoFactor.enable": (ctx) =>
    Effect.gen(function*() {
      const s = yield* signIn(ctx.identity)
      const auth = { authorization: `Bearer ${s.accessToken}` }
      const setup = yield* postJson(ctx, "POST", "/auth/2fa/setup", undefined, auth)
      const code = codeAt(setup.data.secret, yield* quietStep)
      return [
        jsonTo("POST", "/auth/2fa/enable", { code: "12", current_password: s.user.password }, 401, auth),
        jsonTo("POST", "/auth/2fa/enable", { code, current_password: s.user.password }, "success", auth)
      ]
    }),
  "twoFactor.disable": (ctx) =>
    Effect.map(userWithFactor(ctx), (on) => [
      jsonTo("DELETE", "/auth/2fa", { code: on.code, current_password: on.s.user.password }, "success", on.auth),
      jsonTo("DELETE", "/auth/2fa", { code: on.code, current_password: on.s.user.password }, 409, on.auth)
    ]),
  "twoFactor.recoveryCodes": (ctx) =>
    Effect.map(userWithFactor(ctx), (on) => [
      jsonTo(
        "POST",
        "/auth/2fa/recovery-codes",
        { code: on.code, current_password: on.s.user.password },
        "success",
        on.auth
      ),
      jsonTo("POST", "/auth/2fa/recovery-codes", {}, 400, on.auth)
    ]),
  "pages.loginPage": () => Effect.succeed([plain("GET", "/ui/login")]),
  "pages.submitLogin": (ctx) =>
    Effect.gen(function*() {
      const user = yield* createUser()
      const form = yield* pageForm(ctx, `${API}/ui/login`)
      const fields = { ...form.fields, email: user.email, password: user.password }
      return [
        formTo("/ui/login", { ...fields, password: "wrong password" }, 401, { cookie: form.cookie }),
        formTo("/ui/login", { ...fields, csrf: "forged" }, 403, { cookie: form.cookie }),
        formTo("/ui/login", { ...fields, return_to: `${API}/ui/account` }, "success", { cookie: form.cookie }),
        // Without `return_to`: the "Signed in" page.
        formTo("/ui/login", fields, 200, { cookie: form.cookie })
      ]
    }),
  "pages.consentPage": (ctx) =>
    Effect.gen(function*() {
      const client = yield* createClient({ autoConsent: false })
      const s = yield* signIn(ctx.identity)
      const query = new URLSearchParams(codeParams(client, { scope: "openid profile" }))
      return [
        plain("GET", `/ui/consent?${query}`, "success", { cookie: s.cookie }),
        plain("GET", "/ui/consent", 400, { cookie: s.cookie }),
        plain("GET", "/ui/consent?client_id=ghost", 404, { cookie: s.cookie })
      ]
    }),
  "pages.submitConsent": (ctx) =>
    Effect.gen(function*() {
      const client = yield* createClient({ autoConsent: false })
      const s = yield* signIn(ctx.identity)
      const query = new URLSearchParams(codeParams(client, { scope: "openid profile" }))
      const form = yield* pageForm(ctx, `${API}/ui/consent?${query}`, s.cookie, ["request"])
      return [
        formTo("/ui/consent", { ...form.fields, decision: "approve" }, "success", { cookie: form.cookie }),
        formTo("/ui/consent", { ...form.fields, csrf: "forged", decision: "approve" }, 403, { cookie: form.cookie })
      ]
    }),
  "pages.logoutPage": (ctx) =>
    Effect.map(signIn(ctx.identity), (s) => {
      const query = new URLSearchParams({ client_id: ctx.client.clientId, redirect: ctx.client.redirectUri })
      return [
        plain("GET", `/ui/logout?${query}`, "success", { cookie: s.cookie }),
        // Nobody signed in: straight on to the return target.
        plain("GET", `/ui/logout?${query}`, 303)
      ]
    }),
  "pages.submitLogout": (ctx) =>
    Effect.gen(function*() {
      const s = yield* signIn(ctx.identity)
      const query = new URLSearchParams({
        client_id: ctx.client.clientId,
        redirect: ctx.client.redirectUri,
        state: "s"
      })
      const form = yield* pageForm(ctx, `${API}/ui/logout?${query}`, s.cookie, ["client_id", "redirect", "state"])
      return [
        formTo("/ui/logout", { ...form.fields, csrf: "forged" }, 403, { cookie: form.cookie }),
        formTo("/ui/logout", { ...form.fields, decision: "logout" }, "success", { cookie: form.cookie })
      ]
    }),
  "pages.stylesheet": () => Effect.succeed([plain("GET", "/ui/style.css")]),
  "accountPages.registerPage": () => Effect.succeed([plain("GET", "/ui/register")]),
  "accountPages.registerSendCode": (ctx) =>
    Effect.map(pageForm(ctx, `${API}/ui/register`), (form) => [
      formTo("/ui/register/send-code", { ...form.fields, email: freshEmail("register") }, "success", {
        cookie: form.cookie
      }),
      formTo("/ui/register/send-code", { ...form.fields, csrf: "forged" }, 403, { cookie: form.cookie })
    ]),
  "accountPages.submitRegister": (ctx) =>
    Effect.gen(function*() {
      const email = freshEmail("register")
      const form = yield* pageForm(ctx, `${API}/ui/register`)
      const sent = yield* promise(() =>
        fetch(`${ctx.identity}${API}/ui/register/send-code`, {
          method: "POST",
          redirect: "manual",
          headers: { cookie: form.cookie, "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ ...form.fields, email }).toString()
        })
      )
      const cookie = [form.cookie, ...cookiesOf(sent)].join("; ")
      const code = yield* mailedCode(ctx, email)
      const fields = { ...form.fields, email, code, name: "New User", password: "a long enough password" }
      return [
        formTo("/ui/register", { ...fields, password: "" }, 400, { cookie }),
        formTo("/ui/register", fields, "success", { cookie })
      ]
    }),
  "accountPages.accountPage": (ctx) =>
    Effect.map(signIn(ctx.identity), (s) => [
      plain("GET", "/ui/account", "success", { cookie: s.cookie }),
      plain("GET", "/ui/account", 302)
    ]),
  "accountPages.saveProfile": (ctx) =>
    Effect.map(accountForm(ctx), (form) => [
      formTo("/ui/account/profile", { ...form.fields, name: "New name", bio: "Bio" }, "success", {
        cookie: form.cookie
      }),
      formTo("/ui/account/profile", { ...form.fields, name: "   " }, 400, { cookie: form.cookie })
    ]),
  "accountPages.uploadAvatarForm": (ctx) =>
    Effect.gen(function*() {
      const form = yield* accountForm(ctx)
      const image = yield* tinyImage
      const post = (body: FormData, expectation: Probe["expect"]): Probe => ({
        request: { method: "POST", path: `${API}/ui/account/avatar`, headers: { cookie: form.cookie }, body },
        expect: expectation
      })
      return [
        post(avatarForm(image, form.fields), "success"),
        post(avatarForm(image, { ...form.fields, csrf: "forged" }), 403),
        post(avatarForm(Buffer.from("not an image"), form.fields), 422)
      ]
    }),
  "accountPages.sendEmailCodeForm": (ctx) =>
    Effect.map(accountForm(ctx), (form) => [
      formTo("/ui/account/email/send-code", { ...form.fields, email: freshEmail("new") }, "success", {
        cookie: form.cookie
      }),
      formTo("/ui/account/email/send-code", { ...form.fields, email: "not an address" }, 400, { cookie: form.cookie })
    ]),
  "accountPages.changeEmailForm": (ctx) =>
    Effect.gen(function*() {
      const form = yield* accountForm(ctx)
      const email = freshEmail("new")
      yield* postJson(ctx, "POST", "/auth/email/send-code", { email }, {
        authorization: `Bearer ${form.s.accessToken}`
      })
      const code = yield* mailedCode(ctx, email)
      const fields = { ...form.fields, email, code, current_password: form.s.user.password }
      return [
        formTo("/ui/account/email", { ...fields, code: "000000" === code ? "000001" : "000000" }, 400, {
          cookie: form.cookie
        }),
        formTo("/ui/account/email", fields, "success", { cookie: form.cookie })
      ]
    }),
  "accountPages.changePasswordForm": (ctx) =>
    Effect.map(accountForm(ctx), (form) => [
      formTo(
        "/ui/account/password",
        { ...form.fields, current_password: form.s.user.password, new_password: "a much longer new password" },
        "success",
        { cookie: form.cookie }
      ),
      formTo("/ui/account/password", { ...form.fields, csrf: "forged" }, 403, { cookie: form.cookie })
    ]),
  "accountPages.endSessionForm": (ctx) =>
    Effect.gen(function*() {
      const form = yield* accountForm(ctx)
      yield* promise(() => login(ctx.identity, form.s.user))
      const list = yield* promise(() =>
        fetch(`${ctx.identity}${API}/auth/sessions`, { headers: { authorization: `Bearer ${form.s.accessToken}` } })
          .then((r) => r.json() as Promise<any>)
      )
      const other = (list.data.items as Array<{ id: string; current: boolean }>).find((i) => !i.current)!
      return [
        formTo("/ui/account/sessions/end", { ...form.fields, id: other.id }, "success", { cookie: form.cookie }),
        formTo("/ui/account/sessions/end", { ...form.fields, csrf: "forged", id: other.id }, 403, {
          cookie: form.cookie
        })
      ]
    }),
  "recoveryPages.recoveryPage": () => Effect.succeed([plain("GET", "/ui/password/forgot")]),
  "recoveryPages.recoverySendCode": (ctx) =>
    Effect.map(pageForm(ctx, `${API}/ui/password/forgot`), (form) => [
      formTo("/ui/password/forgot/send-code", { ...form.fields, email: freshEmail("recover") }, "success", {
        cookie: form.cookie
      }),
      formTo("/ui/password/forgot/send-code", { ...form.fields, csrf: "forged" }, 403, { cookie: form.cookie })
    ]),
  "recoveryPages.submitRecovery": (ctx) =>
    Effect.gen(function*() {
      const user = yield* createUser()
      const form = yield* pageForm(ctx, `${API}/ui/password/forgot`)
      const html = yield* promise(() =>
        fetch(`${ctx.identity}${API}/ui/password/forgot/send-code`, {
          method: "POST",
          headers: { cookie: form.cookie, "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ ...form.fields, email: user.email }).toString()
        }).then((r) => r.text())
      )
      const code = yield* mailedCode(ctx, user.email)
      const fields = {
        csrf: hiddenValue(html, "csrf"),
        pending: hiddenValue(html, "pending"),
        email: user.email,
        code,
        password: "a long enough new password"
      }
      return [
        formTo("/ui/password/reset", { ...fields, password: "" }, 400, { cookie: form.cookie }),
        formTo("/ui/password/reset", fields, "success", { cookie: form.cookie })
      ]
    }),
  "twoFactorPages.twoFactorPage": (ctx) =>
    Effect.map(signIn(ctx.identity), (s) => [
      plain("GET", "/ui/account/two-factor", "success", { cookie: s.cookie }),
      plain("GET", "/ui/account/two-factor", 302)
    ]),
  "twoFactorPages.submitTwoFactor": (ctx) =>
    Effect.map(accountForm(ctx, `${API}/ui/account/two-factor`), (form) => [
      formTo("/ui/account/two-factor", { ...form.fields, action: "restart" }, "success", { cookie: form.cookie }),
      formTo("/ui/account/two-factor", { ...form.fields, csrf: "forged", action: "restart" }, 403, {
        cookie: form.cookie
      })
    ]),
  "dev.mailbox": () => Effect.succeed([plain("GET", `/dev/mailbox?to=${encodeURIComponent("nobody@example.com")}`)]),
  "dev.mailboxPage": () => Effect.succeed([plain("GET", "/ui/dev/mailbox")])
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

/** A declaration to check the checker with: a JSON record, a 304, a redirect and an HTML error. */
class CheckerApi extends HttpApi.make("checker").add(
  HttpApiGroup.make("probe")
    .add(
      HttpApiEndpoint.get("record", "/record", {
        success: [Schema.Struct({ a: Schema.String, n: Schema.optionalKey(Schema.Number) }), HttpApiSchema.Empty(304)],
        error: Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/html" }), HttpApiSchema.status(404))
      })
    )
    .add(HttpApiEndpoint.get("redirect", "/redirect", { success: HttpApiSchema.Empty(302) }))
) {}

const answer = (status: number, text: string, headers: Record<string, string> = {}): ContractAnswer => ({
  status,
  headers: new Headers(headers),
  bytes: new TextEncoder().encode(text),
  text
})

describe("every answer decodes with the schema its route declares (docs/api-contract.md)", () => {
  it("both documents promise `additionalProperties: false` on every object with members, as the check assumes", () => {
    const open: Array<string> = []
    let objects = 0
    const walk = (node: unknown, at: string): void => {
      if (Array.isArray(node)) return node.forEach((n, i) => walk(n, `${at}/${i}`))
      if (typeof node !== "object" || node === null) return
      const o = node as Record<string, unknown>
      if (o.type === "object" && o.properties !== undefined) {
        objects++
        if (o.additionalProperties !== false) open.push(at)
      }
      for (const [k, v] of Object.entries(o)) walk(v, `${at}/${k}`)
    }
    walk(OpenApi.fromApi(CatalogApiDocumented), "catalog")
    walk(OpenApi.fromApi(IdentityApi), "identity")
    expect(objects).toBeGreaterThan(100)
    expect(open).toEqual([])
  })

  it("the check refuses undeclared members and statuses, bodies where none is declared, and tells bytes from values", () => {
    const [record, redirect] = contractRoutes(CheckerApi)
    const json = { "content-type": "application/json" }
    const verdict = (route: ContractRoute, a: ContractAnswer) => {
      const v = check(route, a)
      return { mismatches: v.mismatches.length, canonical: v.canonical._tag }
    }
    expect(verdict(record!, answer(200, "{\"a\":\"x\",\"n\":1}", json))).toEqual({ mismatches: 0, canonical: "Bytes" })
    expect(verdict(record!, answer(200, "{\"a\" : \"x\"}", json))).toEqual({ mismatches: 0, canonical: "Structure" })
    expect(check(record!, answer(200, "{\"n\":1,\"a\":\"x\"}", json)).canonical).toMatchObject({ how: "order" })
    // An undeclared member (`additionalProperties: false`), a missing one, another content type.
    expect(verdict(record!, answer(200, "{\"a\":\"x\",\"b\":1}", json)).mismatches).toBe(1)
    expect(verdict(record!, answer(200, "{}", json)).mismatches).toBe(1)
    expect(verdict(record!, answer(200, "{\"a\":\"x\"}", { "content-type": "text/plain" })).mismatches).toBe(1)
    expect(verdict(record!, answer(418, "", {})).mismatches).toBe(1)
    expect(verdict(record!, answer(304, "", {})).mismatches).toBe(0)
    expect(verdict(record!, answer(304, "{}", json)).mismatches).toBe(1)
    expect(verdict(record!, answer(404, "<p>no</p>", { "content-type": "text/html; charset=utf-8" })).mismatches).toBe(
      0
    )
    expect(verdict(record!, answer(404, "{}", json)).mismatches).toBe(1)
    expect(verdict(redirect!, answer(302, "", { location: "https://example.com/" })).mismatches).toBe(0)
    expect(verdict(redirect!, answer(302, "", {})).mismatches).toBe(1)
  })

  it("every route of both APIs has requests in this file", () => {
    expect(catalogRoutes.length).toBeGreaterThanOrEqual(40)
    expect(identityRoutes.length).toBeGreaterThanOrEqual(50)
    expect(
      unlisted(catalogRoutes, catalogProbes),
      `catalog routes missing from catalogProbes in ${import.meta.filename}`
    )
      .toEqual([])
    expect(
      unlisted(identityRoutes, identityProbes),
      `identity routes missing from identityProbes in ${import.meta.filename}`
    )
      .toEqual([])
    const keys = new Set([...catalogRoutes, ...identityRoutes].map((r) => r.key))
    const stale = [...Object.keys(knownMismatches), ...Object.keys(notByteCanonical)]
      .filter((k) => !keys.has(k.split(" ")[0]!))
    expect(stale, "table entries naming no route").toEqual([])
  })

  it.layer(
    ClaimsFixtureLive({ works: 120, config: { CATALOG_QUOTA_CLAIMS: "100000", CATALOG_QUOTA_DECISIONS: "100000" } }),
    serverLayerOptions("180 seconds")
  )((it) => {
    for (const route of catalogRoutes) {
      it.effect(`catalog ${route.method} ${route.path} (${route.key})`, () =>
        Effect.gen(function*() {
          const f = yield* ClaimsFixture
          const sql = yield* SqlClient.SqlClient
          const read = yield* f.makeKeyWithLimit("site_a", ["catalog:read"], null, "nsfw")
          const make = catalogProbes[route.key]
          if (make === undefined) return yield* Effect.die(new Error(`${route.key} has no requests in catalogProbes`))
          const probes = yield* make({ f, read, sql })
          judge(route, yield* runProbes(route, f.base, probes))
        }))
    }
  })

  it.layer(IdentityTestEnv(), identityLayerOptions)((it) => {
    for (const route of identityRoutes) {
      it.effect(`identity ${route.method} ${route.path} (${route.key})`, () =>
        Effect.gen(function*() {
          const { identity } = yield* IdentityServers
          const client = yield* createClient()
          const make = identityProbes[route.key]
          if (make === undefined) return yield* Effect.die(new Error(`${route.key} has no requests in identityProbes`))
          const probes = yield* make({ identity, client })
          judge(route, yield* runProbes(route, identity, probes, identityExtra))
        }))
    }
  })
})
