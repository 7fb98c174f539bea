/**
 * The sign-in and sign-out pages (docs/decisions.md, "Identity: pages"). The code step of a sign-in
 * with a second factor is src/identity/pages/twofactor/View.ts.
 */
import { alert } from "../shared/FormFields.js"
import { html } from "../shared/Html.js"
import type { PageContext } from "../shared/Layout.js"
import { layout } from "../shared/Layout.js"

export const loginPage = (ctx: PageContext, input: {
  readonly csrf: string
  readonly email: string
  readonly returnTo: string
  readonly error?: string | undefined
  /** A live session: offer to continue as this user instead (account selection). */
  readonly current?: { readonly email: string; readonly continueTo: string } | undefined
}): string =>
  layout(
    ctx,
    "Sign in",
    html`<h1>Sign in to shiori</h1>
${alert(input.error)}
${
      input.current === undefined ? "" : html`<section aria-labelledby="current-account">
<h2 id="current-account">Signed in</h2>
<p>You are signed in as <strong>${input.current.email}</strong>.</p>
<p><a class="button secondary" href="${input.current.continueTo}">Continue as ${input.current.email}</a></p>
<h2>Use another account</h2>
</section>`
    }
<form method="post" action="${ctx.basePath}/ui/login" novalidate>
<input type="hidden" name="csrf" value="${input.csrf}">
<input type="hidden" name="return_to" value="${input.returnTo}">
<p><label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${input.email}"${
      input.error !== undefined ? html` aria-invalid="true"` : ""
    }></p>
<p><label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required></p>
<p><button type="submit">Sign in</button></p>
</form>
<p class="muted"><a href="${ctx.basePath}/ui/password/forgot${
      input.returnTo === "" ? "" : html`?return_to=${encodeURIComponent(input.returnTo)}`
    }">Forgot your password?</a></p>
<p class="muted">New to shiori? <a href="${ctx.basePath}/ui/register${
      input.returnTo === "" ? "" : html`?return_to=${encodeURIComponent(input.returnTo)}`
    }">Create an account</a>.</p>`
  )

export const logoutPage = (ctx: PageContext, input: {
  readonly csrf: string
  readonly userEmail: string
  readonly clientName: string | undefined
  readonly clientId: string
  readonly redirect: string
  readonly state: string
}): string =>
  layout(
    ctx,
    "Sign out",
    html`<h1>Sign out of shiori?</h1>
<p>You are signed in as <strong>${input.userEmail}</strong>${
      input.clientName === undefined
        ? ""
        : html` and <span class="client">${input.clientName}</span> asks to sign you out`
    }.</p>
<form method="post" action="${ctx.basePath}/ui/logout">
<input type="hidden" name="csrf" value="${input.csrf}">
<input type="hidden" name="client_id" value="${input.clientId}">
<input type="hidden" name="redirect" value="${input.redirect}">
<input type="hidden" name="state" value="${input.state}">
<p class="actions">
<button type="submit" name="decision" value="logout">Sign out</button>
<button type="submit" name="decision" value="cancel" class="secondary">Stay signed in</button>
</p>
</form>`
  )
