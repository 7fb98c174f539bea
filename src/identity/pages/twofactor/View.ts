/**
 * The second factor's pages (src/identity/pages/twofactor/, src/identity/pages/signin/): the code
 * step of a sign-in and the set-up page. Same rules as src/identity/pages/shared/Layout.ts: no
 * script, every input labelled, its hint and error tied to it with `aria-describedby`, errors
 * announced, everything reachable by keyboard (the recovery-code form sits in a `<details>`).
 */
import type { Html } from "../shared/Html.js"
import { html } from "../shared/Html.js"
import type { PageContext } from "../shared/Layout.js"
import { layout } from "../shared/Layout.js"

const ACCOUNT_PATH = "/ui/account"
const TWO_FACTOR_PATH = "/ui/account/two-factor"

/** An error tied to its input: `<p id>` and the ids the input should be described by. */
const fieldError = (id: string, message: string | undefined) =>
  message === undefined ? "" : html`<p class="alert" role="alert" id="${id}">${message}</p>`

const describedBy = (hint: string, error: string, message: string | undefined) =>
  message === undefined
    ? html`aria-describedby="${hint}"`
    : html`aria-describedby="${hint} ${error}" aria-invalid="true"`

/** The key in groups of four, easier to copy by hand; apps ignore the spaces. */
const grouped = (secret: string) => secret.replace(/(.{4})(?=.)/g, "$1 ")

/** A code input: digits on phones, the one-time-code autofill, six digits and a space at most. */
const codeInput = (id: string, name: string, hint: string, error: string | undefined) =>
  html`<input id="${id}" name="${name}" type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9 ]*" maxlength="7" spellcheck="false" required ${
    describedBy(`${id}-hint`, `${id}-error`, error)
  }>
<span id="${id}-hint" class="muted">${hint}</span>`

// ---------------------------------------------------------------------------------------------
// Sign-in, second step
// ---------------------------------------------------------------------------------------------

export const signInCodePage = (ctx: PageContext, input: {
  readonly csrf: string
  readonly pending: string
  readonly returnTo: string
  readonly email: string
  readonly error?: { readonly field: "otp" | "recovery_code"; readonly message: string } | undefined
}): string => {
  const hidden = html`<input type="hidden" name="csrf" value="${input.csrf}">
<input type="hidden" name="pending" value="${input.pending}">
<input type="hidden" name="return_to" value="${input.returnTo}">
<input type="hidden" name="email" value="${input.email}">`
  const otpError = input.error?.field === "otp" ? input.error.message : undefined
  const recoveryError = input.error?.field === "recovery_code" ? input.error.message : undefined
  const restart = new URLSearchParams({
    login_hint: input.email,
    ...(input.returnTo === "" ? {} : { return_to: input.returnTo })
  })
  return layout(
    ctx,
    "Two-factor authentication",
    html`<h1>Two-factor authentication</h1>
<p>Signing in as <strong>${input.email}</strong>. Enter the code your authenticator app shows for shiori.</p>
<form method="post" action="${ctx.basePath}/ui/login" novalidate>
${hidden}
${fieldError("otp-error", otpError)}
<p><label for="otp">Authentication code</label>
${codeInput("otp", "otp", "6 digits; the app shows a new code every 30 seconds.", otpError)}</p>
<p><button type="submit">Verify</button></p>
</form>
<details${recoveryError === undefined ? "" : html` open`}>
<summary>Use a recovery code instead</summary>
<form method="post" action="${ctx.basePath}/ui/login" novalidate>
${hidden}
${fieldError("recovery_code-error", recoveryError)}
<p><label for="recovery_code">Recovery code</label>
<input id="recovery_code" name="recovery_code" type="text" autocomplete="off" autocapitalize="off" spellcheck="false" required ${
      describedBy("recovery_code-hint", "recovery_code-error", recoveryError)
    }>
<span id="recovery_code-hint" class="muted">One of the ten codes you saved when you turned this on; each works once.</span></p>
<p><button type="submit">Use recovery code</button></p>
</form>
</details>
<p class="muted"><a href="${ctx.basePath}/ui/login?${restart.toString()}">Start again</a></p>`
  )
}

// ---------------------------------------------------------------------------------------------
// Set-up page
// ---------------------------------------------------------------------------------------------

export type TwoFactorFormName = "enable" | "disable" | "recovery-codes"
/** The inputs of each form: the code and the current password. */
export type TwoFactorField = "code" | "password"

interface PageBase {
  readonly csrf: string
  readonly email: string
  readonly error?:
    | { readonly form: TwoFactorFormName; readonly field: TwoFactorField; readonly message: string }
    | undefined
}

const errorFor = (input: PageBase, form: TwoFactorFormName, field: TwoFactorField) =>
  input.error?.form === form && input.error.field === field ? input.error.message : undefined

/**
 * The account's current password, asked with every change of the factor (src/identity/twofactor/TwoFactor.ts):
 * a session alone does not change how the account signs in.
 */
const passwordInput = (id: string, error: string | undefined) =>
  html`${fieldError(`${id}-error`, error)}
<p><label for="${id}">Your password</label>
<input id="${id}" name="current_password" type="password" autocomplete="current-password" required ${
    describedBy(`${id}-hint`, `${id}-error`, error)
  }>
<span id="${id}-hint" class="muted">The password you sign in with.</span></p>`

const back = (ctx: PageContext) => html`<p><a href="${ctx.basePath}${ACCOUNT_PATH}">Back to your account</a></p>`

const form = (ctx: PageContext, csrf: string, action: string, body: Html | string) =>
  html`<form method="post" action="${ctx.basePath}${TWO_FACTOR_PATH}" novalidate>
<input type="hidden" name="csrf" value="${csrf}">
<input type="hidden" name="action" value="${action}">
${body}
</form>`

/** No factor yet: the pending key as a QR code and as text, and the form for its first code. */
export const twoFactorSetupPage = (
  ctx: PageContext,
  input: PageBase & {
    readonly secret: string
    /** The QR code from `qrcode` (SVG of our own `otpauth://` URI, nothing user-supplied in markup). */
    readonly qrSvg: Html
  }
): string => {
  const error = errorFor(input, "enable", "code")
  const passwordError = errorFor(input, "enable", "password")
  return layout(
    ctx,
    "Set up two-factor authentication",
    html`<h1>Set up two-factor authentication</h1>
<p>Signing in as <strong>${input.email}</strong> will also ask for a code from an authenticator app on your phone.</p>
<h2 id="scan-heading">1. Add shiori to your app</h2>
<figure class="qr" aria-labelledby="scan-heading">
<div role="img" aria-label="QR code of the key below">${input.qrSvg}</div>
<figcaption>Scan the QR code, or type this key into the app:
<code id="totp-secret" class="secret">${grouped(input.secret)}</code></figcaption>
</figure>
<h2>2. Enter the code the app shows</h2>
${
      form(
        ctx,
        input.csrf,
        "enable",
        html`${fieldError("enable-code-error", error)}
<p><label for="enable-code">Code from the app</label>
${codeInput("enable-code", "code", "6 digits.", error)}</p>
${passwordInput("enable-password", passwordError)}
<p>Turning it on signs you out everywhere else.</p>
<p><button type="submit">Turn on</button></p>`
      )
    }
${form(ctx, input.csrf, "restart", html`<p><button type="submit" class="secondary">Show a new key</button></p>`)}
${back(ctx)}`
  )
}

/** The factor is on: recovery codes (shown once, right after they were made) and the changes. */
export const twoFactorEnabledPage = (
  ctx: PageContext,
  input: PageBase & {
    readonly enabledAt: Date
    readonly recoveryCodesLeft: number
    readonly recoveryCodes?: ReadonlyArray<string> | undefined
    readonly notice?: string | undefined
  }
): string => {
  const renewError = errorFor(input, "recovery-codes", "code")
  const renewPasswordError = errorFor(input, "recovery-codes", "password")
  const disableError = errorFor(input, "disable", "code")
  const disablePasswordError = errorFor(input, "disable", "password")
  const codeHint = "A code from the app, or one of your recovery codes."
  return layout(
    ctx,
    "Two-factor authentication",
    html`<h1>Two-factor authentication</h1>
${input.notice === undefined ? "" : html`<p role="status">${input.notice}</p>`}
${
      input.recoveryCodes === undefined ? "" : html`<section aria-labelledby="codes-heading">
<h2 id="codes-heading">Your recovery codes</h2>
<p>Save them somewhere safe now: they are shown only this once. Each one signs you in once if you lose your phone.</p>
<ol class="codes" id="recovery-codes">
${input.recoveryCodes.map((code) => html`<li><code>${code}</code></li>\n`)}</ol>
</section>`
    }
<p>On for <strong>${input.email}</strong> since <time datetime="${input.enabledAt.toISOString()}">${
      input.enabledAt.toISOString().slice(0, 10)
    }</time>: signing in asks for a code from your app. ${input.recoveryCodesLeft} of 10 recovery codes left.</p>
<h2>New recovery codes</h2>
${
      form(
        ctx,
        input.csrf,
        "recovery-codes",
        html`${fieldError("renew-code-error", renewError)}
<p><label for="renew-code">Code to make new recovery codes</label>
<input id="renew-code" name="code" type="text" autocomplete="one-time-code" spellcheck="false" required ${
          describedBy("renew-code-hint", "renew-code-error", renewError)
        }>
<span id="renew-code-hint" class="muted">${codeHint} The old recovery codes stop working.</span></p>
${passwordInput("renew-password", renewPasswordError)}
<p><button type="submit" class="secondary">Make new recovery codes</button></p>`
      )
    }
<h2>Turn off</h2>
${
      form(
        ctx,
        input.csrf,
        "disable",
        html`${fieldError("disable-code-error", disableError)}
<p><label for="disable-code">Code to turn off</label>
<input id="disable-code" name="code" type="text" autocomplete="one-time-code" spellcheck="false" required ${
          describedBy("disable-code-hint", "disable-code-error", disableError)
        }>
<span id="disable-code-hint" class="muted">${codeHint}</span></p>
${passwordInput("disable-password", disablePasswordError)}
<p>Turning it off signs you out everywhere else.</p>
<p><button type="submit" class="secondary">Turn off two-factor authentication</button></p>`
      )
    }
${back(ctx)}`
  )
}

/** After turning the factor off. */
export const twoFactorOffPage = (ctx: PageContext, input: { readonly email: string }): string =>
  layout(
    ctx,
    "Two-factor authentication is off",
    html`<h1>Two-factor authentication is off</h1>
<p role="status">Signing in as <strong>${input.email}</strong> asks only for the password again. Your recovery codes no longer work, and every other sign-in of the account was ended.</p>
<p><a href="${ctx.basePath}${TWO_FACTOR_PATH}">Set it up again</a></p>
${back(ctx)}`
  )
