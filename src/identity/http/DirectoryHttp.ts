/**
 * Handlers of the `directory` group: each calls one `Directory` method and answers the envelope.
 * The public answers may be cached briefly (RFC 9111 section 5.2.2.9); the user lookup never.
 */
import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { IdentityApi } from "../../../schema/Api/IdentityApi.js"
import {
  ClientInfoResponse,
  EcosystemResponse,
  UserBatchResponse,
  UserSearchResponse
} from "../../../schema/Identity/Directory.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import { Directory } from "../directory/Directory.js"
import { envelopeSuccess, refusal } from "./Responses.js"

const PUBLIC_CACHE = { "cache-control": "public, max-age=60" }

// Each answer encoded by the success its endpoint declares (schema/Api/IdentityDirectoryApi.ts).
const clientInfoAnswer = envelopeSuccess(ClientInfoResponse)
const ecosystemAnswer = envelopeSuccess(EcosystemResponse)
const batchAnswer = envelopeSuccess(UserBatchResponse)
const searchAnswer = envelopeSuccess(UserSearchResponse)

export const HttpDirectoryLive = HttpApiBuilder.group(IdentityApi, "directory", (handlers) =>
  Effect.gen(function*() {
    const directory = yield* Directory
    const authorization = Effect.map(HttpServerRequest.HttpServerRequest, (request) => request.headers.authorization)

    return handlers
      .handle("clientInfo", ({ query }) =>
        directory.clientInfo(query.client_id).pipe(
          Effect.map((info) => clientInfoAnswer(info, PUBLIC_CACHE)),
          Effect.catchTag("Refused", refusal)
        ), runToCompletion)
      .handle("ecosystem", () =>
        Effect.map(directory.ecosystem(), (listing) => ecosystemAnswer(listing, PUBLIC_CACHE)), runToCompletion)
      .handle("usersBatch", ({ query }) =>
        Effect.flatMap(authorization, (header) =>
          directory.usersBatch(header, query.ids)).pipe(
            Effect.map((batch) =>
              batchAnswer(batch)
            ),
            Effect.catchTag("Refused", refusal)
          ), runToCompletion)
      .handle("usersSearch", ({ query }) =>
        Effect.flatMap(authorization, (header) =>
          directory.usersSearch(header, query.q, query.limit)).pipe(
            Effect.map((found) =>
              searchAnswer(found)
            ),
            Effect.catchTag("Refused", refusal)
          ), runToCompletion)
  }))
