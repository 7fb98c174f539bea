/**
 * Development aids of the identity provider: the mailbox that shows what the provider mailed
 * (schema/Identity/DevMailbox.ts). Enabled by `SHIORI_DEV_MAILBOX`, or by default outside production
 * when no `SMTP_URL` is set (src/identity/mail/MailConfig.ts); otherwise both paths answer 404 like an
 * unknown path. No authentication: never enable it where others can reach the server.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { DevMailboxParams, DevMailboxResponse } from "../Identity/DevMailbox.js"
import { envelopeError, htmlError, HtmlPage } from "./IdentityErrors.js"

export class IdentityDevApi extends HttpApiGroup.make("dev")
  .add(
    HttpApiEndpoint.get("mailbox", "/api/v1/dev/mailbox", {
      query: DevMailboxParams,
      success: DevMailboxResponse,
      error: envelopeError(404, "40401: the development mailbox is not enabled on this server.")
    })
      .annotate(OpenApi.Summary, "Development mailbox")
      .annotate(
        OpenApi.Description,
        "The messages the provider queued for `to` (verification codes and the like), oldest first, sent or not: " +
          "`{code: 0, message, data: {items: [{to, subject, text, html?, created_at}]}}`. Development only."
      )
  )
  .add(
    HttpApiEndpoint.get("mailboxPage", "/api/v1/ui/dev/mailbox", {
      query: DevMailboxParams,
      success: HtmlPage,
      error: htmlError(404, "The development mailbox is not enabled on this server.")
    })
      .annotate(OpenApi.Summary, "Development mailbox (page)")
      .annotate(OpenApi.Description, "The same messages as an HTML page, with a form to choose the address.")
  )
  .annotate(OpenApi.Title, "Development")
  .annotate(OpenApi.Description, "Development aids; 404 unless enabled.")
{}
