/**
 * Account endpoints of the identity provider (docs/decisions.md, "Identity: accounts and self-service").
 * They answer the `{code, message, data}` envelope; the codes are in the README's identity section.
 */
import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { LoginRequest, LoginResponse } from "../Identity/Login.js"
import { envelopeError, unsupportedMediaType } from "./IdentityErrors.js"

export class IdentityAuthApi extends HttpApiGroup.make("auth")
  .add(
    HttpApiEndpoint.post("login", "/api/v1/auth/login", {
      payload: LoginRequest,
      success: LoginResponse,
      error: [
        envelopeError(400, "40001: the body is not `{email, password}` JSON."),
        envelopeError(
          401,
          "10011: wrong email or password (also for an unknown email); 10014: the account has a second factor and " +
            "neither `otp` nor `recovery_code` came (no session was created); 10015: that code is wrong or used."
        ),
        envelopeError(403, "40302: the account is banned."),
        unsupportedMediaType,
        envelopeError(429, "10012: too many attempts for this account or from this address; `Retry-After`.")
      ]
    })
      // Every failing field is reported (a Schema 4 class carries no parse options).
      .annotate(HttpApi.PayloadParseOptions, { errors: "all" })
      .annotate(OpenApi.Summary, "Sign in with email and password")
      .annotate(
        OpenApi.Description,
        "Answers `{code: 0, message, data: {access_token, token_type: \"Bearer\", expires_in: 900}}` and sets the " +
          "provider's session cookie (HttpOnly, SameSite=Lax, Secure over https). The access token is the end-user " +
          "Bearer token `GET /oauth/authorize` accepts. Attempts are rate limited per account and per IP address. " +
          "Only `application/json` bodies are accepted, with no parameter but `charset=utf-8` (415 otherwise: a " +
          "cross-site form or `text/plain` post cannot sign a browser in)."
      )
  )
  .annotate(OpenApi.Title, "Sign-in")
  .annotate(OpenApi.Description, "Password sign-in for the provider's own front end and first-party apps.")
{}
