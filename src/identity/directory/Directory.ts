/**
 * The application directory and the service-to-service user lookup (schema/Api/IdentityDirectoryApi.ts).
 *
 * - `clientInfo` and `ecosystem` are public: what a client shows of itself (name, logo, tagline,
 *   homepage), for any client and for the listed ones. The listing is read at most every
 *   `ECOSYSTEM_TTL` per process, so a flood of anonymous requests costs no database work.
 * - `usersBatch` and `usersSearch` answer a confidential client that authenticates with Basic
 *   credentials (src/identity/oauth/ClientAuthentication.ts `authenticateBasic`). A user's site roles
 *   are those at the calling client's site, as in its tokens; the email address is never answered
 *   (a search may match it exactly, which tells a confidential client only what it already knew).
 *   Banned users are answered like any other: a site still shows who wrote what it keeps, and the
 *   ban concerns signing in, not the account's existence.
 */
import { Cache, Context, Duration, Effect, Layer, Option } from "effect"
import {
  ClientInfo,
  DirectoryUser,
  Ecosystem,
  MAX_BATCH_IDS,
  SEARCH_DEFAULT_LIMIT,
  UserBatch,
  UserSearch
} from "../../../schema/Identity/Directory.js"
import { Subject, UserId } from "../../../schema/Identity/User.js"
import type { Client } from "../clients/Clients.js"
import { Clients } from "../clients/Clients.js"
import { authenticateBasic } from "../oauth/ClientAuthentication.js"
import { refused } from "../shared/Refused.js"
import type { DirectoryEntry } from "../users/Users.js"
import { Users } from "../users/Users.js"

const ECOSYSTEM_TTL = Duration.seconds(10)

const clientInfoOf = (client: Client) =>
  new ClientInfo({
    client_id: client.clientId,
    name: client.name,
    logo_url: client.logoUrl,
    tagline: client.tagline,
    homepage_url: client.homepageUrl
  })

const directoryUser = (entry: DirectoryEntry) =>
  DirectoryUser.make({
    id: UserId.make(entry.id),
    sub: Subject.make(entry.sub),
    name: entry.name,
    picture: entry.picture,
    roles: entry.roles,
    site_roles: entry.siteRoles
  })

export class Directory extends Context.Service<Directory>()("identity/Directory", {
  make: Effect.gen(function*() {
    const clients = yield* Clients
    const users = yield* Users

    const listing = yield* Cache.make({
      capacity: 1,
      timeToLive: ECOSYSTEM_TTL,
      lookup: (_: "listed") => clients.listed
    })

    const clientInfo = Effect.fn("Directory.clientInfo")(function*(clientId: string) {
      const client = yield* clients.find(clientId)
      if (Option.isNone(client)) return yield* refused("UNKNOWN_CLIENT")
      return clientInfoOf(client.value)
    })

    const ecosystem = Effect.fn("Directory.ecosystem")(function*() {
      return new Ecosystem({ items: (yield* Cache.get(listing, "listed")).map(clientInfoOf) })
    })

    /** The calling client, or the 401 (with its Basic challenge, RFC 7617 section 2) or 403. */
    const caller = (authorization: string | undefined) =>
      authenticateBasic(clients, authorization).pipe(
        Effect.mapError((e) =>
          e.reason === "public_client"
            ? refused("CLIENT_NOT_PERMITTED")
            : refused("CLIENT_AUTHENTICATION_FAILED", { "www-authenticate": `Basic realm="shiori", charset="UTF-8"` })
        )
      )

    /** `ids` as the schema let it through (comma-separated decimal ids); a repeated id counts once. */
    const usersBatch = Effect.fn("Directory.usersBatch")(function*(authorization: string | undefined, ids: string) {
      const client = yield* caller(authorization)
      const wanted = [...new Set(ids.split(",").map(Number))]
      if (wanted.length > MAX_BATCH_IDS || !wanted.every(Number.isSafeInteger)) {
        return yield* refused("INVALID_REQUEST")
      }
      const found = new Map((yield* users.directoryByIds(wanted, client.site)).map((entry) => [entry.id, entry]))
      return new UserBatch({
        items: wanted.flatMap((id) => {
          const entry = found.get(id)
          return entry === undefined ? [] : [directoryUser(entry)]
        }),
        missing: wanted.filter((id) => !found.has(id))
      })
    })

    const usersSearch = Effect.fn("Directory.usersSearch")(
      function*(authorization: string | undefined, query: string, limit: number | undefined) {
        const client = yield* caller(authorization)
        const entries = yield* users.directorySearch(query, client.site, limit ?? SEARCH_DEFAULT_LIMIT)
        return new UserSearch({ items: entries.map(directoryUser) })
      }
    )

    return { clientInfo, ecosystem, usersBatch, usersSearch } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
