/**
 * The composition root: infrastructure once, then the two server stacks over it.
 */
import { Effect, Layer } from "effect"
import { CatalogServerLive } from "./catalog/CatalogServer.js"
import { DemoCatalogLive } from "./demo/DemoCatalog.js"
import { IdentityPortLive } from "./identity/IdentityPortLive.js"
import { IdentityServerLive } from "./identity/IdentityServer.js"
import { AppSecret, ServerConfig } from "./platform/Config.js"
import { DatabaseUrlLive, MigratorLive, SqlLive } from "./platform/Database.js"
import { MediaStore } from "./platform/MediaStore.js"
import { MetricsServerLive } from "./platform/Metrics.js"
import { ServerSecretPolicyLive } from "./platform/SecretPolicy.js"
import { TracingLive } from "./platform/Tracing.js"

/** The catalog reaches identity only through its contract (src/platform/IdentityPort.ts), implemented here. */
const CatalogLive = CatalogServerLive.pipe(Layer.provide(IdentityPortLive))

const ServersLive = Layer.unwrap(
  Effect.map(ServerConfig, ({ serve }) =>
    serve === "catalog"
      ? CatalogLive
      : serve === "identity"
      ? IdentityServerLive
      : Layer.merge(CatalogLive, IdentityServerLive))
)

/** Settings, checked first: a server refused its secret stops before it starts or opens a database. */
const SettingsLive = ServerSecretPolicyLive.pipe(
  Layer.provideMerge(Layer.mergeAll(ServerConfig.layer, AppSecret.layer))
)

/**
 * Pool over `DATABASE_URL` or the embedded cluster; migrations applied before anything serves. The
 * `MediaStore` (editor images and avatars) is one for the whole process: the migrations, the catalog
 * and the identity provider share it.
 */
export const InfrastructureLive = MigratorLive.pipe(
  Layer.provideMerge(SqlLive),
  Layer.provideMerge(MediaStore.layer),
  Layer.provideMerge(DatabaseUrlLive),
  Layer.provideMerge(TracingLive),
  Layer.provideMerge(SettingsLive)
)

/**
 * Everything `npm start` runs; the logger (src/platform/Logging.ts) is provided around it by main.ts.
 * The metrics listener (`METRICS_PORT`) is one per process, whichever servers it runs.
 */
export const MainLive = Layer.merge(ServersLive, MetricsServerLive).pipe(
  Layer.provide(DemoCatalogLive),
  Layer.provide(InfrastructureLive)
)
