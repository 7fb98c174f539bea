/**
 * The development mailbox's page: the outbox read back as HTML, shown only where the mailbox is
 * enabled (src/identity/mail/MailConfig.ts).
 */
import { html } from "../shared/Html.js"
import type { PageContext } from "../shared/Layout.js"
import { layout } from "../shared/Layout.js"

export interface MailboxLine {
  readonly to: string
  readonly subject: string
  readonly text: string
  readonly html: string | null
  readonly createdAt: string
}

/**
 * The mailbox page of the `dev` group (src/identity/http/DevHttp.ts). Bodies are shown as text, the
 * HTML alternative as its source: nothing of a message is rendered as markup of this page.
 */
export const devMailboxPage = (ctx: PageContext, input: {
  readonly to: string
  readonly messages: ReadonlyArray<MailboxLine>
}): string =>
  layout(
    ctx,
    "Development mailbox",
    html`<h1>Development mailbox</h1>
<p class="muted">What this server queued for mailing, oldest first. Shown only in development.</p>
<form method="get" action="${ctx.basePath}/ui/dev/mailbox">
<p><label for="to">Address</label>
<input id="to" name="to" type="email" value="${input.to}"></p>
<p><button type="submit">Show</button></p>
</form>
${
      input.messages.length === 0
        ? html`<p>No messages${input.to === "" ? "" : html` for <strong>${input.to}</strong>`}.</p>`
        : input.messages.map((message) =>
          html`<article class="mail">
<h2>${message.subject}</h2>
<p class="muted">To ${message.to}, <time datetime="${message.createdAt}">${message.createdAt}</time></p>
<pre>${message.text}</pre>
${
            message.html === null
              ? ""
              : html`<details><summary>HTML version</summary><pre>${message.html}</pre></details>`
          }
</article>
`
        )
    }`
  )
