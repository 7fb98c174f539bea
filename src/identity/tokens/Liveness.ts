/**
 * The second half of accepting an access token: is what it belongs to still alive? Client tokens
 * carry their refresh family (`fid`); sign-in tokens carry their session (`sid`). A revoked family
 * (reuse, code replay, RFC 7009 revocation, logout, ban) or an ended session makes its access
 * tokens dead before `exp` (docs/decisions.md, "Identity: tokens and sessions"). A token with
 * neither claim was not minted here.
 *
 * `TokenLiveness` asks the database every time (userinfo, authorize, the provider's own endpoints);
 * `cachedLiveness` remembers "alive" for a few seconds and "dead" for good, for the catalog's hot
 * path. Either way a revoked family stops working within the cache time, well inside the 900 s
 * token lifetime.
 */
import { Clock, Config, Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { cacheCounters } from "../../platform/Metrics.js"
import { userAlongside } from "../users/Users.js"

export interface LivenessClaims {
  readonly fid?: string | undefined
  readonly sid?: string | undefined
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export interface LivenessCheck {
  readonly isLive: (claims: LivenessClaims) => Effect.Effect<boolean>
}

export class TokenLiveness extends Context.Service<TokenLiveness>()("identity/TokenLiveness", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const withUser = userAlongside(sql)
    const firstLive = withUser.first({})
    const isLive = Effect.fn("TokenLiveness.isLive")(function*(claims: LivenessClaims) {
      if (claims.fid !== undefined) {
        if (!UUID.test(claims.fid)) return false
        const rows = yield* sql<{ live: boolean }>`
          SELECT (f.revoked_at IS NULL AND NOT u.banned) AS live
          FROM refresh_families f JOIN users u ON u.id = f.user_id
          WHERE f.id = ${claims.fid}::uuid
        `.pipe(Effect.orDie)
        return rows[0]?.live === true
      }
      if (claims.sid !== undefined) {
        if (!UUID.test(claims.sid)) return false
        const rows = yield* sql<{ live: boolean }>`
          SELECT (s.ended_at IS NULL AND s.expires_at > now() AND NOT u.banned) AS live
          FROM sessions s JOIN users u ON u.id = s.user_id
          WHERE s.sid = ${claims.sid}::uuid
        `.pipe(Effect.orDie)
        return rows[0]?.live === true
      }
      return false
    })

    /**
     * `isLive` and the token's user with their roles on `site`, in one statement (userinfo). None
     * when the family or session is dead, unknown, or its user banned.
     */
    const liveUser = Effect.fn("TokenLiveness.liveUser")(function*(claims: LivenessClaims, site: string | undefined) {
      const holder = claims.fid !== undefined && UUID.test(claims.fid)
        ? sql`
            SELECT f.user_id FROM refresh_families f WHERE f.id = ${claims.fid}::uuid AND f.revoked_at IS NULL
          `
        : claims.fid === undefined && claims.sid !== undefined && UUID.test(claims.sid)
        ? sql`
            SELECT s.user_id FROM sessions s
            WHERE s.sid = ${claims.sid}::uuid AND s.ended_at IS NULL AND s.expires_at > now()
          `
        : undefined
      if (holder === undefined) return Option.none()
      const live = yield* sql`
        SELECT ${withUser.columns}, ${withUser.siteRoles("u.id", site ?? null)}
        FROM (${holder}) AS holder JOIN users u ON u.id = holder.user_id
        WHERE NOT u.banned
      `.pipe(Effect.flatMap(firstLive), Effect.orDie)
      return Option.map(live, ({ siteRoles, user }) => ({ user, siteRoles }))
    })
    return { isLive, liveUser } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}

const CACHE_MAX = 50_000

/** `check` behind a cache: "alive" for `ttlMillis`, "dead" until evicted by size (it never revives). */
export const cachedLiveness = (check: LivenessCheck, ttlMillis: number): LivenessCheck => {
  const cache = new Map<string, { readonly live: boolean; readonly expires: number }>()
  const counted = cacheCounters("identity_token_liveness")
  return {
    isLive: (claims) =>
      Effect.gen(function*() {
        const key = claims.fid !== undefined ? `f:${claims.fid}` : claims.sid !== undefined ? `s:${claims.sid}` : ""
        if (key === "") return false
        const now = yield* Clock.currentTimeMillis
        const cached = cache.get(key)
        if (cached !== undefined && cached.expires > now) {
          counted.hit()
          return cached.live
        }
        counted.miss()
        const live = yield* check.isLive(claims)
        if (cache.size >= CACHE_MAX) cache.clear()
        cache.set(key, { live, expires: live ? now + ttlMillis : Number.POSITIVE_INFINITY })
        return live
      })
  }
}

/** How long the catalog trusts "alive" (`IDENTITY_REVOCATION_CACHE_SECONDS`, default 5). */
export const revocationCacheMillis = Config.Number("IDENTITY_REVOCATION_CACHE_SECONDS").pipe(
  Config.withDefault(5),
  Config.map((seconds) => Math.max(0, seconds) * 1000)
)
