/**
 * The identity provider's services, each built once per server stack. Needs the SQL pool and
 * `AppSecret` from the composition root.
 */
import { Config, Effect, Layer } from "effect"
import {
  type BucketPolicy,
  type PolicySettings,
  RateLimiter,
  RateLimiterLive,
  RateLimiterMemory
} from "../platform/RateLimiter.js"
import { Account } from "./account/Account.js"
import { Avatars } from "./account/Avatars.js"
import { EmailCodes } from "./account/EmailCodes.js"
import { Recovery } from "./account/Recovery.js"
import { EndUsers } from "./auth/EndUsers.js"
import { Login } from "./auth/Login.js"
import { IdentityCleanup } from "./cleanup/Cleanup.js"
import { Clients } from "./clients/Clients.js"
import { CreatorApplications } from "./creator/CreatorApplications.js"
import { Passwords } from "./crypto/Passwords.js"
import { Directory } from "./directory/Directory.js"
import { SigningKeys } from "./keys/SigningKeys.js"
import { MailConfig } from "./mail/MailConfig.js"
import { MailDelivery } from "./mail/MailDelivery.js"
import { Mailer } from "./mail/Mailer.js"
import { Authorize } from "./oauth/Authorize.js"
import { Grants } from "./oauth/Grants.js"
import { Logout } from "./oauth/Logout.js"
import { Revocation } from "./oauth/Revocation.js"
import { TokenService } from "./oauth/TokenService.js"
import { UserInfoService } from "./oauth/UserInfoService.js"
import { Csrf } from "./pages/forms/Csrf.js"
import { FormValidation } from "./pages/forms/FormValidation.js"
import { AddressLimits } from "./ratelimit/AddressLimits.js"
import { Sessions } from "./sessions/Sessions.js"
import { IdentityConfig } from "./shared/IdentityConfig.js"
import { TokenLiveness } from "./tokens/Liveness.js"
import { Tokens } from "./tokens/Tokens.js"
import { PendingSignIn } from "./twofactor/PendingSignIn.js"
import { TwoFactor } from "./twofactor/TwoFactor.js"
import { Users } from "./users/Users.js"

/**
 * Token buckets in PostgreSQL, shared by every process (default), or in this process's memory
 * (`IDENTITY_RATE_LIMIT_STORE=memory`, single-process deployments only).
 */
export const RateLimiterFromConfig = Layer.unwrap(
  Effect.map(
    Config.Literals(["postgres", "memory"], "IDENTITY_RATE_LIMIT_STORE").pipe(Config.withDefault("postgres")),
    (store) => store === "memory" ? RateLimiterMemory : RateLimiterLive
  )
)

/**
 * The configured shapes of the shared buckets, recorded at start: a process configured otherwise
 * than the last one to start says so (src/platform/RateLimiter.ts, "Shapes across processes").
 * Beside the start, not before it: a database slow to answer delays only the warnings.
 */
const RecordedPolicies = Layer.effectDiscard(Effect.forkScoped(Effect.gen(function*() {
  const { rateLimits } = yield* IdentityConfig
  const limiter = yield* RateLimiter
  const configured: ReadonlyArray<readonly [string, PolicySettings, BucketPolicy]> = [
    ["identity.token", {
      capacity: "IDENTITY_TOKEN_RATE_BURST",
      refillPerSecond: "IDENTITY_TOKEN_RATE_PER_SECOND"
    }, rateLimits.tokenEndpoint],
    ["identity.token-auth", {
      capacity: "IDENTITY_TOKEN_AUTH_FAILURE_BURST",
      refillPerMinute: "IDENTITY_TOKEN_AUTH_FAILURE_PER_MINUTE"
    }, rateLimits.tokenAuthFailures],
    ["identity.login-ip", {
      capacity: "IDENTITY_LOGIN_IP_BURST",
      refillPerMinute: "IDENTITY_LOGIN_IP_PER_MINUTE"
    }, rateLimits.loginPerIp],
    ["identity.login-failures", {
      capacity: "IDENTITY_LOGIN_FAILURE_BURST",
      refillPerMinute: "IDENTITY_LOGIN_FAILURE_PER_MINUTE"
    }, rateLimits.loginFailures],
    ["identity.authorize", {
      capacity: "IDENTITY_AUTHORIZE_RATE_BURST",
      refillPerSecond: "IDENTITY_AUTHORIZE_RATE_PER_SECOND"
    }, rateLimits.authorize],
    ["identity.userinfo", {
      capacity: "IDENTITY_USERINFO_RATE_BURST",
      refillPerSecond: "IDENTITY_USERINFO_RATE_PER_SECOND"
    }, rateLimits.userinfo],
    ["identity.revoke", {
      capacity: "IDENTITY_REVOKE_RATE_BURST",
      refillPerSecond: "IDENTITY_REVOKE_RATE_PER_SECOND"
    }, rateLimits.revoke]
  ]
  for (const [name, settings, policy] of configured) yield* limiter.recordPolicy(name, settings, policy)
})))

const Base = RecordedPolicies.pipe(Layer.provideMerge(Layer.mergeAll(
  IdentityConfig.layer,
  SigningKeys.layer,
  Passwords.layer,
  Clients.layer,
  Grants.layer,
  TokenLiveness.layer,
  PendingSignIn.layer,
  RateLimiterFromConfig,
  MailConfig.layer,
  Mailer.layer
)))

const Accounts = Layer.mergeAll(
  Users.layerWithoutDependencies,
  Sessions.layerWithoutDependencies,
  Tokens.layerWithoutDependencies,
  TwoFactor.layer
).pipe(Layer.provideMerge(Base))

const People = Layer.mergeAll(EndUsers.layerWithoutDependencies, Login.layer).pipe(Layer.provideMerge(Accounts))

export const IdentityServicesLive = Layer.mergeAll(
  Authorize.layer,
  TokenService.layer,
  UserInfoService.layer,
  Revocation.layer,
  Logout.layer,
  AddressLimits.layer,
  IdentityCleanup.layerWithoutDependencies,
  Directory.layer,
  CreatorApplications.layer,
  Layer.mergeAll(Account.layer, Recovery.layer).pipe(Layer.provide(EmailCodes.layer)),
  Avatars.layer,
  // What every form of the pages uses (src/identity/pages/forms/).
  Csrf.layer,
  FormValidation.layer,
  // The outbox's delivery worker runs as long as the server's stack (src/identity/mail/MailDelivery.ts).
  MailDelivery.layer
).pipe(Layer.provideMerge(People))
