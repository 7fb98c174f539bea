/**
 * The consent page (docs/decisions.md, "Identity: pages"): the client's name and logo, the scopes it
 * asks for, Allow and Deny.
 */
import { html } from "../shared/Html.js"
import type { PageContext } from "../shared/Layout.js"
import { layout } from "../shared/Layout.js"

export interface ScopeLine {
  readonly scope: string
  readonly description: string
}

export const consentPage = (ctx: PageContext, input: {
  readonly csrf: string
  readonly request: string
  readonly clientName: string
  readonly logoUrl: string
  readonly userEmail: string
  readonly scopes: ReadonlyArray<ScopeLine>
}): string =>
  layout(
    ctx,
    `Allow ${input.clientName}?`,
    html`${
      input.logoUrl === ""
        ? ""
        : html`<img class="logo" src="${input.logoUrl}" alt="${input.clientName} logo" width="64" height="64">`
    }
<h1>Allow <span class="client">${input.clientName}</span> to use your account?</h1>
<p>Signed in as <strong>${input.userEmail}</strong>.</p>
<h2 id="scopes-heading">${input.clientName} asks to:</h2>
<ul aria-labelledby="scopes-heading" class="scopes">
${input.scopes.map((line) => html`<li><span class="scope">${line.scope}</span> ${line.description}</li>\n`)}
</ul>
<form method="post" action="${ctx.basePath}/ui/consent">
<input type="hidden" name="csrf" value="${input.csrf}">
<input type="hidden" name="request" value="${input.request}">
<p class="actions">
<button type="submit" name="decision" value="approve">Allow</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button>
</p>
</form>`
  )
