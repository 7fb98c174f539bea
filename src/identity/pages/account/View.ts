/**
 * The registration and account pages: plain server-rendered HTML like the sign-in pages
 * (src/identity/pages/signin/View.ts), no script. Every input has a label; an error is written next
 * to its field, tied to it with `aria-describedby` and `aria-invalid`, and the first one is
 * announced (`role="alert"`).
 */
import type { AccountSession, Me } from "../../../../schema/Identity/Me.js"
import { ProfileLength } from "../../../../schema/Identity/Me.js"
import type { FieldErrors } from "../shared/FormFields.js"
import { alert, field, hidden, mailedCodeField } from "../shared/FormFields.js"
import type { Html } from "../shared/Html.js"
import { html } from "../shared/Html.js"
import type { PageContext } from "../shared/Layout.js"
import { layout } from "../shared/Layout.js"

export const registerEmailPage = (ctx: PageContext, input: {
  readonly csrf: string
  readonly email: string
  readonly returnTo: string
  readonly errors: FieldErrors
}): string =>
  layout(
    ctx,
    "Create an account",
    html`<h1>Create a shiori account</h1>
${alert(input.errors.form ?? input.errors.email)}
<form method="post" action="${ctx.basePath}/ui/register/send-code" novalidate>
${hidden("csrf", input.csrf)}${hidden("return_to", input.returnTo)}
${
      field({
        id: "email",
        name: "email",
        label: "Email",
        type: "email",
        value: input.email,
        autocomplete: "email",
        error: input.errors.email,
        hint: "We mail a 6-digit code to this address."
      })
    }
<p><button type="submit">Send the code</button></p>
</form>
<p class="muted">Already have an account? <a href="${ctx.basePath}/ui/login">Sign in</a>.</p>`
  )

export const registerCodePage = (ctx: PageContext, input: {
  readonly csrf: string
  readonly email: string
  readonly name: string
  readonly returnTo: string
  readonly errors: FieldErrors
}): string =>
  layout(
    ctx,
    "Create an account",
    html`<h1>Create a shiori account</h1>
${
      alert(input.errors.form ?? input.errors.code ?? input.errors.name ?? input.errors.password)
    }<p>We sent a 6-digit code to <strong>${input.email}</strong>. It is valid for 10 minutes.</p>
<form method="post" action="${ctx.basePath}/ui/register" novalidate>
${hidden("csrf", input.csrf)}${hidden("return_to", input.returnTo)}${hidden("email", input.email)}
${mailedCodeField(input.errors.code)}
${
      field({
        id: "name",
        name: "name",
        label: "Display name",
        type: "text",
        value: input.name,
        autocomplete: "nickname",
        maxLength: ProfileLength.name,
        error: input.errors.name
      })
    }
${
      field({
        id: "password",
        name: "password",
        label: "Password",
        type: "password",
        autocomplete: "new-password",
        error: input.errors.password,
        hint: "At least 8 characters; not a common password, not your email or name."
      })
    }
<p><button type="submit">Create the account</button></p>
</form>
<p class="muted"><a href="${ctx.basePath}/ui/register">Use another address or send a new code</a></p>`
  )

const when = (seconds: number) => new Date(seconds * 1000).toISOString().replace("T", " ").slice(0, 16) + " UTC"

const NOTICES: Readonly<Record<string, string>> = {
  profile: "Your profile was saved.",
  email: "Your email address was changed. Every other sign-in was ended.",
  password: "Your password was changed. Every other sign-in was ended.",
  session: "The session was ended.",
  avatar: "Your avatar was changed.",
  registered: "Welcome! Your account is ready."
}

export const accountPage = (ctx: PageContext, input: {
  readonly me: Me
  readonly sessions: ReadonlyArray<AccountSession>
  readonly csrf: string
  readonly done?: string | undefined
  /** A code was mailed to this new address: show the code field. */
  readonly pendingEmail?: string | undefined
  /** Values the user typed, shown again with their errors. */
  readonly values?: Readonly<Partial<Record<string, string>>> | undefined
  readonly errors: FieldErrors
  /** Where to sign in again when a change needs a recent sign-in. */
  readonly reauthenticate: string
}): string => {
  const { me } = input
  const values = input.values ?? {}
  const notice = input.done === undefined ? undefined : NOTICES[input.done]
  const firstError = Object.values(input.errors).find((e) => e !== undefined)
  return layout(
    ctx,
    "Your account",
    html`<h1>Your account</h1>
${notice === undefined ? "" : html`<p class="notice" role="status">${notice}</p>`}
${alert(firstError)}
${
      input.errors.reauthenticate === undefined
        ? ""
        : html`<p><a class="button" href="${input.reauthenticate}">Sign in again</a></p>`
    }
<section aria-labelledby="profile-heading">
<h2 id="profile-heading">Profile</h2>
<form method="post" action="${ctx.basePath}/ui/account/profile" novalidate>
${hidden("csrf", input.csrf)}
${
      field({
        id: "name",
        name: "name",
        label: "Display name",
        type: "text",
        value: values.name ?? me.name,
        autocomplete: "nickname",
        maxLength: ProfileLength.name,
        error: input.errors.name
      })
    }
<p><label for="bio">About you</label>
<textarea id="bio" name="bio" rows="3" maxlength="${ProfileLength.bio}"${
      input.errors.bio === undefined ? "" : html` aria-invalid="true" aria-describedby="bio-error"`
    }>${values.bio ?? me.bio}</textarea>
${input.errors.bio === undefined ? "" : html`<span id="bio-error" class="field-error">${input.errors.bio}</span>`}</p>
<p><button type="submit">Save the profile</button></p>
</form>
</section>
<section aria-labelledby="avatar-heading">
<h2 id="avatar-heading">Avatar</h2>
${
      me.picture === ""
        ? html`<p class="muted">No avatar yet.</p>`
        : html`<p><img class="avatar" src="${me.picture}" alt="Your current avatar" width="96" height="96"></p>`
    }
<form method="post" action="${ctx.basePath}/ui/account/avatar" enctype="multipart/form-data" novalidate>
${hidden("csrf", input.csrf)}
<p><label for="avatar">Picture</label>
<input id="avatar" name="file" type="file" accept="image/jpeg,image/png,image/webp,image/avif,image/gif" required aria-describedby="avatar-hint${
      input.errors.avatar === undefined ? "" : " avatar-error"
    }"${input.errors.avatar === undefined ? "" : html` aria-invalid="true"`}>
<span id="avatar-hint" class="muted">Cropped to a square; up to 5 MiB.</span>
${
      input.errors.avatar === undefined
        ? ""
        : html`<span id="avatar-error" class="field-error">${input.errors.avatar}</span>`
    }</p>
<p><button type="submit" class="secondary">Upload</button></p>
</form>
</section>
<section aria-labelledby="email-heading">
<h2 id="email-heading">Email</h2>
<p>Signed in as <strong>${me.email}</strong>${me.email_verified ? " (verified)" : " (not verified)"}.</p>
${
      input.pendingEmail === undefined
        ? html`<form method="post" action="${ctx.basePath}/ui/account/email/send-code" novalidate>
${hidden("csrf", input.csrf)}
${
          field({
            id: "new-email",
            name: "email",
            label: "New email address",
            type: "email",
            value: values.email,
            autocomplete: "email",
            error: input.errors.email,
            hint: "We mail a code to the new address."
          })
        }
<p><button type="submit" class="secondary">Send a code</button></p>
</form>`
        : html`<form method="post" action="${ctx.basePath}/ui/account/email" novalidate>
${hidden("csrf", input.csrf)}${hidden("email", input.pendingEmail)}
<p>We sent a 6-digit code to <strong>${input.pendingEmail}</strong>.</p>
${mailedCodeField(input.errors.code, "email-code")}
${
          field({
            id: "email-current-password",
            name: "current_password",
            label: "Your current password",
            type: "password",
            autocomplete: "current-password",
            error: input.errors.current_password,
            optional: me.two_factor,
            hint: "Changing the address signs you out everywhere else."
          })
        }
${
          me.two_factor
            ? field({
              id: "email-two-factor-code",
              name: "two_factor_code",
              label: "Or a code from your authenticator app",
              type: "text",
              autocomplete: "one-time-code",
              error: input.errors.two_factor_code,
              optional: true,
              hint: "Instead of the password: the app's 6-digit code, or one of your recovery codes."
            })
            : ""
        }
<p><button type="submit">Change the email</button></p>
</form>`
    }
</section>
<section aria-labelledby="password-heading">
<h2 id="password-heading">Password</h2>
<form method="post" action="${ctx.basePath}/ui/account/password" novalidate>
${hidden("csrf", input.csrf)}
${
      field({
        id: "current-password",
        name: "current_password",
        label: "Current password",
        type: "password",
        autocomplete: "current-password",
        error: input.errors.current_password
      })
    }
${
      field({
        id: "new-password",
        name: "new_password",
        label: "New password",
        type: "password",
        autocomplete: "new-password",
        error: input.errors.new_password,
        hint: "At least 8 characters. Changing it signs you out everywhere else."
      })
    }
<p><button type="submit">Change the password</button></p>
</form>
</section>
<section aria-labelledby="two-factor-heading">
<h2 id="two-factor-heading">Two-factor authentication</h2>
<p>${me.two_factor ? "On: signing in asks for a code from your authenticator app." : "Off."}</p>
<p><a class="button secondary" href="${ctx.basePath}/ui/account/two-factor">${
      me.two_factor ? "Manage two-factor authentication" : "Set up two-factor authentication"
    }</a></p>
</section>
<section aria-labelledby="sessions-heading">
<h2 id="sessions-heading">Where you are signed in</h2>
<ul class="sessions">
${
      input.sessions.map((session) =>
        html`<li><span>${session.user_agent === "" ? "Unknown device" : session.user_agent}</span>
<span class="muted">from ${session.ip}, signed in ${when(session.auth_time)}${
          session.current ? " (this browser)" : ""
        }</span>
<form method="post" action="${ctx.basePath}/ui/account/sessions/end">
${hidden("csrf", input.csrf)}${hidden("id", session.id)}
<button type="submit" class="secondary" aria-label="${
          session.current
            ? "Sign out of this browser"
            : `End the session from ${session.ip}, ${when(session.auth_time)}`
        }">${session.current ? "Sign out" : "End"}</button>
</form></li>
`
      )
    }</ul>
</section>` as Html
  )
}
