/**
 * The application directory and the service-to-service user lookup. They answer the
 * `{code, message, data}` envelope; the codes are in the README's identity section.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  ClientInfoParams,
  ClientInfoResponse,
  EcosystemResponse,
  MAX_BATCH_IDS,
  UserBatchParams,
  UserBatchResponse,
  UserSearchParams,
  UserSearchResponse
} from "../Identity/Directory.js"
import { envelopeError } from "./IdentityErrors.js"

const clientBasic = "Client Basic authentication (RFC 7617; RFC 6749 section 2.3.1): " +
  "`Authorization: Basic base64(urlencode(client_id) \":\" urlencode(client_secret))` of a confidential client. " +
  "Missing or wrong credentials are 401 envelope 15008 with `WWW-Authenticate: Basic realm=\"shiori\"`; a public " +
  "client (it has no secret) is 403 envelope 15011. Items never carry an email address; `site_roles` are the " +
  "user's roles at the calling client's site (empty when it has none). Banned users are answered like any other."

export class IdentityDirectoryApi extends HttpApiGroup.make("directory")
  .add(
    HttpApiEndpoint.get("clientInfo", "/api/v1/oauth/client-info", {
      query: ClientInfoParams,
      success: ClientInfoResponse,
      error: [
        envelopeError(400, "40001: `client_id` is missing or too long."),
        envelopeError(404, "15001: unknown client.")
      ]
    })
      .annotate(OpenApi.Summary, "Describe a client")
      .annotate(
        OpenApi.Description,
        "Public. The name, logo, tagline and homepage of any registered client, listed or not, for a relying " +
          "party's own sign-in button or a partner page. `Cache-Control: public, max-age=60`."
      )
  )
  .add(
    HttpApiEndpoint.get("ecosystem", "/api/v1/oauth/ecosystem", {
      success: EcosystemResponse
    })
      .annotate(OpenApi.Summary, "The application directory")
      .annotate(
        OpenApi.Description,
        "Public. The clients an operator listed (`client create|update --listed`), by `display_order`, then " +
          "`client_id`. `Cache-Control: public, max-age=60`."
      )
  )
  .add(
    HttpApiEndpoint.get("usersBatch", "/api/v1/users/batch", {
      query: UserBatchParams,
      success: UserBatchResponse,
      error: [
        envelopeError(400, `40001: \`ids\` is malformed or names more than ${MAX_BATCH_IDS} ids.`),
        envelopeError(401, "15008: client authentication is missing or wrong."),
        envelopeError(403, "15011: a public client may not look users up.")
      ]
    })
      .annotate(OpenApi.Summary, "Look users up by id (service to service)")
      .annotate(
        OpenApi.Description,
        `${clientBasic} At most ${MAX_BATCH_IDS} ids; items in request order (a repeated id once), the ids that ` +
          "name no user in `missing`."
      )
  )
  .add(
    HttpApiEndpoint.get("usersSearch", "/api/v1/users/search", {
      query: UserSearchParams,
      success: UserSearchResponse,
      error: [
        envelopeError(400, "40001: `q` is empty or longer than 256 characters, or `limit` is not 1 to 100."),
        envelopeError(401, "15008: client authentication is missing or wrong."),
        envelopeError(403, "15011: a public client may not look users up.")
      ]
    })
      .annotate(OpenApi.Summary, "Search users by name prefix or exact email (service to service)")
      .annotate(
        OpenApi.Description,
        `${clientBasic} A user whose email equals \`q\` (case-insensitive) comes first, then users whose name ` +
          "starts with `q` (case-insensitive), by name and id; at most `limit` (20 by default, 1 to 100)."
      )
  )
  .annotate(OpenApi.Title, "Directory")
  .annotate(OpenApi.Description, "The public application directory and the service-to-service user lookup.")
{}
