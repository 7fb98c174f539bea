/**
 * Handlers of the `creator` group: the Bearer token's user (src/identity/auth/SignedIn.ts), then one
 * `CreatorApplications` method, answered in the envelope its endpoint declares
 * (schema/Api/IdentityCreatorApi.ts).
 *
 * `apply` reads its body itself (`handleRaw`): the declared payload documents the request, but a body
 * outside its bounds, or with a member it does not name, is 17004, not the decoder's generic 40001.
 * What is not JSON at all stays 40001; a body not sent as `application/json` never gets here (415,
 * ErrorMiddleware.ts).
 */
import { Effect, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { IdentityApi } from "../../../schema/Api/IdentityApi.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import { EndUsers } from "../auth/EndUsers.js"
import { signedInUser } from "../auth/SignedIn.js"
import { CreatorApplications } from "../creator/CreatorApplications.js"
import { answer, envelopeAnswer, refusal } from "./Responses.js"

export const HttpCreatorLive = HttpApiBuilder.group(IdentityApi, "creator", (handlers) =>
  Effect.gen(function*() {
    const applications = yield* CreatorApplications
    // The service the check uses per request, taken from this stack once.
    const signedIn = Effect.provideService(signedInUser, EndUsers, yield* EndUsers)

    return handlers
      .handleRaw("apply", ({ request }) =>
        Effect.gen(function*() {
          const { user } = yield* signedIn
          // A body that cannot be read is the error middleware's to answer: 413 when too large
          // (src/platform/BodyLimit.ts), 40001 when it is not JSON.
          const body = yield* Effect.orDie(request.json)
          return yield* envelopeAnswer(yield* applications.apply(user.id, body))
        }).pipe(Effect.catchTag("Refused", refusal)), runToCompletion)
      .handle("mine", () =>
        Effect.flatMap(signedIn, ({ user }) => applications.mine(user.id)).pipe(
          // The newest application, or (the user never applied) a success without a `data` member.
          Effect.flatMap((application) =>
            answer(
              Option.match(application, {
                onNone: () => ({ code: 0, message: "ok" }) as const,
                onSome: (data) => ({ code: 0, message: "ok", data }) as const
              }),
              { "cache-control": "no-store" }
            )
          ),
          Effect.catchTag("Refused", refusal)
        ), runToCompletion)
  }))
