/**
 * Who the end user is on a request to the provider (docs/decisions.md, "Identity: protocol"): a
 * Bearer access token minted by the provider's own sign-in (`POST /auth/login`), or the session
 * cookie. Tokens issued to relying parties are not accepted here: a client holding a user's token
 * must not be able to mint codes for other clients with it.
 */
import { Context, Data, Effect, Layer, Option } from "effect"
import type { HttpServerRequest } from "effect/http"
import type { AccessTokenRejection } from "../../platform/IdentityPort.js"
import { FIRST_PARTY_CLIENT_ID } from "../clients/Clients.js"
import type { Session } from "../sessions/Sessions.js"
import { Sessions } from "../sessions/Sessions.js"
import { Tokens } from "../tokens/Tokens.js"
import type { User } from "../users/Users.js"
import { Users } from "../users/Users.js"

export interface EndUser {
  readonly user: User
  readonly session: Session
  readonly via: "bearer" | "cookie"
}

/**
 * A Bearer token was sent and is not acceptable; `expired` maps to envelope 10003, `banned` to 403
 * 40302, others to 10002.
 */
export class BearerRejected extends Data.TaggedError("BearerRejected")<{
  readonly reason: AccessTokenRejection | "not_first_party" | "session_ended" | "banned"
}> {}

/** `Authorization: Bearer <token>`: none without the header, "" when it is not a Bearer credential. */
export const bearerToken = (request: HttpServerRequest.HttpServerRequest): Option.Option<string> => {
  const header = request.headers.authorization
  if (header === undefined) return Option.none()
  const match = /^\s*bearer\s+(\S+)\s*$/i.exec(header)
  return Option.some(match ? match[1]! : "")
}

export class EndUsers extends Context.Service<EndUsers>()("identity/EndUsers", {
  make: Effect.gen(function*() {
    const tokens = yield* Tokens
    const sessions = yield* Sessions
    const users = yield* Users

    const withUser = (session: Session, via: EndUser["via"]) =>
      Effect.map(
        users.findById(session.userId),
        Option.flatMap((user) => user.banned ? Option.none() : Option.some<EndUser>({ user, session, via }))
      )

    /** The user behind a Bearer token from sign-in; fails when the token is not acceptable. */
    const fromBearer = Effect.fn("EndUsers.fromBearer")(function*(token: string) {
      const claims = yield* tokens.verifyAccessToken(token).pipe(
        Effect.mapError((rejected) => new BearerRejected({ reason: rejected.reason }))
      )
      if (claims.client_id !== FIRST_PARTY_CLIENT_ID || claims.sid === undefined) {
        return yield* new BearerRejected({ reason: "not_first_party" })
      }
      const session = yield* sessions.fromSid(claims.sid)
      if (Option.isNone(session) || session.value.userId !== claims.uid) {
        // A ban ends every session; its holder is told why (403), not merely that the token died.
        const owner = yield* users.findById(claims.uid)
        const banned = Option.isSome(owner) && owner.value.banned
        return yield* new BearerRejected({ reason: banned ? "banned" : "session_ended" })
      }
      const endUser = yield* withUser(session.value, "bearer")
      if (Option.isNone(endUser)) return yield* new BearerRejected({ reason: "session_ended" })
      return endUser.value
    })

    /**
     * The user of this request: a Bearer token wins over the cookie. None when neither is present (or
     * the cookie's session is over); fails when a Bearer token was sent and is not acceptable.
     */
    const resolve = Effect.fn("EndUsers.resolve")(function*(request: HttpServerRequest.HttpServerRequest) {
      const bearer = bearerToken(request)
      if (Option.isSome(bearer)) {
        if (bearer.value === "") return yield* new BearerRejected({ reason: "malformed" })
        return Option.some(yield* fromBearer(bearer.value))
      }
      const session = yield* sessions.fromRequest(request)
      if (Option.isNone(session)) return Option.none<EndUser>()
      return yield* withUser(session.value, "cookie")
    })

    /** The cookie's user only (the pages never take a Bearer token). */
    const fromCookie = Effect.fn("EndUsers.fromCookie")(function*(request: HttpServerRequest.HttpServerRequest) {
      const session = yield* sessions.fromRequest(request)
      if (Option.isNone(session)) return Option.none<EndUser>()
      return yield* withUser(session.value, "cookie")
    })

    return { resolve, fromBearer, fromCookie } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make).pipe(Layer.provide([Tokens.layer, Sessions.layer, Users.layer]))
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
}
