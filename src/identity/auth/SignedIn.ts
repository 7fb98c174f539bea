/**
 * Who calls a self-service envelope endpoint: the end user behind `Authorization: Bearer` (a token
 * from the provider's own sign-in or registration), refused with the token codes otherwise
 * (10001 missing, 10002 invalid or its session ended, 10003 expired; 401 with a Bearer challenge,
 * RFC 6750 section 3), or 403 40302 when its account was banned. Sensitive changes also need a recent sign-in (RFC 9470 step-up).
 */
import { Effect, Option } from "effect"
import { HttpServerRequest } from "effect/http"
import { Sessions } from "../sessions/Sessions.js"
import { refused } from "../shared/Refused.js"
import type { EndUser } from "./EndUsers.js"
import { bearerToken, EndUsers } from "./EndUsers.js"

/** Changing the email, the password or the second factor needs a sign-in younger than this. */
export const RECENT_SIGN_IN_SECONDS = 600

const challenge = `Bearer realm="shiori"`

/** The end user of this request, from its Bearer token only (a cookie alone never authorizes an API call). */
export const signedInUser = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const endUsers = yield* EndUsers
  const token = bearerToken(request)
  if (Option.isNone(token)) return yield* refused("TOKEN_MISSING", { "www-authenticate": challenge })
  return yield* endUsers.fromBearer(token.value).pipe(
    Effect.catchTag(
      "BearerRejected",
      (rejected) =>
        rejected.reason === "banned"
          ? refused("ACCOUNT_BANNED")
          : refused(rejected.reason === "expired" ? "TOKEN_EXPIRED" : "TOKEN_INVALID", {
            "www-authenticate": `${challenge}, error="invalid_token"`
          })
    )
  )
})

/** Fails with 10016 unless the user's session signed in within the last 10 minutes. */
export const requireRecentSignIn = (endUser: EndUser) =>
  Effect.flatMap(Sessions, (sessions) => sessions.signedInWithin(endUser.session.id, RECENT_SIGN_IN_SECONDS)).pipe(
    Effect.flatMap((recent) =>
      recent ? Effect.void : refused("REAUTHENTICATION_REQUIRED", {
        "www-authenticate": `${challenge}, error="insufficient_user_authentication", ` +
          `error_description="A more recent sign-in is required", max_age=${RECENT_SIGN_IN_SECONDS}`
      })
    )
  )
