/**
 * Every write route of the identity provider (every endpoint of `IdentityApi` whose method is not GET
 * or HEAD: JSON, form and multipart) gets `PROPERTY_RUNS` bodies generated from its own request
 * schema, hostile mutations of them and garbage bytes (test/properties/Generate.ts), signed in and
 * with the page's CSRF token where the route needs them, so the body is decoded. Whatever comes in,
 * the answer is never a 5xx, and every refusal is in the route's style (docs/api-contract.md,
 * "Errors: identity (OAuth errors and the envelope)"): an RFC 6749 section 5.2 error from the closed
 * set on the protocol endpoints, the envelope with a registered code and that code's status
 * elsewhere, an HTML page on the pages. A route without an entry in the set-up table below fails.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { IdentityApi } from "../../schema/Api/IdentityApi.js"
import { EnvelopeCodes } from "../../schema/Identity/Envelope.js"
import { OAuthErrorCode } from "../../schema/Identity/OAuthError.js"
import type { Clients } from "../../src/identity/clients/Clients.js"
import type { Users } from "../../src/identity/users/Users.js"
import {
  codeParams,
  cookiesOf,
  createClient,
  hiddenValue,
  IdentityServers,
  IdentityTestEnv,
  login,
  serverLayerOptions,
  signIn,
  type TestClient,
  tokensFor
} from "../support/IdentityServers.js"
import {
  type Answer,
  describeFailure,
  MIN_REACHED,
  PROPERTY_RUNS,
  type RouteSetup,
  runRoute,
  summarize,
  type Verdict,
  type WriteRoute,
  writeRoutes
} from "./Generate.js"

const routes = writeRoutes(IdentityApi)

// ---------------------------------------------------------------------------------------------
// Set-up: what each route needs so its body is decoded
// ---------------------------------------------------------------------------------------------

interface Context {
  readonly identity: string
  readonly client: TestClient
}

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

type SignedIn = Effect.Success<ReturnType<typeof signIn>>

/**
 * A fresh user's Bearer token, and the bodies `valid` makes for that user: each route signs in its
 * own user, so one route's writes never gate another's.
 */
const signedIn = (ctx: Context, valid: (s: SignedIn) => ReadonlyArray<unknown> = () => []) =>
  Effect.map(signIn(ctx.identity), (s) => ({ headers: bearer(s.accessToken), valid: valid(s) }))

/** An address nobody has. */
const freshEmail = (what: string) =>
  `${what}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}@example.com`

/**
 * A page's form: its CSRF cookie and token (bound to the session when `session` is given), the
 * hidden fields named in `hidden`, and whole forms: `valid` with the token and the hidden fields.
 */
const pageForm = (
  ctx: Context,
  page: string,
  options: {
    readonly session?: string
    readonly hidden?: ReadonlyArray<string>
    readonly valid?: ReadonlyArray<Record<string, string>>
  } = {}
) =>
  Effect.gen(function*() {
    const res = yield* promise(() =>
      fetch(`${ctx.identity}${page}`, {
        redirect: "manual",
        headers: options.session === undefined ? {} : { cookie: options.session }
      })
    )
    const html = yield* promise(() => res.text())
    if (res.status !== 200) return yield* Effect.die(new Error(`GET ${page}: ${res.status} ${html.slice(0, 200)}`))
    const cookie = [options.session, ...cookiesOf(res)].filter((c) => c !== undefined).join("; ")
    const fields: Record<string, string> = { csrf: hiddenValue(html, "csrf") }
    for (const name of options.hidden ?? []) fields[name] = hiddenValue(html, name)
    return {
      headers: { cookie },
      fields: [fields],
      valid: (options.valid ?? []).map((form) => ({ ...fields, ...form }))
    } satisfies RouteSetup
  })

/** A signed-in browser on one of the account's pages, with the forms `valid` makes for its user. */
const accountForm = (
  ctx: Context,
  page: string,
  valid: (s: SignedIn) => ReadonlyArray<Record<string, string>> = () => []
) => Effect.flatMap(signIn(ctx.identity), (s) => pageForm(ctx, page, { session: s.cookie, valid: valid(s) }))

/**
 * Several users: for routes that throttle per account (five wrong current passwords, then 429).
 * Eight for `npm test`, more for a long run, so most bodies still reach the handler.
 */
const ACCOUNTS = Math.max(8, Math.ceil(PROPERTY_RUNS / 250))

const perUser = <A, R>(n: number, make: Effect.Effect<A, never, R>) =>
  Effect.all(Array.from({ length: n }, () => make), { concurrency: 2 })

/** The pending value a send-code answers for `email` (registration, recovery). */
const pendingOf = (ctx: Context, path: string, email: string) =>
  Effect.map(
    promise(() =>
      fetch(`${ctx.identity}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ email })
      }).then((res) => res.json() as Promise<any>)
    ),
    (body) => ({ email, pending: body.data.pending as string })
  )

const clientFields = (client: TestClient) => ({ client_id: client.clientId, client_secret: client.secret ?? "" })

/**
 * Each write route by `group.endpoint`. A new write route gets an entry here; until it does, its
 * test fails and says so.
 */
const setups: Record<
  string,
  (ctx: Context) => Effect.Effect<RouteSetup | ReadonlyArray<RouteSetup>, never, Users | Clients>
> = {
  "oauth.token": (ctx) =>
    Effect.succeed({
      fields: [
        clientFields(ctx.client),
        { ...clientFields(ctx.client), grant_type: "authorization_code", redirect_uri: ctx.client.redirectUri },
        { ...clientFields(ctx.client), grant_type: "refresh_token" }
      ]
    }),
  "oauth.userinfoPost": (ctx) =>
    Effect.gen(function*() {
      const s = yield* signIn(ctx.identity)
      const tokens = yield* promise(() => tokensFor(ctx.identity, ctx.client, s))
      return { headers: bearer(tokens.access_token) }
    }),
  "oauth.revoke": (ctx) =>
    Effect.gen(function*() {
      const s = yield* signIn(ctx.identity)
      const tokens = yield* promise(() => tokensFor(ctx.identity, ctx.client, s))
      return {
        fields: [clientFields(ctx.client), { ...clientFields(ctx.client), token: tokens.refresh_token }]
      }
    }),
  "auth.login": (ctx) =>
    Effect.map(signIn(ctx.identity), (s) => ({
      fields: [{ email: s.user.email }],
      valid: [{ email: s.user.email, password: s.user.password }]
    })),
  "account.updateMe": (ctx) => signedIn(ctx, () => [{ name: "A new name", bio: "A few words." }]),
  "account.uploadAvatar": (ctx) => signedIn(ctx),
  "account.sendEmailCode": (ctx) => signedIn(ctx, () => [{ email: freshEmail("new") }]),
  // The current password goes with the change, counted per account like a password change's: several users.
  "account.changeEmail": (ctx) =>
    perUser(
      ACCOUNTS,
      signedIn(ctx, (s) => [{ email: freshEmail("new"), code: "123456", current_password: s.user.password }])
    ),
  "account.changePassword": (ctx) =>
    perUser(
      ACCOUNTS,
      signedIn(ctx, (s) => [{ current_password: s.user.password, new_password: "a much longer new password" }])
    ),
  "account.endSession": (ctx) =>
    Effect.gen(function*() {
      const s = yield* signIn(ctx.identity)
      // A second sign-in of the same user: a session that exists and that the requests may end.
      yield* promise(() => login(ctx.identity, s.user))
      const list = yield* promise(() =>
        fetch(`${ctx.identity}/api/v1/auth/sessions`, { headers: bearer(s.accessToken) }).then((r) => r.json())
      ) as Effect.Effect<any>
      const others = (list.data.items as Array<{ id: string; current: boolean }>).filter((i) => !i.current)
      return { headers: bearer(s.accessToken), params: others.map(({ id }) => ({ id })) }
    }),
  "account.sendRegistrationCode": () => Effect.succeed({ valid: [{ email: freshEmail("register") }] }),
  "account.register": (ctx) =>
    Effect.map(pendingOf(ctx, "/api/v1/auth/register/send-code", freshEmail("register")), ({ email, pending }) => ({
      valid: [{ email, pending, code: "123456", password: "a long enough password", name: "New User" }]
    })),
  "account.sendRecoveryCode": () => Effect.succeed({ valid: [{ email: freshEmail("recover") }] }),
  "account.resetPassword": (ctx) =>
    // Recoveries under way, of an account and of an address without one: each takes five wrong codes.
    Effect.all(
      Array.from({ length: 8 }, (_, i) =>
        Effect.gen(function*() {
          const email = i % 2 === 0 ? (yield* signIn(ctx.identity)).user.email : freshEmail("recover")
          const { pending } = yield* pendingOf(ctx, "/api/v1/auth/password/forgot/send-code", email)
          return { valid: [{ pending, code: "123456", password: "a long enough password" }] } satisfies RouteSetup
        })),
      { concurrency: 2 }
    ),
  "creator.apply": (ctx) =>
    // One application per user: several users, so more than the first body reaches the database.
    perUser(
      ACCOUNTS,
      Effect.map(signedIn(ctx), (setup) => ({
        ...setup,
        valid: [
          { statement: "I write visual novels and would like to list my own works in the catalog." },
          { statement: "Twenty characters at least.", portfolio_url: "https://example.com/works" }
        ]
      }))
    ),
  "twoFactor.setup": (ctx) => signedIn(ctx),
  // The current password goes with every change of the factor, counted per account like a password
  // change's: several users.
  "twoFactor.enable": (ctx) =>
    perUser(
      ACCOUNTS,
      Effect.gen(function*() {
        const setup = yield* signedIn(ctx, (s) => [{ code: "123456", current_password: s.user.password }])
        // A pending key, so a code is checked rather than refused as 409 (nothing to enable).
        yield* promise(() => fetch(`${ctx.identity}/api/v1/auth/2fa/setup`, { method: "POST", headers: setup.headers }))
        return setup
      })
    ),
  "twoFactor.disable": (ctx) =>
    perUser(ACCOUNTS, signedIn(ctx, (s) => [{ code: "123456", current_password: s.user.password }])),
  "twoFactor.recoveryCodes": (ctx) =>
    perUser(ACCOUNTS, signedIn(ctx, (s) => [{ code: "123456", current_password: s.user.password }])),
  "pages.submitLogin": (ctx) =>
    Effect.gen(function*() {
      const s = yield* signIn(ctx.identity)
      const form = yield* pageForm(ctx, "/api/v1/ui/login")
      const csrf = form.fields[0]!.csrf!
      return { ...form, fields: [{ csrf }], valid: [{ csrf, email: s.user.email, password: s.user.password }] }
    }),
  "pages.submitConsent": (ctx) =>
    Effect.gen(function*() {
      const client = yield* createClient({ autoConsent: false })
      const s = yield* signIn(ctx.identity)
      const query = new URLSearchParams(codeParams(client, { scope: "openid profile" }))
      const form = yield* pageForm(ctx, `/api/v1/ui/consent?${query}`, { session: s.cookie, hidden: ["request"] })
      const fields = form.fields[0]!
      return { ...form, fields: [fields, { ...fields, decision: "deny" }, { ...fields, decision: "approve" }] }
    }),
  "pages.submitLogout": (ctx) =>
    Effect.gen(function*() {
      const s = yield* signIn(ctx.identity)
      const query = new URLSearchParams({
        client_id: ctx.client.clientId,
        redirect: ctx.client.redirectUri,
        state: "s"
      })
      return yield* pageForm(ctx, `/api/v1/ui/logout?${query}`, {
        session: s.cookie,
        hidden: ["client_id", "redirect", "state"]
      })
    }),
  "accountPages.registerSendCode": (ctx) =>
    Effect.map(pageForm(ctx, "/api/v1/ui/register"), (form) => ({
      ...form,
      fields: [form.fields[0]!, { ...form.fields[0]!, email: `register-${Date.now()}@example.com` }]
    })),
  "accountPages.submitRegister": (ctx) =>
    Effect.gen(function*() {
      const email = freshEmail("register")
      const form = yield* pageForm(ctx, "/api/v1/ui/register", {
        valid: [{ email, code: "123456", name: "New User", password: "a long enough password" }]
      })
      // The first step, so the browser holds the cookie with the code's pending value.
      const sent = yield* promise(() =>
        fetch(`${ctx.identity}/api/v1/ui/register/send-code`, {
          method: "POST",
          redirect: "manual",
          headers: { ...form.headers, "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ csrf: form.fields[0]!.csrf!, email }).toString()
        })
      )
      return { ...form, headers: { cookie: [form.headers.cookie, ...cookiesOf(sent)].join("; ") } }
    }),
  "recoveryPages.recoverySendCode": (ctx) =>
    pageForm(ctx, "/api/v1/ui/password/forgot", { valid: [{ email: freshEmail("recover") }] }),
  "recoveryPages.submitRecovery": (ctx) =>
    // Recoveries under way, of accounts and of addresses without one: each takes five wrong codes.
    Effect.all(
      Array.from({ length: 8 }, (_, i) =>
        Effect.gen(function*() {
          const email = i % 2 === 0 ? (yield* signIn(ctx.identity)).user.email : freshEmail("recover")
          const form = yield* pageForm(ctx, "/api/v1/ui/password/forgot")
          const sent = yield* promise(() =>
            fetch(`${ctx.identity}/api/v1/ui/password/forgot/send-code`, {
              method: "POST",
              headers: { ...form.headers, "content-type": "application/x-www-form-urlencoded" },
              body: new URLSearchParams({ csrf: form.fields[0]!.csrf!, email }).toString()
            })
          )
          const html = yield* promise(() => sent.text())
          if (sent.status !== 200) {
            return yield* Effect.die(new Error(`send-code: ${sent.status} ${html.slice(0, 200)}`))
          }
          const fields = { csrf: hiddenValue(html, "csrf"), pending: hiddenValue(html, "pending"), email }
          return {
            headers: form.headers,
            fields: [fields],
            valid: [{ ...fields, code: "123456", password: "a long enough password" }]
          } satisfies RouteSetup
        })),
      { concurrency: 2 }
    ),
  "accountPages.saveProfile": (ctx) => accountForm(ctx, "/api/v1/ui/account", () => [{ name: "New name", bio: "Bio" }]),
  "accountPages.uploadAvatarForm": (ctx) => accountForm(ctx, "/api/v1/ui/account"),
  "accountPages.sendEmailCodeForm": (ctx) =>
    accountForm(ctx, "/api/v1/ui/account", () => [{ email: freshEmail("new") }]),
  "accountPages.changeEmailForm": (ctx) =>
    perUser(
      ACCOUNTS,
      accountForm(ctx, "/api/v1/ui/account", (s) => [
        { email: freshEmail("new"), code: "123456", current_password: s.user.password }
      ])
    ),
  "accountPages.changePasswordForm": (ctx) =>
    perUser(
      ACCOUNTS,
      accountForm(ctx, "/api/v1/ui/account", (s) => [
        { current_password: s.user.password, new_password: "a much longer new password" }
      ])
    ),
  "accountPages.endSessionForm": (ctx) => accountForm(ctx, "/api/v1/ui/account"),
  "twoFactorPages.submitTwoFactor": (ctx) =>
    perUser(
      ACCOUNTS,
      accountForm(ctx, "/api/v1/ui/account/two-factor", (s) => [
        { action: "enable", code: "123456", current_password: s.user.password }
      ])
    )
}

// ---------------------------------------------------------------------------------------------
// The route's style
// ---------------------------------------------------------------------------------------------

type Style = "oauth" | "envelope" | "page"

/** How a route refuses, from what it declares (schema/Api/IdentityErrors.ts): OAuth JSON, the envelope or HTML. */
const styleOf = (route: WriteRoute): Style => {
  if (route.errorIdentifiers.some((id) => id.startsWith("OAuthError"))) return "oauth"
  if (route.errorIdentifiers.some((id) => id.startsWith("EnvelopeError"))) return "envelope"
  if (route.path.startsWith("/api/v1/ui/")) return "page"
  return route.path.startsWith("/api/v1/oauth/") ? "oauth" : "envelope"
}

const OAUTH_ERRORS: ReadonlySet<string> = new Set(OAuthErrorCode.literals)
const ENVELOPE_STATUS: ReadonlyMap<number, number> = new Map(
  Object.values(EnvelopeCodes).map((e) => [e.code, e.status] as const)
)
/** Envelope codes of a Bearer token that did not pass: the request stopped before its body mattered. */
const TOKEN_GATES: ReadonlySet<number> = new Set([
  EnvelopeCodes.TOKEN_MISSING.code,
  EnvelopeCodes.TOKEN_INVALID.code,
  EnvelopeCodes.TOKEN_EXPIRED.code
])

const parse = (text: string): any => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** Never a 5xx; a refusal in the route's style, from its registry. */
const judgeFor = (style: Style) => (_: unknown, answer: Answer): Verdict => {
  const body = answer.contentType.startsWith("application/json") ? parse(answer.text) : undefined
  const gated = answer.status === 429 ||
    (answer.status === 401 && (TOKEN_GATES.has(body?.code) || body?.error === "invalid_token")) ||
    // The pages' CSRF check (and the envelope's 15010 for a caller that asked for JSON).
    (style === "page" && answer.status === 403) || body?.code === EnvelopeCodes.CSRF_TOKEN_INVALID.code
  const fail = (violation: string): Verdict => ({ violation, reached: !gated })
  if (answer.status === 0) return fail("no answer")
  if (answer.status >= 500) return fail("server error")
  if (answer.status < 400) return { violation: undefined, reached: !gated }
  switch (style) {
    case "oauth": {
      if (body === undefined) return fail(`not an OAuth error: ${answer.contentType}`)
      if (!OAUTH_ERRORS.has(body.error)) return fail(`error ${JSON.stringify(body.error)} outside the OAuth set`)
      if (typeof body.error_description !== "string") return fail("no error_description")
      break
    }
    case "envelope": {
      if (body === undefined) return fail(`not an envelope: ${answer.contentType}`)
      const status = ENVELOPE_STATUS.get(body.code)
      if (status === undefined) return fail(`code ${JSON.stringify(body.code)} outside EnvelopeCodes`)
      if (status !== answer.status) return fail(`code ${body.code} answered with another status`)
      break
    }
    case "page": {
      if (!answer.contentType.startsWith("text/html")) return fail(`not an HTML page: ${answer.contentType}`)
      break
    }
  }
  return { violation: undefined, reached: !gated }
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

/** Limits no generated run reaches (each has its own test); the per-account ones are met with several users. */
const unlimited = {
  IDENTITY_TOKEN_RATE_BURST: "100000000",
  IDENTITY_TOKEN_AUTH_FAILURE_BURST: "100000000",
  IDENTITY_LOGIN_IP_BURST: "100000000",
  IDENTITY_LOGIN_FAILURE_BURST: "100000000",
  IDENTITY_LOGIN_ACCOUNT_FREE_FAILURES: "200000000",
  IDENTITY_CODE_IP_BURST: "100000000",
  IDENTITY_AUTHORIZE_RATE_BURST: "100000000",
  IDENTITY_USERINFO_RATE_BURST: "100000000",
  IDENTITY_REVOKE_RATE_BURST: "100000000",
  IDENTITY_AVATAR_USER_BURST: "100000000",
  IDENTITY_AVATAR_IP_BURST: "100000000"
}

describe("identity write routes take generated and hostile bodies (docs/api-contract.md, \"Errors: identity (OAuth errors and the envelope)\")", () => {
  it("finds the identity provider's write routes, each with a set-up", () => {
    expect(routes.length).toBeGreaterThanOrEqual(29)
    const missing = routes.filter((r) => setups[r.key] === undefined).map((r) => `${r.method} ${r.path} (${r.key})`)
    expect(missing, `write routes missing from the set-up table of ${import.meta.filename}`).toEqual([])
  })

  it.layer(IdentityTestEnv(unlimited), { ...serverLayerOptions, timeout: "300 seconds" })((it) => {
    for (const route of routes) {
      it.effect(
        `${route.method} ${route.path} (${route.key}): ${PROPERTY_RUNS} bodies, never a 5xx, refusals in the route's style`,
        () =>
          Effect.gen(function*() {
            const make = setups[route.key]
            if (make === undefined) {
              return yield* Effect.die(
                new Error(`${route.key} has no entry in the set-up table of test/properties/IdentityWrites.test.ts`)
              )
            }
            const { identity } = yield* IdentityServers
            const client = yield* createClient()
            const setup = yield* make({ identity, client })
            const result = yield* runRoute(identity, route, setup, judgeFor(styleOf(route)))
            console.log(summarize(result))
            expect(result.failures.map(describeFailure).join("\n\n"), "failures").toBe("")
            expect(result.reached / result.total, `share of answers past the gates: ${summarize(result)}`)
              .toBeGreaterThanOrEqual(MIN_REACHED)
          }),
        Math.max(120_000, PROPERTY_RUNS * 200)
      )
    }
  })
})
