/**
 * Relying-party logout (docs/decisions.md, "Identity: protocol"). `/oauth/logout` only forwards to
 * the logout page; the page ends the session (after confirmation unless a valid `id_token_hint` for
 * the signed-in user is given) and returns to `redirect` only when its origin equals the origin of
 * a registered redirect URI of `client_id`. `/oauth/post-logout-redirect` answers that same check.
 * The return target is always the re-serialised URL, never the raw string (no parser differential).
 */
import { Context, Effect, Layer, Option } from "effect"
import type { LogoutParams } from "../../../schema/Identity/Pages.js"
import type { EndUser } from "../auth/EndUsers.js"
import { allowedLogoutTarget, Clients } from "../clients/Clients.js"
import type { Client } from "../clients/Clients.js"
import { IdentityConfig } from "../shared/IdentityConfig.js"
import { Tokens } from "../tokens/Tokens.js"

export interface LogoutTarget {
  readonly client: Option.Option<Client>
  /** Where to go afterwards, `state` appended; none when not allowed or not given. */
  readonly location: Option.Option<string>
}

export type PostLogoutOutcome =
  | { readonly _tag: "Redirect"; readonly location: string }
  | {
    readonly _tag: "Refused"
    readonly code: "UNKNOWN_CLIENT" | "LOGOUT_TARGET_NOT_ALLOWED" | "INVALID_AUTHORIZATION_REQUEST"
  }

export class Logout extends Context.Service<Logout>()("identity/Logout", {
  make: Effect.gen(function*() {
    const config = yield* IdentityConfig
    const clients = yield* Clients
    const tokens = yield* Tokens

    /** `/oauth/logout` -> the logout page with the same parameters. */
    const entryLocation = (params: LogoutParams) => {
      const query = new URLSearchParams()
      for (const [key, value] of Object.entries(params)) if (value !== undefined) query.append(key, value)
      return `${config.issuer}/ui/logout${query.size > 0 ? `?${query.toString()}` : ""}`
    }

    const target = Effect.fn("Logout.target")(function*(input: {
      readonly clientId: string | undefined
      readonly redirect: string | undefined
      readonly state: string | undefined
    }) {
      const client = input.clientId === undefined ? Option.none<Client>() : yield* clients.find(input.clientId)
      const location = Option.isNone(client) || input.redirect === undefined
        ? Option.none<string>()
        : Option.map(allowedLogoutTarget(client.value, input.redirect), (href) => {
          if (input.state === undefined || input.state === "") return href
          const url = new URL(href)
          url.searchParams.append("state", input.state)
          return url.href
        })
      return { client, location } satisfies LogoutTarget
    })

    /** A valid id_token_hint of the signed-in user (for the client, when one is named) skips confirmation. */
    const hintConfirms = Effect.fn("Logout.hintConfirms")(
      function*(hint: string | undefined, endUser: EndUser, clientId: string | undefined) {
        if (hint === undefined || hint === "") return false
        const claims = yield* Effect.option(tokens.verifyIdTokenHint(hint))
        if (Option.isNone(claims)) return false
        const audiences = typeof claims.value.aud === "string" ? [claims.value.aud] : claims.value.aud
        return claims.value.sub === endUser.user.sub && (clientId === undefined || audiences.includes(clientId))
      }
    )

    const postLogoutRedirect = Effect.fn("Logout.postLogoutRedirect")(
      function*(params: { readonly client_id?: string | undefined; readonly redirect?: string | undefined }) {
        if (params.client_id === undefined || params.redirect === undefined) {
          return { _tag: "Refused", code: "INVALID_AUTHORIZATION_REQUEST" } satisfies PostLogoutOutcome
        }
        const client = yield* clients.find(params.client_id)
        if (Option.isNone(client)) return { _tag: "Refused", code: "UNKNOWN_CLIENT" } satisfies PostLogoutOutcome
        const allowed = allowedLogoutTarget(client.value, params.redirect)
        return Option.isSome(allowed)
          ? { _tag: "Redirect", location: allowed.value } satisfies PostLogoutOutcome
          : { _tag: "Refused", code: "LOGOUT_TARGET_NOT_ALLOWED" } satisfies PostLogoutOutcome
      }
    )

    return { entryLocation, target, hintConfirms, postLogoutRedirect } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
