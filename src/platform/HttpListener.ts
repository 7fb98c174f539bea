/**
 * A Node HTTP listener with a graceful drain. On shutdown the platform first detaches its request
 * handler and then waits in `server.close()` for connections to end, so a request arriving on a
 * kept-alive connection in between would hang forever. Our drain runs before that: it stops
 * accepting connections, marks every response `Connection: close`, waits for in-flight requests
 * (up to a grace period), and only then lets the platform finish.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { Duration, Effect, Layer } from "effect"
import * as Http from "node:http"

export interface ListenOptions {
  readonly port: number
  readonly host: string
  readonly grace?: Duration.DurationInput
}

const drain = (server: Http.Server, inFlight: Set<Http.ServerResponse>, grace: Duration.Duration) =>
  Effect.async<void>((resume) => {
    for (const res of inFlight) if (!res.headersSent) res.setHeader("connection", "close")
    server.close()
    server.closeIdleConnections()
    const started = Date.now()
    const timer = setInterval(() => {
      server.closeIdleConnections()
      if (inFlight.size === 0 || Date.now() - started > Duration.toMillis(grace)) {
        clearInterval(timer)
        server.closeAllConnections()
        resume(Effect.void)
      }
    }, 10)
  })

/** Serves `app` (a `HttpApiBuilder.serve` stack) on `options.port` with a graceful drain. */
export const listen = <E, R>(app: Layer.Layer<never, E, R>, options: ListenOptions) =>
  Layer.suspend(() => {
    const server = Http.createServer()
    const inFlight = new Set<Http.ServerResponse>()
    let draining = false
    server.on("request", (_req, res) => {
      inFlight.add(res)
      if (draining) res.setHeader("connection", "close")
      res.once("close", () => inFlight.delete(res))
    })
    const Drain = Layer.scopedDiscard(
      Effect.addFinalizer(() =>
        Effect.suspend(() => {
          draining = true
          return drain(server, inFlight, Duration.decode(options.grace ?? Duration.seconds(10)))
        })
      )
    )
    return Drain.pipe(
      Layer.provide(app),
      Layer.provideMerge(NodeHttpServer.layer(() => server, { port: options.port, host: options.host }))
    )
  })
