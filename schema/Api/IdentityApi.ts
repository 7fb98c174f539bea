/**
 * The identity provider's HTTP interface under `/api/v1`.
 */
import { HttpApi, OpenApi } from "effect/http-api"
import { HealthApi } from "./HealthApi.js"
import { IdentityAccountApi } from "./IdentityAccountApi.js"
import { IdentityAccountPagesApi } from "./IdentityAccountPagesApi.js"
import { IdentityAuthApi } from "./IdentityAuthApi.js"
import { IdentityCreatorApi } from "./IdentityCreatorApi.js"
import { IdentityDevApi } from "./IdentityDevApi.js"
import { IdentityDirectoryApi } from "./IdentityDirectoryApi.js"
import { IdentityDiscoveryApi } from "./IdentityDiscoveryApi.js"
import { declareUnsupportedMediaType, describePerStatusComponents } from "./IdentityErrors.js"
import { IdentityOAuthApi } from "./IdentityOAuthApi.js"
import { IdentityPagesApi } from "./IdentityPagesApi.js"
import { IdentityRecoveryPagesApi } from "./IdentityRecoveryPagesApi.js"
import { IdentityTwoFactorApi, IdentityTwoFactorPagesApi } from "./IdentityTwoFactorApi.js"
import { documentConventions } from "./OpenApiConventions.js"

export class IdentityApi extends HttpApi.make("identity")
  .add(HealthApi)
  .add(IdentityDiscoveryApi)
  .add(IdentityOAuthApi)
  .add(IdentityAuthApi)
  .add(IdentityAccountApi)
  .add(IdentityDirectoryApi)
  .add(IdentityCreatorApi)
  .add(IdentityTwoFactorApi)
  .add(IdentityPagesApi)
  .add(IdentityAccountPagesApi)
  .add(IdentityRecoveryPagesApi)
  .add(IdentityTwoFactorPagesApi)
  .add(IdentityDevApi)
  .annotate(OpenApi.Title, "shiori identity provider")
  .annotate(OpenApi.Version, "1.0.0")
  .annotate(
    OpenApi.Description,
    "OAuth 2.0 / OpenID Connect provider. Protocol endpoints answer bare RFC 6749 JSON; the other endpoints " +
      "answer the `{code, message, data}` envelope; the sign-in pages are HTML."
  )
  // How the document writes parameters, described references, the shared error components and the
  // 415 of every endpoint that takes JSON (schema/Api/OpenApiConventions.ts, schema/Api/IdentityErrors.ts).
  .annotate(
    OpenApi.Transform,
    (spec) => describePerStatusComponents(declareUnsupportedMediaType(documentConventions(spec)))
  )
{}
