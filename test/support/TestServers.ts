/**
 * The real server stacks (the same layers `npm start` runs) on ephemeral ports over a fresh
 * database, sharing one `MediaStore` (under `SHIORI_DATA_DIR/media`) as src/App.ts does. Tests talk
 * to them over real HTTP.
 */
import { ConfigProvider, Context, type Duration, Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { CatalogHttpLive } from "../../src/catalog/CatalogServer.js"
import { IdentityPortLive } from "../../src/identity/IdentityPortLive.js"
import { IdentityHttpLive } from "../../src/identity/IdentityServer.js"
import { AppSecret, ServerConfig } from "../../src/platform/Config.js"
import { listen } from "../../src/platform/HttpListener.js"
import { MediaStore } from "../../src/platform/MediaStore.js"
import { TestSqlLive } from "./TestDatabase.js"

export interface TestServersShape {
  readonly catalog: string
  readonly identity: string
}

export class TestServers extends Context.Service<TestServers, TestServersShape>()("test/TestServers") {}

/** `http` on an ephemeral loopback port through `listen`, as the real servers are served; its base URL. */
export const serveOn = <E, R>(http: Layer.Layer<never, E, R>) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(listen(http, { port: 0, host: "127.0.0.1" }))
    const server = Context.get(context, HttpServer.HttpServer)
    const address = server.address
    if (address._tag !== "InetAddressV4") return yield* Effect.die(new Error("expected an IPv4 address"))
    return `http://127.0.0.1:${address.port}`
  })

/** The settings a test gives, laid over the environment's. */
export const testConfigProvider = (overrides: Record<string, string> = {}) =>
  ConfigProvider.fromEnv({
    env: {
      LOG_LEVEL: "Warning",
      CATALOG_RATE_BURST: "1000000",
      CATALOG_RATE_PER_SECOND: "1000000",
      ...overrides
    }
  }).pipe(ConfigProvider.orElse(ConfigProvider.fromEnv()))

/**
 * Settings of the test servers; anything not given here comes from the environment defaults. The
 * catalog's request budget is lifted so tests that make hundreds of requests with one key test what
 * they are about; the limit tests set their own. A layer: provide it to the servers it configures,
 * and each block of a test file gets the settings it gives.
 */
export const testConfig = (overrides: Record<string, string> = {}) =>
  ConfigProvider.layer(testConfigProvider(overrides))

export const TestServersLive = Layer.effect(
  TestServers,
  Effect.gen(function*() {
    const catalog = yield* serveOn(Layer.fresh(CatalogHttpLive.pipe(Layer.provide(IdentityPortLive))))
    const identity = yield* serveOn(Layer.fresh(IdentityHttpLive))
    return { catalog, identity }
  })
).pipe(
  Layer.provideMerge(Layer.mergeAll(ServerConfig.layer, AppSecret.layer, MediaStore.layer)),
  Layer.provideMerge(TestSqlLive)
)

/**
 * `it.layer` options for layers that run servers: real clock and services (the servers must not
 * live on the TestClock: they sign tokens and time out requests).
 */
export const serverLayerOptions = (timeout: Duration.Input = "120 seconds") => ({
  timeout,
  excludeTestServices: true
})
