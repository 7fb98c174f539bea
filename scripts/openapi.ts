/**
 * `npm run openapi`: writes the OpenAPI 3.1 documents of both interfaces to `openapi/`, the same
 * documents the servers serve, for client generators.
 */
import { OpenApi } from "effect/http-api"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { CatalogApiDocumented } from "../schema/Api/CatalogApi.js"
import { IdentityApi } from "../schema/Api/IdentityApi.js"

const out = Path.resolve("openapi")
Fs.mkdirSync(out, { recursive: true })
const documents: ReadonlyArray<readonly [string, OpenApi.OpenAPISpec]> = [
  ["catalog.json", OpenApi.fromApi(CatalogApiDocumented)],
  ["identity.json", OpenApi.fromApi(IdentityApi)]
]
for (const [file, spec] of documents) {
  Fs.writeFileSync(Path.join(out, file), JSON.stringify(spec, null, 2) + "\n")
  console.log(`openapi/${file}: ${Object.keys(spec.paths).length} paths`)
}
