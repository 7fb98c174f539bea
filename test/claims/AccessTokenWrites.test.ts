/**
 * An identity access token as a writer (docs/writing.md, "Who may write"): its `uid` is the
 * actor, its client's site the tenant, and idempotency keys belong to the client and user, so a new
 * token after a refresh replays what the previous one wrote.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { ClaimsFixture, ClaimsFixtureLive, startJwksRelay } from "../support/Claims.js"
import { serverLayerOptions } from "../support/TestServers.js"

const relay = await startJwksRelay()

/** A live sign-in session for `userId` and an access token of client `portal` (site `site_a`) bound to it. */
const tokenFor = (userId: number, scope: string) => relay.accessToken({ userId, scope, site: "site_a" })

describe("writes with identity access tokens (docs/writing.md, \"Who may write\")", () => {
  it.layer(ClaimsFixtureLive({ config: { IDENTITY_JWKS_URL: relay.url } }), serverLayerOptions())((it) => {
    it.effect("the token's uid is the actor and its client's site the tenant; a refreshed token replays (docs/writing.md, \"Who may write\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const userId = yield* f.makeUser([])
        const work = f.works[5]!
        const first = yield* tokenFor(userId, "openid catalog:read claims:write")
        const created = yield* f.call("POST", "/v2/claims", {
          key: first,
          body: { work_id: work },
          headers: { "idempotency-key": "token-claim" }
        })
        expect(created.status, JSON.stringify(created.body)).toBe(201)
        expect(created.body.site).toBe("site_a")
        expect(created.body.last_event.actor_uid).toBe(String(userId))
        expect(created.body.acted_count).toBe(1)

        // Another token of the same client and user (as after a refresh): the same key replays.
        const second = yield* tokenFor(userId, "openid catalog:read claims:write")
        const replayed = yield* f.call("POST", "/v2/claims", {
          key: second,
          body: { work_id: work },
          headers: { "idempotency-key": "token-claim" }
        })
        expect(replayed.status).toBe(201)
        expect(replayed.headers.get("idempotent-replayed")).toBe("true")
        expect(replayed.body).toEqual(created.body)

        // The site's API key user acts on the same tenant; another site's user does not.
        const released = yield* f.call("DELETE", `/v2/claims/${work}`, { key: f.otherSiteUser.key })
        expect(released.status).toBe(403)
        expect(released.body.code).toBe("TENANT_MISMATCH")
        const ownRelease = yield* f.call("DELETE", `/v2/claims/${work}`, { key: second })
        expect(ownRelease.status, JSON.stringify(ownRelease.body)).toBe(200)
        expect(ownRelease.body.state).toBe("none")
      }))

    it.effect("a token without the write scope is 403 SCOPE_REQUIRED; moderation needs the role too (docs/writing.md, \"Who may write\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const userId = yield* f.makeUser([])
        const readOnly = yield* tokenFor(userId, "openid catalog:read")
        const refused = yield* f.call("POST", "/v2/claims", { key: readOnly, body: { work_id: f.works[6]! } })
        expect(refused.status).toBe(403)
        expect(refused.body.code).toBe("SCOPE_REQUIRED")
        const moderationScope = yield* tokenFor(userId, "openid catalog:read moderation")
        const queue = yield* f.call("GET", "/v2/moderation/claims", { key: moderationScope })
        expect(queue.status).toBe(403)
        expect(queue.body.code).toBe("PERMISSION_REQUIRED")
        // A role granted now applies to the token already issued (roles are read per request).
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE users SET roles = '{moderator}' WHERE id = ${userId}`.pipe(Effect.orDie)
        const allowed = yield* f.call("GET", "/v2/moderation/claims", { key: moderationScope })
        expect(allowed.status, JSON.stringify(allowed.body)).toBe(200)
      }))
  })
})
