/**
 * Handlers of the `pages` group (schema/Api/IdentityPagesApi.ts): the provider's sign-in, consent
 * and logout pages and their stylesheet (docs/decisions.md, "Identity: pages"). Each calls one
 * service: `SignIn` and `SignOut` (this folder), `Consent` (src/identity/pages/consent/).
 */
import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { IdentityApi } from "../../../../schema/Api/IdentityApi.js"
import { runToCompletion } from "../../../platform/HttpListener.js"
import { Consent } from "../consent/Consent.js"
import { SignIn } from "./SignIn.js"
import { SignOut } from "./SignOut.js"

export const HttpPagesLive = HttpApiBuilder.group(IdentityApi, "pages", (handlers) =>
  Effect.gen(function*() {
    const signIn = yield* SignIn
    const signOut = yield* SignOut
    const consent = yield* Consent
    return handlers
      .handle("stylesheet", () => Effect.succeed(signIn.stylesheet()), runToCompletion)
      .handle("loginPage", ({ query, request }) => signIn.showForm(request, query), runToCompletion)
      .handle("submitLogin", ({ payload, request }) => signIn.submit(request, payload), runToCompletion)
      .handle("consentPage", ({ query, request }) => consent.show(request, query), runToCompletion)
      .handle("submitConsent", ({ payload, request }) => consent.decide(request, payload), runToCompletion)
      .handle("logoutPage", ({ query, request }) => signOut.showForm(request, query), runToCompletion)
      .handle("submitLogout", ({ payload, request }) => signOut.submit(request, payload), runToCompletion)
  })).pipe(Layer.provide([SignIn.layer, SignOut.layer, Consent.layer]))
