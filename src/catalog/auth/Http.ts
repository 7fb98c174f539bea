import { Effect, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { CatalogApi } from "../../../schema/Api/CatalogApi.js"
import { Principal } from "../../../schema/Api/Security.js"
import { runToCompletion } from "../../platform/HttpListener.js"

export const HttpCredentialsLive = HttpApiBuilder.group(
  CatalogApi,
  "credentials",
  (handlers) =>
    handlers.handle("getCredential", () =>
      Effect.map(Principal, (p) => ({
        object: "credential" as const,
        kind: p.credential,
        id: p.credentialId,
        site: p.site,
        scopes: [...p.scopes],
        content_limit: p.contentLimit,
        user_id: Option.getOrNull(Option.map(p.user, (u) => u.id))
      })), runToCompletion)
)
