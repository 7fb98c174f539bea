/**
 * The consent page's flow (docs/decisions.md, "Identity: pages"); its handlers are in the `pages`
 * group (src/identity/pages/signin/Http.ts). The form carries three things: the CSRF token, bound to
 * the browser's CSRF cookie and to the session (src/identity/pages/forms/Csrf.ts); the authorization
 * request's query string, which `Authorize` validates again on the post (a form is not trusted to
 * carry what the page showed); and the decision, `approve` or `deny`. A decision counts only from
 * the signed-in user who was shown the page, with a valid token; approving records the consent and
 * resumes `/oauth/authorize`, denying sends `access_denied` back to the client (RFC 6749 section
 * 4.1.2.1).
 */
import { Context, Effect, Layer, Option, Result } from "effect"
import type { HttpServerRequest } from "effect/http"
import type { AuthorizeParams } from "../../../../schema/Identity/Authorize.js"
import type { ConsentForm } from "../../../../schema/Identity/Pages.js"
import { EndUsers } from "../../auth/EndUsers.js"
import { outcomeResponse } from "../../http/OAuthHttp.js"
import { page, redirectTo } from "../../http/Responses.js"
import { Authorize, authorizeQuery } from "../../oauth/Authorize.js"
import { IdentityConfig } from "../../shared/IdentityConfig.js"
import { isSupportedScope, SCOPE_DESCRIPTIONS } from "../../shared/Scopes.js"
import { Csrf } from "../forms/Csrf.js"
import { messagePage } from "../shared/Layout.js"
import { consentPage } from "./View.js"

/** The decision a consent form sends, or none when it sends neither. */
const decisionOf = (form: ConsentForm): Option.Option<"approve" | "deny"> =>
  form.decision === "approve" || form.decision === "deny" ? Option.some(form.decision) : Option.none()

export class Consent extends Context.Service<Consent>()("identity/pages/Consent", {
  make: Effect.gen(function*() {
    const config = yield* IdentityConfig
    const csrf = yield* Csrf
    const endUsers = yield* EndUsers
    const authorize = yield* Authorize
    const ctx = { basePath: config.basePath }

    /** The scopes as the page lists them: each with what it lets the client do. */
    const scopeLines = (scopes: ReadonlyArray<string>) =>
      scopes.map((scope) => ({ scope, description: isSupportedScope(scope) ? SCOPE_DESCRIPTIONS[scope] : "" }))

    /** GET, with the authorization request's query: the page for the signed-in user, or the sign-in first. */
    const show = (request: HttpServerRequest.HttpServerRequest, params: AuthorizeParams) =>
      Effect.gen(function*() {
        const endUser = yield* endUsers.fromCookie(request)
        const query = authorizeQuery(params)
        if (Option.isNone(endUser)) {
          const back = new URLSearchParams({ return_to: `${config.basePath}/ui/consent?${query}` })
          return redirectTo(`${config.issuer}/ui/login?${back.toString()}`)
        }
        const valid = yield* Effect.result(authorize.consentView(params))
        if (Result.isFailure(valid)) return outcomeResponse(request, valid.failure)
        const { client, scopes } = valid.success
        const form = yield* csrf.issue(request, "consent", endUser)
        return form.send(page(consentPage(ctx, {
          csrf: form.token,
          request: query,
          clientName: client.name === "" ? client.clientId : client.name,
          logoUrl: client.logoUrl,
          userEmail: endUser.value.user.email,
          scopes: scopeLines(scopes)
        })))
      })

    /** POST: a decision counts from the signed-in user with a valid token; `Authorize` then redirects (303). */
    const decide = (request: HttpServerRequest.HttpServerRequest, form: ConsentForm) =>
      Effect.gen(function*() {
        const endUser = yield* endUsers.fromCookie(request)
        if (Option.isNone(endUser)) {
          return page(
            messagePage(ctx, {
              title: "Signed out",
              message: "Your session has ended. Go back to the application and start again."
            }),
            { status: 401 }
          )
        }
        if (!(yield* csrf.verify(request, form.csrf, "consent", endUser))) return csrf.expired()
        const decision = decisionOf(form)
        if (Option.isNone(decision)) {
          return page(messagePage(ctx, { title: "Choose Allow or Deny", message: "No decision was sent." }), {
            status: 400
          })
        }
        const outcome = yield* authorize.decideConsent(form.request ?? "", endUser.value, decision.value === "approve")
        return outcome._tag === "Redirect" ? redirectTo(outcome.location, 303) : outcomeResponse(request, outcome)
      })

    return { show, decide } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
