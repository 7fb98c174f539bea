import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { RequiredScope, Scopes } from "../Annotations.js"
import { Authorization } from "./Security.js"

export const CredentialInfo = Schema.Struct({
  object: Schema.Literal("credential"),
  kind: Schema.Literals(["api_key", "access_token"]).annotate({ description: "What the bearer token is." }),
  id: Schema.String.annotate({ description: "API key id or access-token `jti`; never the secret." }),
  site: Schema.String.annotate({ description: "The site (tenant) the credential acts for." }),
  scopes: Schema.Array(Schema.Literals(Scopes)),
  content_limit: Schema.Literals(["sfw", "nsfw"]).annotate({
    description: "`sfw` credentials never see nsfw works anywhere."
  }),
  user_id: Schema.NullOr(Schema.Int).annotate({ description: "The person the credential acts for, if any." })
}).annotate({ identifier: "CredentialInfo", description: "What the presented credential may do." })

export class CredentialApi extends HttpApiGroup.make("credentials")
  .add(
    HttpApiEndpoint.get("getCredential", "/v2/credential", {
      success: CredentialInfo
    })
      .annotate(OpenApi.Summary, "Inspect the presented credential")
      .annotate(
        OpenApi.Description,
        "Echoes the site, scopes and content limit of the bearer credential, so an integrator can check a key " +
          "before using it. Needs no particular scope."
      )
  )
  .middleware(Authorization)
  .annotate(RequiredScope, "any")
  .annotate(OpenApi.Title, "Credentials")
  .annotate(OpenApi.Description, "The bearer credential itself.")
{}
