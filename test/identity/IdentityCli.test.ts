/**
 * The identity operator commands (README, "Operator CLI", "Setting up users and clients"), run as a user would run
 * them (`dist/src/cli/main.js`; `npm test` builds first), against the test servers' database.
 * Starting the CLI costs a second or two, so independent commands run side by side.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import * as Jose from "jose"
import { Clients } from "../../src/identity/clients/Clients.js"
import { SigningKeys } from "../../src/identity/keys/SigningKeys.js"
import { Users } from "../../src/identity/users/Users.js"
import { DatabaseUrl } from "../../src/platform/Database.js"
import { runCli } from "../support/Cli.js"
import {
  exchangeCode,
  getCode,
  IdentityServers,
  IdentityTestEnv,
  login,
  serverLayerOptions
} from "../support/IdentityServers.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const cli = (args: ReadonlyArray<string>) =>
  Effect.flatMap(DatabaseUrl, (url) => promise(() => runCli(args, { DATABASE_URL: Redacted.value(url) })))

const cliJson = (args: ReadonlyArray<string>) =>
  Effect.map(cli([...args, "--json"]), (result) => {
    expect(result.code, result.stderr).toBe(0)
    return JSON.parse(result.stdout) as any
  })

const email = "cli.user@example.com"
const password = "correct horse battery staple"
const portal = {
  clientId: "cli-portal",
  secret: "a-long-enough-client-secret-123",
  redirectUri: "https://portal.example/cb"
}
const writer = {
  clientId: "cli-writer",
  secret: "another-long-client-secret-456",
  redirectUri: "https://writer.example/cb"
}

describe("identity CLI: user, role, client, keys", () => {
  it.layer(IdentityTestEnv(), serverLayerOptions)((it) => {
    it.effect(
      "user create / client create / role grant|revoke / user ban / keys rotate drive what the provider issues",
      () =>
        Effect.gen(function*() {
          const { identity, issuer } = yield* IdentityServers
          const jwksBefore = yield* promise(() => fetch(`${issuer}/oauth/jwks`).then((r) => r.json() as Promise<any>))
          const [user, client, pub, rotated, narrow, ...bad] = yield* Effect.all([
            cliJson([
              "user",
              "create",
              "--email",
              email,
              "--password",
              password,
              "--name",
              "Cli",
              "--role",
              "moderator"
            ]),
            cliJson([
              ...["client", "create", "--client-id", portal.clientId, "--secret", portal.secret],
              ...["--redirect-uri", portal.redirectUri, "--redirect-uri", "https://portal.example/cb2"],
              ...["--auto-consent", "--site", "portal", "--name", "Portal"]
            ]),
            cliJson([
              "client",
              "create",
              "--client-id",
              "cli-spa",
              "--public",
              "--redirect-uri",
              "http://127.0.0.1:5173/cb"
            ]),
            cliJson(["keys", "rotate"]),
            cliJson([
              ...["client", "create", "--client-id", writer.clientId, "--secret", writer.secret],
              // A site: `client update` below gives it write scopes, which only a client of a site may hold.
              ...["--redirect-uri", writer.redirectUri, "--auto-consent", "--site", "writer"],
              ...["--scope", "openid", "--scope", "catalog:read"]
            ]),
            // Bad arguments (no --secret, not --public): a message on stderr, a non-zero exit.
            cli(["client", "create", "--client-id", "c1", "--redirect-uri", "https://a.example/cb"]),
            // A public client is never granted moderation; nor an unknown scope.
            cli([
              ...["client", "create", "--client-id", "c2", "--public", "--redirect-uri", "https://a.example/cb"],
              ...["--scope", "openid", "--scope", "moderation"]
            ]),
            cli([
              ...["client", "create", "--client-id", "c3", "--public", "--redirect-uri", "https://a.example/cb"],
              ...["--scope", "admin:everything"]
            ])
          ], { concurrency: "unbounded" })
          for (const result of bad as Array<{ code: number; stderr: string }>) {
            expect(result.code).not.toBe(0)
            expect(result.stderr).toMatch(/^error: /m)
          }
          // `{"id","sub"}` exactly (README, "Operator CLI").
          expect(Object.keys(user).sort()).toEqual(["id", "sub"])
          expect(Number.isInteger(user.id)).toBe(true)
          expect(user.sub).toMatch(/^[0-9a-f-]{36}$/)
          expect(client).toMatchObject({
            client_id: portal.clientId,
            public: false,
            auto_consent: true,
            site: "portal"
          })
          expect(pub).toMatchObject({ client_id: "cli-spa", public: true })
          // RFC 6749 3.3: the scopes a client may request; the default unless --scope says otherwise.
          expect(client.scopes).toEqual(["openid", "profile", "email", "offline_access", "catalog:read"])
          expect(pub.scopes).toEqual(client.scopes)
          expect(narrow).toMatchObject({ client_id: writer.clientId, scopes: ["openid", "catalog:read"] })
          // OIDC Core 5.1: the operator vouches for the address of an account they create.
          const users = yield* Users
          expect(Option.map(yield* users.findById(user.id), (found) => found.emailVerified)).toEqual(Option.some(true))

          // The new key is published at once and signs only after the grace period (docs/decisions.md, "Identity: tokens and sessions").
          expect(Date.parse(rotated.activates_at) - Date.now()).toBeGreaterThan(60_000)
          const keys = yield* Effect.provide(
            SigningKeys,
            SigningKeys.layer.pipe(Layer.provide(Layer.succeedContext(yield* Effect.context<SqlClient.SqlClient>())))
          )
          const kids = (yield* keys.jwks).keys.map((k) => k.kid)
          expect(kids).toContain(rotated.kid)
          for (const key of jwksBefore.keys) expect(kids).toContain(key.kid)
          expect((yield* keys.signingKey).kid).toBe(jwksBefore.keys[0].kid)

          // Global and site roles reach the tokens.
          const [editor, , widened, ...refused] = yield* Effect.all([
            cliJson(["role", "grant", String(user.id), "editor", "--site", "portal"]),
            cliJson(["role", "grant", String(user.id), "admin"]),
            // client update --scope replaces the allowed set; write scopes and moderation only this way.
            cliJson([
              ...["client", "update", "--client-id", writer.clientId],
              ...["--scope", "openid", "--scope", "claims:write", "--scope", "moderation"]
            ]),
            cli(["client", "update", "--client-id", "cli-spa", "--scope", "moderation"]),
            cli(["client", "update", "--client-id", "no-such-client", "--scope", "openid"]),
            cli(["client", "update", "--client-id", writer.clientId])
          ], { concurrency: "unbounded" })
          expect(editor).toEqual({ id: user.id, role: "editor", site: "portal", granted: true })
          expect(widened).toMatchObject({
            client_id: writer.clientId,
            scopes: ["openid", "claims:write", "moderation"]
          })
          for (const result of refused as Array<{ code: number; stderr: string }>) {
            expect(result.code).not.toBe(0)
            expect(result.stderr).toMatch(/^error: /m)
          }
          const session = yield* promise(() => login(identity, { email, password }))
          expect(Jose.decodeJwt(session.accessToken)).toMatchObject({ uid: user.id, roles: ["moderator", "admin"] })
          const { code } = yield* promise(() => getCode(identity, portal, session.accessToken, { scope: "openid" }))
          const tokens = yield* promise(() => exchangeCode(identity, portal, code))
          expect(Jose.decodeJwt(tokens.body.access_token)).toMatchObject({ site: "portal", site_roles: ["editor"] })
          // The provider reads the updated scopes (its first look at this client comes after the update).
          const write = yield* promise(() =>
            getCode(identity, writer, session.accessToken, { scope: "openid claims:write moderation" })
          )
          const writeTokens = yield* promise(() => exchangeCode(identity, writer, write.code))
          expect(writeTokens.body.scope).toBe("openid claims:write moderation")

          yield* Effect.all([
            cliJson(["role", "revoke", String(user.id), "editor", "--site", "portal"]),
            cliJson(["role", "revoke", String(user.id), "admin"])
          ], { concurrency: "unbounded" })
          const again = yield* promise(() => login(identity, { email, password }))
          expect(Jose.decodeJwt(again.accessToken).roles).toEqual(["moderator"])
          const second = yield* promise(() => getCode(identity, portal, again.accessToken, { scope: "openid" }))
          const after = yield* promise(() => exchangeCode(identity, portal, second.code))
          expect(Jose.decodeJwt(after.body.access_token).site_roles).toEqual([])

          // A banned account is 403 at sign-in and its tokens die (README, "Flows"; docs/decisions.md, "Identity: tokens and sessions").
          expect(yield* cliJson(["user", "ban", String(user.id)])).toEqual({ id: user.id, banned: true })
          const banned = yield* promise(() =>
            fetch(`${identity}/api/v1/auth/login`, {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ email, password })
            })
          )
          expect(banned.status).toBe(403)
          const me = yield* promise(() =>
            fetch(`${identity}/api/v1/auth/me`, { headers: { authorization: `Bearer ${again.accessToken}` } })
          )
          expect(me.status).toBe(403)
        }).pipe(Effect.scoped),
      { timeout: 180_000 }
    )

    it.effect("the validation behind the commands: passwords, roles, site roles, secrets, redirect URIs, reserved ids", () =>
      Effect.gen(function*() {
        const users = yield* Users
        const clients = yield* Clients
        const userError = (effect: Effect.Effect<unknown, { readonly _tag: string }>) =>
          Effect.map(Effect.flip(effect), (e) => e._tag)
        expect(
          yield* userError(
            users.create({ email: "a@example.com", password: "short", name: "", roles: [], emailVerified: true })
          )
        )
          .toBe("UserInputError")
        expect(
          yield* userError(
            users.create({
              email: "b@example.com",
              password: "long-enough",
              name: "",
              roles: ["god"],
              emailVerified: true
            })
          )
        ).toBe("UserInputError")
        expect(yield* userError(users.grantRole(1, "admin", Option.some("portal")))).toBe("UserInputError")
        expect(yield* userError(users.grantRole(1, "user", Option.none()))).toBe("UserInputError")
        const base = {
          name: "x",
          autoConsent: false,
          site: null,
          logoUrl: "",
          refreshTtlSeconds: null,
          contentLimit: "sfw" as const
        }
        for (
          const input of [
            { clientId: "c2", secret: "short", redirectUris: ["https://a.example/cb"] },
            { clientId: "c3", secret: "x".repeat(30), redirectUris: ["https://a.example/cb#fragment"] },
            { clientId: "c4", secret: "x".repeat(30), redirectUris: ["http://a.example/cb"] },
            { clientId: "c5", secret: "x".repeat(30), redirectUris: [] },
            { clientId: "shiori", secret: null, redirectUris: ["https://a.example/cb"] },
            { clientId: "bad id", secret: null, redirectUris: ["https://a.example/cb"] },
            // Allowed scopes: known ones, at least one, never moderation for a public client.
            { clientId: "c6", secret: null, redirectUris: ["https://a.example/cb"], allowedScopes: ["moderation"] },
            { clientId: "c7", secret: "x".repeat(30), redirectUris: ["https://a.example/cb"], allowedScopes: ["root"] },
            { clientId: "c8", secret: "x".repeat(30), redirectUris: ["https://a.example/cb"], allowedScopes: [] }
          ]
        ) expect(yield* userError(clients.create({ ...base, ...input }))).toBe("ClientInputError")
        const spa = yield* clients.create({
          ...base,
          clientId: "c9",
          secret: null,
          redirectUris: ["https://a.example/cb"]
        })
        expect(spa.allowedScopes).toEqual(["openid", "profile", "email", "offline_access", "catalog:read"])
        expect(yield* userError(clients.updateScopes("c9", ["openid", "moderation"]))).toBe("ClientInputError")
        expect(yield* userError(clients.updateScopes("c-unknown", ["openid"]))).toBe("ClientInputError")
        // The database holds the public-client rule too (migrations/0012).
        const sql = yield* SqlClient.SqlClient
        const bypass = yield* Effect.exit(
          sql`UPDATE oauth_clients SET allowed_scopes = ARRAY['moderation'] WHERE client_id = 'c9'`
        )
        expect(bypass._tag).toBe("Failure")
      }))
  })
})
