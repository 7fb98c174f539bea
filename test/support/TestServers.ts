/**
 * The real server stacks (the same layers `npm start` runs) on ephemeral ports over a fresh
 * database. Tests talk to them over real HTTP.
 */
import { HttpServer } from "effect/http"
import { ConfigProvider, Context, type Duration, Effect, Layer } from "effect"
import { CatalogHttpLive } from "../../src/catalog/CatalogServer.js"
import { IdentityHttpLive } from "../../src/identity/IdentityServer.js"
import { AppSecret, ServerConfig } from "../../src/platform/Config.js"
import { listen } from "../../src/platform/HttpListener.js"
import { TestSqlLive } from "./TestDatabase.js"

export interface TestServersShape {
  readonly catalog: string
  readonly identity: string
}

export class TestServers extends Context.Service<TestServers, TestServersShape>()("test/TestServers") {}

const serveOn = <E, R>(http: Layer.Layer<never, E, R>) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(listen(http, { port: 0, host: "127.0.0.1" }))
    const server = Context.get(context, HttpServer.HttpServer)
    const address = server.address
    if (address._tag !== "TcpAddress") return yield* Effect.dieMessage("expected a TCP address")
    return `http://127.0.0.1:${address.port}`
  })

/**
 * Settings of the test servers; anything not given here comes from the environment defaults. The
 * catalog's request budget is lifted so tests that make hundreds of requests with one key test what
 * they are about; the limit tests set their own.
 */
export const testConfig = (overrides: Record<string, string> = {}) =>
  Layer.setConfigProvider(
    ConfigProvider.fromMap(
      new Map(Object.entries({
        LOG_LEVEL: "Warning",
        CATALOG_RATE_BURST: "1000000",
        CATALOG_RATE_PER_SECOND: "1000000",
        ...overrides
      }))
    ).pipe(
      ConfigProvider.orElse(() => ConfigProvider.fromEnv())
    )
  )

export const TestServersLive = Layer.effect(
  TestServers,
  Effect.gen(function*() {
    const catalog = yield* serveOn(Layer.fresh(CatalogHttpLive))
    const identity = yield* serveOn(Layer.fresh(IdentityHttpLive))
    return { catalog, identity }
  })
).pipe(
  Layer.provideMerge(Layer.mergeAll(ServerConfig.layer, AppSecret.layer)),
  Layer.provideMerge(TestSqlLive)
)

/**
 * `it.layer` options for layers that run servers: real clock and services (the servers must not
 * live on the TestClock: they sign tokens and time out requests). The option exists at runtime;
 * `it.layer`'s type omits it, hence a non-literal object.
 */
export const serverLayerOptions = (timeout: Duration.DurationInput = "120 seconds") => ({
  timeout,
  excludeTestServices: true
})
