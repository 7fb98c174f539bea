/**
 * Handlers of the `twoFactorPages` group (schema/Api/IdentityTwoFactorApi.ts): the second factor's
 * set-up page, whose flow is `TwoFactorPages` (this folder). The code step of a sign-in is the
 * sign-in page's (src/identity/pages/signin/SignIn.ts).
 */
import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { IdentityApi } from "../../../../schema/Api/IdentityApi.js"
import { runToCompletion } from "../../../platform/HttpListener.js"
import { TwoFactorPages } from "./TwoFactorPages.js"

export const HttpTwoFactorPagesLive = HttpApiBuilder.group(
  IdentityApi,
  "twoFactorPages",
  (handlers) =>
    Effect.gen(function*() {
      const pages = yield* TwoFactorPages
      return handlers
        .handle("twoFactorPage", ({ request }) => pages.show(request), runToCompletion)
        .handle("submitTwoFactor", ({ payload, request }) => pages.submit(request, payload), runToCompletion)
    })
).pipe(Layer.provide(TwoFactorPages.layer))
