/**
 * A Node HTTP listener with a graceful drain. On shutdown the platform first detaches its request
 * handler and then waits in `server.close()` for connections to end, so a request arriving on a
 * kept-alive connection in between would hang forever. Our drain runs before that: it stops
 * accepting connections, marks every response `Connection: close`, waits for in-flight requests
 * (up to a grace period), and only then lets the platform finish.
 *
 * Nothing answers a request before the platform's handler but the `starting` 503: every answer of
 * the application comes out of its stack (docs/life-of-a-request.md, "From the socket to the router").
 *
 * Why not only `NodeHttpServer`'s own graceful shutdown (`server.close()` with a timeout): it does
 * not mark the responses of a draining server `Connection: close`, so a kept-alive client keeps
 * sending to a process that is going away, and it has no answer for a request that arrives before
 * the application is attached (the `starting` 503).
 */
import { NodeHttpServer } from "@effect/platform-node"
import { Context, Duration, Effect, Layer } from "effect"
import type { HttpServerRequest, HttpServerResponse } from "effect/http"
import * as Http from "node:http"
import { makeRequestId } from "./RequestId.js"

/** How long the drain waits for in-flight requests by default before it closes their connections. */
export const DRAIN_GRACE = Duration.seconds(10)

export interface ListenOptions {
  readonly port: number
  readonly host: string
  readonly grace?: Duration.Input
  /**
   * The answer to a request that arrives after the socket listens but before the application's
   * handler is attached (the platform listens first): 503 with `Retry-After`, never a hang.
   */
  readonly starting?: (url: string, requestId: string) => { readonly contentType: string; readonly body: string }
}

/**
 * Lets a request whose client hung up finish instead of interrupting it. Interrupting a request
 * cancels its running statement with a PostgreSQL cancel request sent on a side connection: the
 * pool then retires the connection unless the cancel was confirmed, and a connection held by a
 * transaction stays exposed to a cancel that lands late, on whatever statement runs next (with the
 * Effect 3 driver, a spurious 57014 and 503 for an innocent client, seen under load). Statements
 * are short and the answer of a detached computation fills the read cache anyway, so running to
 * completion costs little. Code that must stop waiting (a timeout) marks its own part interruptible.
 */
export const completeOnHangUp = <E, R>(
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> =>
  Effect.uninterruptible(app)

/**
 * The option every route handler is registered with (`handlers.handle(name, handler, runToCompletion)`).
 * The platform's router runs each handler interruptible again, inside `completeOnHangUp`, unless
 * its route says otherwise: without it a hang-up cancelled the handler's statement after all, and
 * the cancel could land on the next statement of the reused connection (a 503 for another client).
 */
export const runToCompletion = { uninterruptible: true } as const

const drain = (server: Http.Server, inFlight: Set<Http.ServerResponse>, grace: Duration.Duration) =>
  Effect.callback<void>((resume) => {
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

/**
 * Whether the listener that serves the application drains (shutdown began): `/readyz` answers 503
 * then (src/platform/Health.ts). New connections are refused by then, but a check that a proxy began
 * on a connection accepted before is still answered, and must not say "ready" for a process that is
 * going away. Outside `listen` (no listener), never.
 */
export const ListenerDraining = Context.Reference<{ readonly draining: () => boolean }>(
  "platform/HttpListener/ListenerDraining",
  { defaultValue: () => ({ draining: () => false }) }
)

/** Serves `app` (an `HttpRouter.serve` stack) on `options.port` with a graceful drain. */
export const listen = <E, R>(app: Layer.Layer<never, E, R>, options: ListenOptions) =>
  Layer.suspend(() => {
    const server = Http.createServer()
    // Keep idle connections longer than clients and load balancers do (60 s is common), so it is
    // always the client that closes an idle socket and never races a request against our close.
    server.keepAliveTimeout = 65_000
    server.headersTimeout = 66_000
    const inFlight = new Set<Http.ServerResponse>()
    let draining = false
    const track = (_req: Http.IncomingMessage, res: Http.ServerResponse) => {
      inFlight.add(res)
      if (draining) res.setHeader("connection", "close")
      res.once("close", () => inFlight.delete(res))
    }
    // Every request is in flight from its first event, before the platform's handler sees it. The
    // platform also takes "checkContinue" (a request sent with `Expect: 100-continue`), which Node
    // then no longer turns into "request": it is tracked too, but only while the platform listens
    // for it, so that before then Node still answers it as a "request" (the `starting` 503).
    server.prependListener("request", track)
    server.on("newListener", (event, listener) => {
      if (event === "checkContinue" && listener !== track && server.listenerCount("checkContinue") === 0) {
        server.prependListener("checkContinue", track)
      }
    })
    server.on("removeListener", (event, listener) => {
      if (event === "checkContinue" && listener !== track && server.listenerCount("checkContinue") === 1) {
        server.off("checkContinue", track)
      }
    })
    server.on("request", (req, res) => {
      // Ours (`track` and this one) are the only listeners until the platform attaches its handler.
      if (server.listenerCount("request") === 2) {
        const requestId = makeRequestId()
        const { body, contentType } = options.starting?.(req.url ?? "/", requestId) ??
          { contentType: "application/json", body: JSON.stringify({ status: "starting" }) }
        res.writeHead(503, {
          "content-type": contentType,
          "retry-after": "1",
          "x-request-id": requestId,
          "content-length": Buffer.byteLength(body)
        })
        res.end(body)
      }
    })
    const Drain = Layer.effectDiscard(
      Effect.addFinalizer(() =>
        Effect.suspend(() => {
          draining = true
          return drain(server, inFlight, Duration.fromInputUnsafe(options.grace ?? DRAIN_GRACE))
        })
      )
    )
    return Drain.pipe(
      Layer.provide(app.pipe(Layer.provide(Layer.succeed(ListenerDraining, { draining: () => draining })))),
      Layer.provideMerge(NodeHttpServer.layer(() => server, { port: options.port, host: options.host }))
    )
  })
