/**
 * The provider's pages (docs/decisions.md, "Identity: pages"): plain server-rendered HTML, no
 * script, one stylesheet. Accessibility: `lang`, one `h1` per page, every input labelled, errors
 * announced (`role="alert"`), visible focus, works without CSS.
 */
import { html } from "./Html.js"
import type { Html } from "./Html.js"

export interface PageContext {
  /** The issuer's path, `/api/v1`: forms post under it so the cookies (path-scoped) are sent. */
  readonly basePath: string
}

/** The frame of every page: one stylesheet, no script. */
export const layout = (ctx: PageContext, title: string, body: Html): string =>
  html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${title} · shiori</title>
<link rel="stylesheet" href="${ctx.basePath}/ui/style.css">
</head>
<body>
<main class="card">
${body}
</main>
</body>
</html>
`.value

const alert = (message: string | undefined) =>
  message === undefined ? "" : html`<p class="alert" role="alert">${message}</p>`

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

export const messagePage = (ctx: PageContext, input: {
  readonly title: string
  readonly message: string
  readonly link?: { readonly href: string; readonly text: string } | undefined
}): string =>
  layout(
    ctx,
    input.title,
    html`<h1>${input.title}</h1>
<p>${input.message}</p>
${input.link === undefined ? "" : html`<p><a href="${input.link.href}">${input.link.text}</a></p>`}`
  )

/** The error page for requests that must not redirect (RFC 6749 section 4.1.2.1): unknown client, bad redirect_uri. */
export const errorPage = (ctx: PageContext, input: {
  readonly title: string
  readonly message: string
  readonly code: number
}): string =>
  layout(
    ctx,
    input.title,
    html`<h1>${input.title}</h1>
<p role="alert">${input.message}</p>
<p class="muted">Error code ${input.code}. If you followed a link from another site, tell that site; you can close this page.</p>`
  )

export interface MailboxLine {
  readonly to: string
  readonly subject: string
  readonly text: string
  readonly html: string | null
  readonly createdAt: string
}

/**
 * The development mailbox (src/identity/http/DevHttp.ts). Bodies are shown as text, the HTML
 * alternative as its source: nothing of a message is rendered as markup of this page.
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

export const STYLESHEET = `:root { color-scheme: light dark; font-family: system-ui, sans-serif; line-height: 1.5; }
body { margin: 0; padding: 2rem 1rem; background: Canvas; color: CanvasText; }
.card { max-width: 28rem; margin: 0 auto; padding: 1.5rem 2rem; border: 1px solid GrayText; border-radius: 0.75rem; }
h1 { font-size: 1.5rem; margin-top: 0; }
h2 { font-size: 1.1rem; }
label { display: block; font-weight: 600; margin-bottom: 0.25rem; }
input[type=email], input[type=password], input[type=text] { width: 100%; box-sizing: border-box; padding: 0.5rem; font-size: 1rem; }
button, .button { display: inline-block; padding: 0.5rem 1.25rem; font-size: 1rem; border-radius: 0.4rem;
  border: 1px solid #1d4ed8; background: #1d4ed8; color: #fff; cursor: pointer; text-decoration: none; }
button.secondary, .button.secondary { background: transparent; color: inherit; border-color: GrayText; }
:focus-visible { outline: 3px solid #f59e0b; outline-offset: 2px; }
.alert { border-left: 4px solid #b91c1c; padding: 0.5rem 0.75rem; background: rgba(185, 28, 28, 0.08); }
.actions { display: flex; gap: 0.75rem; }
.scopes { padding-left: 1.25rem; }
.scope { font-family: ui-monospace, monospace; font-size: 0.9em; }
.logo { display: block; margin-bottom: 1rem; border-radius: 0.5rem; }
.muted { color: GrayText; font-size: 0.9rem; }
.mail { border-top: 1px solid GrayText; }
.mail pre { white-space: pre-wrap; overflow-wrap: anywhere; }
textarea { width: 100%; box-sizing: border-box; padding: 0.5rem; font-size: 1rem; font-family: inherit; }
.field-error { display: block; color: #b91c1c; font-size: 0.9rem; }
.notice { border-left: 4px solid #15803d; padding: 0.5rem 0.75rem; background: rgba(21, 128, 61, 0.08); }
.sessions { list-style: none; padding: 0; }
.sessions li { display: grid; gap: 0.25rem; padding: 0.5rem 0; border-top: 1px solid GrayText; }
section + section { margin-top: 1.5rem; }
.avatar { border-radius: 50%; }
input[type=file] { display: block; margin-bottom: 0.25rem; }
.qr { margin: 0 0 1rem; }
.qr svg { display: block; width: 12rem; height: 12rem; }
.secret { display: block; margin-top: 0.5rem; font-size: 1.05rem; overflow-wrap: anywhere; }
.codes { columns: 2; font-family: ui-monospace, monospace; }
`
