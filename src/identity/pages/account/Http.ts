/**
 * Handlers of the `accountPages` group (schema/Api/IdentityAccountPagesApi.ts): registration
 * (`Registration`) and the account page (`AccountPages`), both in this folder.
 */
import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { IdentityApi } from "../../../../schema/Api/IdentityApi.js"
import { runToCompletion } from "../../../platform/HttpListener.js"
import { AccountPages } from "./AccountPages.js"
import { Registration } from "./Registration.js"

export const HttpAccountPagesLive = HttpApiBuilder.group(
  IdentityApi,
  "accountPages",
  (handlers) =>
    Effect.gen(function*() {
      const registration = yield* Registration
      const account = yield* AccountPages
      return handlers
        .handle("registerPage", ({ query, request }) => registration.show(request, query), runToCompletion)
        .handle("registerSendCode", ({ payload, request }) => registration.sendCode(request, payload), runToCompletion)
        .handle("submitRegister", ({ payload, request }) => registration.submit(request, payload), runToCompletion)
        .handle("accountPage", ({ query, request }) => account.show(request, query), runToCompletion)
        .handle("saveProfile", ({ payload, request }) => account.saveProfile(request, payload), runToCompletion)
        // Multipart, read by `Avatars` itself (src/identity/account/Avatars.ts): raw.
        .handleRaw("uploadAvatarForm", ({ request }) => account.uploadAvatar(request), runToCompletion)
        .handle("sendEmailCodeForm", ({ payload, request }) => account.sendEmailCode(request, payload), runToCompletion)
        .handle("changeEmailForm", ({ payload, request }) => account.changeEmail(request, payload), runToCompletion)
        .handle(
          "changePasswordForm",
          ({ payload, request }) => account.changePassword(request, payload),
          runToCompletion
        )
        .handle("endSessionForm", ({ payload, request }) => account.endSession(request, payload), runToCompletion)
    })
).pipe(Layer.provide([Registration.layer, AccountPages.layer]))
