/**
 * The sign-out page's flow (OpenID Connect RP-Initiated Logout 1.0; docs/decisions.md, "Identity:
 * pages"): with a valid `id_token_hint` of the signed-in user the session ends at once, otherwise the
 * page asks first. The return target is followed only when `src/identity/oauth/Logout.ts` allows it
 * for the client.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { HttpServerRequest } from "effect/http"
import type { LogoutForm, LogoutParams } from "../../../../schema/Identity/Pages.js"
import { EndUsers } from "../../auth/EndUsers.js"
import { page, redirectTo } from "../../http/Responses.js"
import { Logout } from "../../oauth/Logout.js"
import { Sessions } from "../../sessions/Sessions.js"
import { IdentityConfig } from "../../shared/IdentityConfig.js"
import { Csrf } from "../forms/Csrf.js"
import { messagePage } from "../shared/Layout.js"
import { logoutPage } from "./View.js"

export class SignOut extends Context.Service<SignOut>()("identity/pages/SignOut", {
  make: Effect.gen(function*() {
    const config = yield* IdentityConfig
    const csrf = yield* Csrf
    const endUsers = yield* EndUsers
    const sessions = yield* Sessions
    const logout = yield* Logout
    const ctx = { basePath: config.basePath }

    const signedOut = (location: Option.Option<string>) =>
      Option.match(location, {
        onSome: (href) => redirectTo(href, 303),
        onNone: () => page(messagePage(ctx, { title: "Signed out", message: "You are signed out of shiori." }))
      })

    /** GET: ends the session at once for a hint naming its user, else asks. */
    const showForm = (request: HttpServerRequest.HttpServerRequest, query: LogoutParams) =>
      Effect.gen(function*() {
        const redirect = query.redirect ?? query.post_logout_redirect_uri
        const target = yield* logout.target({ clientId: query.client_id, redirect, state: query.state })
        const endUser = yield* endUsers.fromCookie(request)
        if (Option.isNone(endUser)) return signedOut(target.location)
        if (yield* logout.hintConfirms(query.id_token_hint, endUser.value, query.client_id)) {
          yield* sessions.end(endUser.value.session.id)
          return sessions.clearCookie(signedOut(target.location))
        }
        const form = yield* csrf.issue(request, "logout", endUser)
        return form.send(page(logoutPage(ctx, {
          csrf: form.token,
          userEmail: endUser.value.user.email,
          clientName: Option.getOrUndefined(Option.map(target.client, (c) => c.name === "" ? c.clientId : c.name)),
          clientId: query.client_id ?? "",
          redirect: redirect ?? "",
          state: query.state ?? ""
        })))
      })

    /** POST: `logout` ends the session, anything else leaves it. */
    const submit = (request: HttpServerRequest.HttpServerRequest, payload: LogoutForm) =>
      Effect.gen(function*() {
        const target = yield* logout.target({
          clientId: payload.client_id === "" ? undefined : payload.client_id,
          redirect: payload.redirect === "" ? undefined : payload.redirect,
          state: payload.state
        })
        const endUser = yield* endUsers.fromCookie(request)
        if (Option.isNone(endUser)) return signedOut(target.location)
        if (!(yield* csrf.verify(request, payload.csrf, "logout", endUser))) return csrf.expired()
        if (payload.decision !== "logout") {
          return page(messagePage(ctx, {
            title: "Still signed in",
            message: `You are still signed in as ${endUser.value.user.email}.`,
            link: Option.getOrUndefined(
              Option.map(target.location, (href) => ({ href, text: "Back to the application" }))
            )
          }))
        }
        yield* sessions.end(endUser.value.session.id)
        return sessions.clearCookie(signedOut(target.location))
      })

    return { showForm, submit } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
