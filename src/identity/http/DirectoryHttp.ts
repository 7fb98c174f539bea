/**
 * Handlers of the `directory` group: each calls one `Directory` method and answers the envelope its
 * endpoint declares (schema/Api/IdentityDirectoryApi.ts). The public answers may be cached briefly
 * (RFC 9111 section 5.2.2.9); the user lookup never.
 */
import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { IdentityApi } from "../../../schema/Api/IdentityApi.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import { Directory } from "../directory/Directory.js"
import { envelopeAnswer, refusal } from "./Responses.js"

const PUBLIC_CACHE = { "cache-control": "public, max-age=60" }

export const HttpDirectoryLive = HttpApiBuilder.group(IdentityApi, "directory", (handlers) =>
  Effect.gen(function*() {
    const directory = yield* Directory
    const authorization = Effect.map(HttpServerRequest.HttpServerRequest, (request) => request.headers.authorization)

    return handlers
      .handle("clientInfo", ({ query }) =>
        directory.clientInfo(query.client_id).pipe(
          Effect.flatMap((info) => envelopeAnswer(info, PUBLIC_CACHE)),
          Effect.catchTag("Refused", refusal)
        ), runToCompletion)
      .handle("ecosystem", () =>
        Effect.flatMap(directory.ecosystem(), (listing) => envelopeAnswer(listing, PUBLIC_CACHE)), runToCompletion)
      .handle("usersBatch", ({ query }) =>
        Effect.flatMap(authorization, (header) =>
          directory.usersBatch(header, query.ids)).pipe(
            Effect.flatMap((batch) =>
              envelopeAnswer(batch)
            ),
            Effect.catchTag("Refused", refusal)
          ), runToCompletion)
      .handle("usersSearch", ({ query }) =>
        Effect.flatMap(authorization, (header) =>
          directory.usersSearch(header, query.q, query.limit)).pipe(
            Effect.flatMap((found) =>
              envelopeAnswer(found)
            ),
            Effect.catchTag("Refused", refusal)
          ), runToCompletion)
  }))
