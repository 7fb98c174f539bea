/**
 * Test support for edit proposals (docs/writing.md, "Edit proposals"): keys with the proposal scopes
 * for the claims fixture's people, and the calls of a proposal's life.
 */
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import type { Scope } from "../../schema/Annotations.js"
import type { ClaimsFixtureShape } from "./Claims.js"

export type Reply = Effect.Success<ReturnType<ClaimsFixtureShape["call"]>>

/** Every scope a proposal's life needs. */
export const proposalScopes: ReadonlyArray<Scope> = ["catalog:read", "catalog:write", "moderation"]

/** Keys with `proposalScopes` for the fixture's people (sfw unless `nsfw`). */
export const proposalKeys = (f: ClaimsFixtureShape, options: { readonly nsfw?: boolean } = {}) =>
  Effect.gen(function*() {
    const limit = options.nsfw === true ? "nsfw" : "sfw"
    const key = (site: string, userId: number) => f.makeKeyWithLimit(site, proposalScopes, userId, limit)
    return {
      /** A user of site_a. */
      site: yield* key("site_a", f.siteUser.id),
      /** Another user of site_a. */
      site2: yield* key("site_a", f.siteUser2.id),
      /** A user of site_b. */
      other: yield* key("site_b", f.otherSiteUser.id),
      /** A moderator (of mod_site). */
      moderator: yield* key("mod_site", f.moderator.id),
      /** An admin (of mod_site): a second moderator. */
      moderator2: yield* key("mod_site", f.moderator2.id)
    }
  })

export const expectStatus = (res: Reply, status: number) => {
  expect(res.status, JSON.stringify(res.body)).toBe(status)
  return res.body
}

export const expectProblemCode = (res: Reply, status: number, code: string) => {
  expect(res.status, JSON.stringify(res.body)).toBe(status)
  expect(res.headers.get("content-type")).toBe("application/problem+json")
  expect(res.body.code).toBe(code)
  return res.body
}

/** POST /v2/proposals. */
export const propose = (
  f: ClaimsFixtureShape,
  key: string,
  body: { entity_type: string; entity_id: string; patch: Record<string, unknown>; note?: string },
  headers: Record<string, string> = {}
) => f.call("POST", "/v2/proposals", { key, body, headers })

/** POST /v2/proposals/{id}/amendments with `If-Match`. */
export const amend = (
  f: ClaimsFixtureShape,
  key: string,
  id: string,
  etag: string,
  body: { set?: Record<string, unknown>; unset?: ReadonlyArray<string>; note?: string },
  headers: Record<string, string> = {}
) => f.call("POST", `/v2/proposals/${id}/amendments`, { key, body, headers: { "if-match": etag, ...headers } })

/** POST /v2/moderation/proposals/{id}/decisions with `If-Match`. */
export const decide = (
  f: ClaimsFixtureShape,
  key: string,
  id: string,
  etag: string,
  body: { decision: "merge" | "decline"; note?: string },
  headers: Record<string, string> = {}
) =>
  f.call("POST", `/v2/moderation/proposals/${id}/decisions`, { key, body, headers: { "if-match": etag, ...headers } })

/** Proposes `patch` on a work and merges it at once; answers the merged proposal. */
export const proposeAndMerge = (
  f: ClaimsFixtureShape,
  keys: { readonly site: string; readonly moderator: string },
  entity: { readonly type: string; readonly id: string },
  patch: Record<string, unknown>
) =>
  Effect.gen(function*() {
    const created = yield* propose(f, keys.site, { entity_type: entity.type, entity_id: entity.id, patch })
    expectStatus(created, 201)
    const merged = yield* decide(f, keys.moderator, created.body.id, created.headers.get("etag")!, {
      decision: "merge"
    })
    return expectStatus(merged, 200)
  })
