/**
 * The frame every page of the provider shares (docs/decisions.md, "Identity: pages"): plain
 * server-rendered HTML, no script, one stylesheet. Accessibility: `lang`, one `h1` per page, every
 * input labelled, errors announced (`role="alert"`), visible focus, works without CSS. Each page's
 * own HTML is the `View.ts` of its folder (src/identity/pages/<feature>/); the error pages here are
 * also used by src/identity/http/, so nothing in this folder imports it.
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
