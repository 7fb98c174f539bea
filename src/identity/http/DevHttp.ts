/**
 * Handlers of the `dev` group: the development mailbox (schema/Api/IdentityDevApi.ts), the outbox
 * read back (src/identity/mail/Mailer.ts) as the envelope and as a page. Where it is not enabled
 * (src/identity/mail/MailConfig.ts) both answer exactly what an unknown path answers.
 */
import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { IdentityApi } from "../../../schema/Api/IdentityApi.js"
import { DevMailboxMessage } from "../../../schema/Identity/DevMailbox.js"
import type { DevMailboxParams } from "../../../schema/Identity/DevMailbox.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import { MailConfig } from "../mail/MailConfig.js"
import { Mailer } from "../mail/Mailer.js"
import { devMailboxPage } from "../pages/dev/View.js"
import { IdentityConfig } from "../shared/IdentityConfig.js"
import { routeNotFound } from "./ErrorMiddleware.js"
import { envelopeAnswer, page } from "./Responses.js"

export const HttpDevLive = HttpApiBuilder.group(IdentityApi, "dev", (handlers) =>
  Effect.gen(function*() {
    const config = yield* IdentityConfig
    const mail = yield* MailConfig
    const mailer = yield* Mailer
    const ctx = { basePath: config.basePath }

    /**
     * `answer` where the mailbox is enabled, elsewhere the unknown-path answer, the error middleware's
     * response (ErrorMiddleware.ts), so that nothing tells the route apart from no route.
     */
    const enabled = <A, R>(answer: Effect.Effect<A, never, R>) =>
      mail.devMailbox ? answer : Effect.map(HttpServerRequest.HttpServerRequest, routeNotFound)

    return handlers
      .handle("mailbox", ({ query }: { readonly query: DevMailboxParams }) =>
        enabled(Effect.flatMap(mailer.mailbox(query.to), (messages) =>
          envelopeAnswer({
            items: messages.map((message) =>
              new DevMailboxMessage({
                to: message.to,
                subject: message.subject,
                text: message.text,
                ...(message.html === null ? {} : { html: message.html }),
                created_at: message.createdAt.toISOString()
              })
            )
          }))), runToCompletion)
      .handle("mailboxPage", ({ query }: { readonly query: DevMailboxParams }) =>
        enabled(Effect.map(mailer.mailbox(query.to), (messages) =>
          page(devMailboxPage(ctx, {
            to: query.to ?? "",
            messages: messages.map((message) => ({
              to: message.to,
              subject: message.subject,
              text: message.text,
              html: message.html,
              createdAt: message.createdAt.toISOString()
            }))
          })))), runToCompletion)
  }))
