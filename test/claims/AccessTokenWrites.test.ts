/**
 * An identity access token as a writer (docs/writing.md, "Who may write"): its `uid` is the
 * actor, its client's site the tenant, and idempotency keys belong to the client and user, so a new
 * token after a refresh replays what the previous one wrote.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import * as Http from "node:http"
import type * as Net from "node:net"
import { DEFAULT_CATALOG_AUDIENCE, DEFAULT_ISSUER } from "../../src/identity/tokens/Tokens.js"
import { ClaimsFixture, ClaimsFixtureLive } from "../support/Claims.js"
import { signWithProviderKey } from "../support/IdentityKeys.js"
import { serverLayerOptions, TestServers } from "../support/TestServers.js"

/**
 * The catalog fetches the provider's JWKS from `IDENTITY_JWKS_URL`, fixed before the test servers
 * (and their ports) exist: this relay answers it with the JWKS of the identity server the fixture
 * started, once the test has told it where that is.
 */
let identityUrl: string | undefined
const relay = Http.createServer((_req, res) => {
  if (identityUrl === undefined) {
    res.writeHead(503).end()
    return
  }
  fetch(`${identityUrl}/api/v1/oauth/jwks`).then(async (answer) => {
    res.writeHead(answer.status, { "content-type": "application/json" }).end(await answer.text())
  }, () => res.writeHead(502).end())
})
await new Promise<void>((resolve) => relay.listen(0, "127.0.0.1", resolve))
const jwksUrl = `http://127.0.0.1:${(relay.address() as Net.AddressInfo).port}/jwks`

/** A live sign-in session for `userId` and an access token of client `portal` (site `site_a`) bound to it. */
const tokenFor = (userId: number, scope: string) =>
  Effect.gen(function*() {
    identityUrl = (yield* TestServers).identity
    const sql = yield* SqlClient.SqlClient
    const [session] = yield* sql<{ sid: string }>`
      INSERT INTO sessions (id, user_id, auth_time, expires_at)
      VALUES (${`s-${crypto.randomUUID()}`}, ${userId}, now(), now() + interval '1 day')
      RETURNING sid::text AS sid`.pipe(Effect.orDie)
    const now = Math.floor(Date.now() / 1000)
    return yield* signWithProviderKey({
      iss: DEFAULT_ISSUER,
      sub: crypto.randomUUID(),
      aud: DEFAULT_CATALOG_AUDIENCE,
      client_id: "portal",
      scope,
      jti: crypto.randomUUID(),
      iat: now,
      exp: now + 900,
      uid: userId,
      roles: [],
      site_roles: [],
      site: "site_a",
      sid: session!.sid
    })
  })

describe("writes with identity access tokens (docs/writing.md, \"Who may write\")", () => {
  it.layer(ClaimsFixtureLive({ config: { IDENTITY_JWKS_URL: jwksUrl } }), serverLayerOptions())((it) => {
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
