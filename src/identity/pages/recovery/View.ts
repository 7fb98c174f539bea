/**
 * The account-recovery pages ("Forgot your password?"), plain server-rendered HTML like the
 * registration pages (src/identity/pages/account/View.ts), no script. Step one asks for the address; step two says a
 * code was sent *if* an account exists, in the same words for every address, and asks for the code
 * and the new password; the confirmation says every device was signed out. Every input has a label;
 * an error is written next to its field, tied to it with `aria-describedby` and `aria-invalid`, and
 * announced (`role="alert"`).
 */
import type { FieldErrors } from "../shared/FormFields.js"
import { alert, field, hidden, mailedCodeField } from "../shared/FormFields.js"
import { html } from "../shared/Html.js"
import type { PageContext } from "../shared/Layout.js"
import { layout } from "../shared/Layout.js"

const TITLE = "Reset your password"

const DONE = "Your new password is set. Every device that was signed in to your account has been signed out, " +
  "and apps connected to it will ask you to sign in again."

/** A link to this server's page `path`, carrying `return_to` when there is one. */
const withReturnTo = (ctx: PageContext, path: string, returnTo: string) =>
  `${ctx.basePath}${path}${returnTo === "" ? "" : `?return_to=${encodeURIComponent(returnTo)}`}`

export const recoveryEmailPage = (ctx: PageContext, input: {
  readonly csrf: string
  readonly email: string
  readonly returnTo: string
  readonly errors: FieldErrors
}): string =>
  layout(
    ctx,
    TITLE,
    html`<h1>Reset your password</h1>
${alert(input.errors.form ?? input.errors.email)}
<p>Enter the address of your account. We mail it a 6-digit code to choose a new password.</p>
<form method="post" action="${ctx.basePath}/ui/password/forgot/send-code" novalidate>
${hidden("csrf", input.csrf)}${hidden("return_to", input.returnTo)}
${
      field({
        id: "email",
        name: "email",
        label: "Email",
        type: "email",
        value: input.email,
        autocomplete: "username",
        error: input.errors.email
      })
    }
<p><button type="submit">Send the code</button></p>
</form>
<p class="muted">Remembered it? <a href="${withReturnTo(ctx, "/ui/login", input.returnTo)}">Sign in</a>.</p>`
  )

export const recoveryCodePage = (ctx: PageContext, input: {
  readonly csrf: string
  readonly pending: string
  readonly email: string
  readonly returnTo: string
  readonly errors: FieldErrors
}): string =>
  layout(
    ctx,
    TITLE,
    html`<h1>Reset your password</h1>
${alert(input.errors.form ?? input.errors.code ?? input.errors.password)}
<p>If an account exists for <strong>${input.email}</strong>, we sent it a 6-digit code. It is valid for 10 minutes.</p>
<form method="post" action="${ctx.basePath}/ui/password/reset" novalidate>
${hidden("csrf", input.csrf)}${hidden("pending", input.pending)}${hidden("email", input.email)}${
      hidden("return_to", input.returnTo)
    }
${mailedCodeField(input.errors.code)}
${
      field({
        id: "password",
        name: "password",
        label: "New password",
        type: "password",
        autocomplete: "new-password",
        error: input.errors.password,
        hint: "At least 8 characters; not a common password, not your email or name."
      })
    }
<p><button type="submit">Reset the password</button></p>
</form>
<p class="muted">No mail? Check the address and your spam folder, or <a href="${
      withReturnTo(ctx, "/ui/password/forgot", input.returnTo)
    }">ask for a new code</a>.</p>`
  )

export const recoveryDonePage = (ctx: PageContext, input: { readonly returnTo: string }): string =>
  layout(
    ctx,
    "Password reset",
    html`<h1>Your password was reset</h1>
<p class="notice" role="status">${DONE}</p>
<p><a class="button" href="${withReturnTo(ctx, "/ui/login", input.returnTo)}">Sign in with the new password</a></p>`
  )
