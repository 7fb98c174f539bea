/**
 * Creator applications: a signed-in user asks for the `creator` role; an operator decides with the
 * CLI (`creator list`, `creator decide`). They answer the `{code, message, data}` envelope; the codes
 * are in the README's identity section.
 */
import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  CreatorApplicationRequest,
  CreatorApplicationResponse,
  MyCreatorApplicationResponse,
  REAPPLY_AFTER_DAYS
} from "../Identity/Creator.js"
import { envelopeError, unsupportedMediaType } from "./IdentityErrors.js"

const bearer = "`Authorization: Bearer <access token from /auth/login>` (RFC 6750): 401 envelope 10001 without " +
  "it, 10002 when it is invalid or its session ended, 10003 when it expired."

export class IdentityCreatorApi extends HttpApiGroup.make("creator")
  .add(
    HttpApiEndpoint.post("apply", "/api/v1/creator/applications", {
      payload: CreatorApplicationRequest,
      success: CreatorApplicationResponse,
      error: [
        envelopeError(
          400,
          "17004: the statement is missing, not 20 to 4000 characters once trimmed, or contains NUL or an " +
            "unpaired surrogate, `portfolio_url` is not an http(s) URL of at most 2048 characters, or the body has " +
            "a member other than these two; 40001: the body is not JSON."
        ),
        envelopeError(401, "10001 token missing, 10002 token invalid or revoked, 10003 token expired."),
        envelopeError(
          409,
          "17002: an undecided application exists; 17003: the user already holds `creator`; 17001: the last " +
            `application was declined less than ${REAPPLY_AFTER_DAYS} days ago (\`Retry-After\` in seconds).`
        ),
        unsupportedMediaType
      ]
    })
      // The handler decodes the body itself with these options (src/identity/creator/CreatorApplications.ts):
      // a member the schema does not name is 17004, as the document's `additionalProperties: false` says.
      .annotate(HttpApi.PayloadParseOptions, { errors: "all", onExcessProperty: "error" })
      .annotate(OpenApi.Summary, "Apply for the creator role")
      .annotate(
        OpenApi.Description,
        `${bearer} Answers the new application, \`pending\`. One undecided application per user at a time ` +
          `(simultaneous requests create one); after a decline, a new one ${REAPPLY_AFTER_DAYS} days after its ` +
          "decision. An operator approves (the `creator` role is granted; tokens issued afterwards carry it) or " +
          "declines; the user is mailed either way."
      )
  )
  .add(
    HttpApiEndpoint.get("mine", "/api/v1/creator/applications/me", {
      success: MyCreatorApplicationResponse,
      error: envelopeError(401, "10001 token missing, 10002 token invalid or revoked, 10003 token expired.")
    })
      .annotate(OpenApi.Summary, "The signed-in user's creator application")
      .annotate(
        OpenApi.Description,
        `${bearer} The user's newest application in \`data\`; \`{"code": 0, "message": "ok"}\` without \`data\` ` +
          "when the user never applied."
      )
  )
  .annotate(OpenApi.Title, "Creator applications")
  .annotate(OpenApi.Description, "Envelope endpoints for a signed-in user applying for the `creator` role.")
{}
