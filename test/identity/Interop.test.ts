/**
 * Interoperability (docs/decisions.md, "Identity: protocol": OAuth libraries work unmodified): the provider driven by two real relying-party
 * libraries with no special-casing: openid-client 6 and oauth4webapi 3. Discovery, authorization
 * code + PKCE (the code comes from authorize called with the user's Bearer token, read from the
 * 302 Location), the token exchange, the id_token signature checked against the JWKS with jose,
 * userinfo, refresh and revocation. Only the loopback http issuer needs the libraries'
 * `allowInsecureRequests` option.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Jose from "jose"
import * as oauth from "oauth4webapi"
import * as client from "openid-client"
import {
  createClient,
  IdentityServers,
  IdentityTestEnv,
  serverLayerOptions,
  signIn
} from "../support/IdentityServers.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

/** What a relying party's back end does with the user's Bearer token: authorize, read the Location. */
const authorizeWithBearer = async (url: URL, bearer: string): Promise<URL> => {
  const res = await fetch(url, { redirect: "manual", headers: { authorization: `Bearer ${bearer}` } })
  if (res.status !== 302) throw new Error(`authorize answered ${res.status}: ${await res.text()}`)
  return new URL(res.headers.get("location")!)
}

describe("interoperability with certified-style relying-party libraries", () => {
  it.layer(IdentityTestEnv(), serverLayerOptions)((it) => {
    it.effect("openid-client 6: discovery, code + PKCE, id_token (jose + JWKS), userinfo, refresh, revoke (basic and post)", () =>
      Effect.gen(function*() {
        const { identity, issuer } = yield* IdentityServers
        const session = yield* signIn(identity, { name: "Illya" })
        for (const method of ["client_secret_post", "client_secret_basic"] as const) {
          const rp = yield* createClient({ redirectUris: ["http://127.0.0.1:8765/callback"] })
          const config = yield* promise(() =>
            client.discovery(
              new URL(issuer),
              rp.clientId,
              rp.secret!,
              method === "client_secret_basic"
                ? client.ClientSecretBasic(rp.secret!)
                : client.ClientSecretPost(rp.secret!),
              { execute: [client.allowInsecureRequests] }
            )
          )
          expect(config.serverMetadata().issuer).toBe(issuer)
          const verifier = client.randomPKCECodeVerifier()
          const state = client.randomState()
          const nonce = client.randomNonce()
          const url = client.buildAuthorizationUrl(config, {
            redirect_uri: rp.redirectUri,
            scope: "openid profile email",
            code_challenge: yield* promise(() => client.calculatePKCECodeChallenge(verifier)),
            code_challenge_method: "S256",
            state,
            nonce
          })
          const callback = yield* promise(() => authorizeWithBearer(url, session.accessToken))
          const tokens = yield* promise(() =>
            client.authorizationCodeGrant(config, callback, {
              pkceCodeVerifier: verifier,
              expectedState: state,
              expectedNonce: nonce,
              idTokenExpected: true
            })
          )
          const claims = tokens.claims()!
          expect(claims).toMatchObject({ iss: issuer, sub: session.user.sub, aud: rp.clientId, nonce })
          expect(tokens.expires_in).toBe(900)

          // The signature, independently, against the published keys.
          const jwks = Jose.createRemoteJWKSet(new URL(config.serverMetadata().jwks_uri!))
          const verified = yield* promise(() =>
            Jose.jwtVerify(tokens.id_token!, jwks, { issuer, audience: rp.clientId, algorithms: ["RS256"] })
          )
          expect(verified.payload.sub).toBe(session.user.sub)

          const info = yield* promise(() => client.fetchUserInfo(config, tokens.access_token, claims.sub))
          expect(info).toMatchObject({
            sub: session.user.sub,
            id: session.user.id,
            name: "Illya",
            email: session.user.email
          })

          const refreshed = yield* promise(() => client.refreshTokenGrant(config, tokens.refresh_token!))
          expect(refreshed.refresh_token).not.toBe(tokens.refresh_token)
          expect(refreshed.claims()?.sub).toBe(session.user.sub)

          yield* promise(() => client.tokenRevocation(config, refreshed.refresh_token!))
          const after = yield* promise(() =>
            client.refreshTokenGrant(config, refreshed.refresh_token!).then(() => "ok", (e) => e)
          )
          expect(after).toBeInstanceOf(client.ResponseBodyError)
          expect((after as client.ResponseBodyError).error).toBe("invalid_grant")

          // RP-initiated logout URL built by the library points at our end_session_endpoint.
          const logout = client.buildEndSessionUrl(config, { post_logout_redirect_uri: "http://127.0.0.1:8765/" })
          expect(logout.href.startsWith(`${issuer}/oauth/logout?`)).toBe(true)
        }
      }))

    it.effect("oauth4webapi 3: OIDC and RFC 8414 discovery, public client + PKCE, confidential client, userinfo, refresh, revoke", () =>
      Effect.gen(function*() {
        const { identity, issuer } = yield* IdentityServers
        const session = yield* signIn(identity)
        const options = { [oauth.allowInsecureRequests]: true }
        const issuerUrl = new URL(issuer)
        for (const algorithm of ["oidc", "oauth2"] as const) {
          const as = yield* promise(async () =>
            oauth.processDiscoveryResponse(
              issuerUrl,
              await oauth.discoveryRequest(issuerUrl, { algorithm, ...options })
            )
          )
          expect(as.issuer).toBe(issuer)
          for (const kind of ["public", "confidential"] as const) {
            const rp = yield* createClient({ public: kind === "public", redirectUris: ["http://127.0.0.1:8766/cb"] })
            const rpClient: oauth.Client = { client_id: rp.clientId }
            const auth = kind === "public" ? oauth.None() : oauth.ClientSecretBasic(rp.secret!)
            const verifier = oauth.generateRandomCodeVerifier()
            const state = oauth.generateRandomState()
            const nonce = oauth.generateRandomNonce()
            const url = new URL(as.authorization_endpoint!)
            url.search = new URLSearchParams({
              client_id: rp.clientId,
              redirect_uri: rp.redirectUri,
              response_type: "code",
              scope: "openid email",
              state,
              nonce,
              code_challenge: yield* promise(() => oauth.calculatePKCECodeChallenge(verifier)),
              code_challenge_method: "S256"
            }).toString()
            const callback = yield* promise(() => authorizeWithBearer(url, session.accessToken))
            const params = oauth.validateAuthResponse(as, rpClient, callback, state)
            const result = yield* promise(async () =>
              oauth.processAuthorizationCodeResponse(
                as,
                rpClient,
                await oauth.authorizationCodeGrantRequest(
                  as,
                  rpClient,
                  auth,
                  params,
                  rp.redirectUri,
                  verifier,
                  options
                ),
                { expectedNonce: nonce, requireIdToken: true }
              )
            )
            const claims = oauth.getValidatedIdTokenClaims(result)!
            expect(claims.sub).toBe(session.user.sub)
            const jwks = Jose.createRemoteJWKSet(new URL(as.jwks_uri!))
            yield* promise(() => Jose.jwtVerify(result.id_token!, jwks, { issuer, audience: rp.clientId }))

            const info = yield* promise(async () =>
              oauth.processUserInfoResponse(
                as,
                rpClient,
                claims.sub,
                await oauth.userInfoRequest(as, rpClient, result.access_token, options)
              )
            )
            expect(info).toMatchObject({ sub: session.user.sub, email: session.user.email })
            expect(info).not.toHaveProperty("name")

            const refreshed = yield* promise(async () =>
              oauth.processRefreshTokenResponse(
                as,
                rpClient,
                await oauth.refreshTokenGrantRequest(as, rpClient, auth, result.refresh_token!, options)
              )
            )
            expect(refreshed.access_token).not.toBe(result.access_token)
            yield* promise(async () =>
              oauth.processRevocationResponse(
                await oauth.revocationRequest(as, rpClient, auth, refreshed.refresh_token!, options)
              )
            )
            const reuse = yield* promise(async () =>
              oauth.processRefreshTokenResponse(
                as,
                rpClient,
                await oauth.refreshTokenGrantRequest(as, rpClient, auth, refreshed.refresh_token!, options)
              ).then(() => "ok", (e) => e)
            )
            expect(reuse).toBeInstanceOf(oauth.ResponseBodyError)
          }
        }
      }))
  })
})
