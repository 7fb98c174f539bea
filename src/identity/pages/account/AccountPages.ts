/**
 * The account page and its forms, for the user of the session cookie: the same `Account` operations
 * as the envelope endpoints (src/identity/account/Account.ts), with that user instead of a Bearer
 * token. A refusal comes back as the page with the error next to its field and the code's HTTP
 * status; a successful post redirects (303) to the page with its confirmation, so reloading never
 * posts twice. Forms carry CSRF tokens bound to the browser and the session
 * (src/identity/pages/forms/Csrf.ts); a sensitive change needs a recent sign-in
 * (src/identity/auth/SignedIn.ts).
 */
import { Context, Effect, Layer, Option } from "effect"
import type { HttpServerRequest, HttpServerResponse } from "effect/http"
import type {
  AccountPageParams,
  EmailForm,
  EndSessionForm,
  PasswordForm,
  ProfileForm
} from "../../../../schema/Identity/AccountPages.js"
import { isEmailAddress } from "../../../../schema/Identity/User.js"
import { clientAddress } from "../../../platform/ClientAddress.js"
import { Account } from "../../account/Account.js"
import { Avatars, parseUpload } from "../../account/Avatars.js"
import type { EndUser } from "../../auth/EndUsers.js"
import { EndUsers } from "../../auth/EndUsers.js"
import { requireRecentSignIn } from "../../auth/SignedIn.js"
import { page, redirectTo } from "../../http/Responses.js"
import { Sessions } from "../../sessions/Sessions.js"
import { IdentityConfig } from "../../shared/IdentityConfig.js"
import { type Refused, refused } from "../../shared/Refused.js"
import { Csrf } from "../forms/Csrf.js"
import { FormValidation } from "../forms/FormValidation.js"
import type { FieldErrors } from "../shared/FormFields.js"
import { accountPage } from "./View.js"

export class AccountPages extends Context.Service<AccountPages>()("identity/pages/AccountPages", {
  make: Effect.gen(function*() {
    const config = yield* IdentityConfig
    const csrf = yield* Csrf
    const forms = yield* FormValidation
    const account = yield* Account
    const avatars = yield* Avatars
    const endUsers = yield* EndUsers
    const sessions = yield* Sessions
    const ctx = { basePath: config.basePath }
    const accountPath = `${config.basePath}/ui/account`
    const toSignIn = redirectTo(`${config.basePath}/ui/login?return_to=${encodeURIComponent(accountPath)}`, 302)
    const addressOf = (request: HttpServerRequest.HttpServerRequest) => clientAddress(request, config.trustedProxies)

    const render = (request: HttpServerRequest.HttpServerRequest, endUser: EndUser, input: {
      readonly done?: string | undefined
      readonly pendingEmail?: string | undefined
      readonly values?: Readonly<Record<string, string>> | undefined
      readonly errors?: FieldErrors
      readonly status?: number
      readonly headers?: Record<string, string>
    }) =>
      Effect.gen(function*() {
        const form = yield* csrf.issue(request, "account", Option.some(endUser))
        const me = yield* account.me(endUser.user.id).pipe(Effect.orDie)
        const list = yield* account.listSessions(endUser)
        const reauthenticate = `${config.basePath}/ui/login?return_to=${encodeURIComponent(accountPath)}` +
          `&login_hint=${encodeURIComponent(me.email)}`
        const body = accountPage(ctx, {
          me,
          sessions: list.items,
          csrf: form.token,
          done: input.done,
          pendingEmail: input.pendingEmail,
          values: input.values,
          errors: input.errors ?? {},
          reauthenticate
        })
        return form.send(page(body, { status: input.status ?? 200, headers: input.headers ?? {} }))
      })

    /**
     * A post of the account page: the cookie's user and a valid token, then `act`; its refusal
     * re-renders the page with the error, its success redirects to the location it gives.
     */
    const post = (
      request: HttpServerRequest.HttpServerRequest,
      token: string | undefined,
      act: (endUser: EndUser) => Effect.Effect<string, Refused, Sessions>,
      onRefused: (refused: Refused) => {
        readonly values?: Readonly<Record<string, string>> | undefined
        readonly pendingEmail?: string | undefined
        readonly field?: string | undefined
      } = () => ({})
    ) =>
      Effect.gen(function*() {
        const endUser = yield* endUsers.fromCookie(request)
        if (Option.isNone(endUser)) return toSignIn
        if (!(yield* csrf.verify(request, token, "account", endUser))) return csrf.expired()
        return yield* act(endUser.value).pipe(
          // `requireRecentSignIn` reads the session per request: this stack's `Sessions`.
          Effect.provideService(Sessions, sessions),
          Effect.map((location): HttpServerResponse.HttpServerResponse => redirectTo(location, 303)),
          Effect.catchTag("Refused", (refusal) => {
            const context = onRefused(refusal)
            return render(request, endUser.value, {
              values: context.values,
              pendingEmail: context.pendingEmail,
              ...forms.refusal(refusal, context.field)
            })
          })
        )
      })

    /** GET: the page, with the confirmation of the change just made (`done`) or the code field (`email`). */
    const show = (request: HttpServerRequest.HttpServerRequest, query: AccountPageParams) =>
      Effect.gen(function*() {
        const endUser = yield* endUsers.fromCookie(request)
        if (Option.isNone(endUser)) return toSignIn
        return yield* render(request, endUser.value, {
          done: query.done,
          pendingEmail: query.email === "" ? undefined : query.email
        })
      })

    const saveProfile = (request: HttpServerRequest.HttpServerRequest, payload: ProfileForm) =>
      post(
        request,
        payload.csrf,
        (endUser) =>
          account.updateProfile(endUser, { name: payload.name, bio: payload.bio }).pipe(
            Effect.as(`${accountPath}?done=profile`)
          ),
        () => ({ values: { name: payload.name ?? "", bio: payload.bio ?? "" }, field: "name" })
      )

    /** A multipart post (src/identity/account/Avatars.ts): its token is one of its parts. */
    const uploadAvatar = (request: HttpServerRequest.HttpServerRequest) =>
      Effect.gen(function*() {
        const endUser = yield* endUsers.fromCookie(request)
        if (Option.isNone(endUser)) return toSignIn
        const body = yield* request.arrayBuffer.pipe(Effect.option)
        const parsed = Option.isNone(body)
          ? Option.none()
          : yield* parseUpload(request.headers["content-type"] ?? "", new Uint8Array(body.value)).pipe(Effect.option)
        const token = Option.getOrUndefined(Option.map(parsed, ({ fields }) => fields.csrf))
        if (!(yield* csrf.verify(request, token, "account", endUser))) return csrf.expired()
        return yield* Option.match(parsed, {
          onNone: () => refused("INVALID_REQUEST"),
          onSome: ({ file }) => avatars.upload(endUser.value.user.id, addressOf(request), file)
        }).pipe(
          Effect.as(redirectTo(`${accountPath}?done=avatar`, 303)),
          Effect.catchTag("Refused", (refusal) => render(request, endUser.value, forms.refusal(refusal, "avatar")))
        )
      })

    const sendEmailCode = (request: HttpServerRequest.HttpServerRequest, payload: EmailForm) =>
      post(
        request,
        payload.csrf,
        (endUser) => {
          const email = (payload.email ?? "").trim()
          return requireRecentSignIn(endUser).pipe(
            Effect.andThen(
              isEmailAddress(email)
                ? account.sendEmailChangeCode(endUser, email, addressOf(request))
                : refused("INVALID_REQUEST")
            ),
            Effect.as(`${accountPath}?email=${encodeURIComponent(email)}`)
          )
        },
        (refusal) => ({
          values: { email: payload.email ?? "" },
          field: refusal.code === "INVALID_REQUEST" || refusal.code === "CODE_REQUESTED_TOO_SOON"
            ? "email"
            : undefined
        } as const)
      )

    const changeEmail = (request: HttpServerRequest.HttpServerRequest, payload: EmailForm) =>
      post(
        request,
        payload.csrf,
        (endUser) =>
          requireRecentSignIn(endUser).pipe(
            Effect.andThen(
              account.changeEmail(endUser, {
                email: (payload.email ?? "").trim(),
                code: (payload.code ?? "").trim(),
                // An empty field of the form is one not filled in.
                current_password: payload.current_password === "" ? undefined : payload.current_password,
                two_factor_code: payload.two_factor_code?.trim() === "" ? undefined : payload.two_factor_code
              }, addressOf(request))
            ),
            Effect.as(`${accountPath}?done=email`)
          ),
        (refusal) => ({
          pendingEmail: refusal.code === "EMAIL_TAKEN" || refusal.code === "REAUTHENTICATION_REQUIRED"
            ? undefined
            : payload.email,
          field: refusal.code === "INVALID_REQUEST" ? "current_password" : undefined
        })
      )

    const changePassword = (request: HttpServerRequest.HttpServerRequest, payload: PasswordForm) =>
      post(
        request,
        payload.csrf,
        (endUser) =>
          requireRecentSignIn(endUser).pipe(
            Effect.andThen(account.changePassword(endUser, payload.current_password ?? "", payload.new_password ?? "")),
            Effect.as(`${accountPath}?done=password`)
          ),
        (refusal) => ({ field: refusal.code === "WEAK_PASSWORD" ? "new_password" : undefined })
      )

    /** Ending this very session signs the browser out: to the sign-in page. */
    const endSession = (request: HttpServerRequest.HttpServerRequest, payload: EndSessionForm) =>
      post(
        request,
        payload.csrf,
        (endUser) =>
          account.endSession(endUser, payload.id ?? "").pipe(
            Effect.as(
              payload.id === endUser.session.sid ? `${config.basePath}/ui/login` : `${accountPath}?done=session`
            )
          )
      )

    return { show, saveProfile, uploadAvatar, sendEmailCode, changeEmail, changePassword, endSession } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
