/**
 * Handlers of the `recoveryPages` group (schema/Api/IdentityRecoveryPagesApi.ts): "Forgot your
 * password?", whose flow is `RecoveryPages` (this folder).
 */
import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { IdentityApi } from "../../../../schema/Api/IdentityApi.js"
import { runToCompletion } from "../../../platform/HttpListener.js"
import { RecoveryPages } from "./RecoveryPages.js"

export const HttpRecoveryPagesLive = HttpApiBuilder.group(
  IdentityApi,
  "recoveryPages",
  (handlers) =>
    Effect.gen(function*() {
      const recovery = yield* RecoveryPages
      return handlers
        .handle("recoveryPage", ({ query, request }) => recovery.show(request, query), runToCompletion)
        .handle("recoverySendCode", ({ payload, request }) => recovery.sendCode(request, payload), runToCompletion)
        .handle("submitRecovery", ({ payload, request }) => recovery.reset(request, payload), runToCompletion)
    })
).pipe(Layer.provide(RecoveryPages.layer))
