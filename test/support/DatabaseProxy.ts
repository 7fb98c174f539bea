/**
 * A TCP proxy in front of the test's PostgreSQL (`DatabaseUrl`) that a test can cut, like a network
 * partition (connections reset, new ones refused), or freeze, like a database that is reachable but
 * does not answer (its processes stopped, or a network that accepts and never replies): connections
 * stay open, new ones are accepted, and nothing is forwarded either way until it thaws, when what was
 * held back is delivered. A cut proxy can be restored: it listens again on the same port.
 */
import { Context, Effect, Layer, Redacted } from "effect"
import * as Net from "node:net"
import { DatabaseUrl } from "../../src/platform/Database.js"

export interface DatabaseProxyShape {
  /** The proxy's `postgres://` URL (the test database's, on the proxy's port). */
  readonly url: Redacted.Redacted
  /** Resets every connection and stops listening. */
  readonly cut: () => void
  /** Listens again on the same port after `cut`, like a partition that heals. */
  readonly restore: () => Promise<void>
  /** Stops forwarding both ways, sockets kept open. */
  readonly freeze: () => void
  /** Delivers what was held back and forwards again. */
  readonly thaw: () => void
}

export class DatabaseProxy extends Context.Service<DatabaseProxy, DatabaseProxyShape>()("test/DatabaseProxy") {}

export const DatabaseProxyLive = Layer.effect(
  DatabaseProxy,
  Effect.gen(function*() {
    const target = new URL(Redacted.value(yield* DatabaseUrl))
    const sockets = new Set<Net.Socket>()
    let frozen = false
    /** What each socket would have sent while frozen, by socket. */
    const held = new Map<Net.Socket, Array<Buffer>>()
    const forward = (from: Net.Socket, to: Net.Socket) =>
      from.on("data", (chunk: Buffer) => {
        if (frozen) {
          const queue = held.get(to) ?? []
          queue.push(chunk)
          held.set(to, queue)
        } else {
          to.write(chunk)
        }
      })
    const server = Net.createServer((client) => {
      const upstream = Net.connect(Number(target.port), target.hostname)
      sockets.add(client).add(upstream)
      forward(client, upstream)
      forward(upstream, client)
      const close = () => {
        client.destroy()
        upstream.destroy()
        sockets.delete(client)
        sockets.delete(upstream)
        held.delete(client)
        held.delete(upstream)
      }
      for (const socket of [client, upstream]) {
        socket.on("error", close)
        socket.on("close", close)
      }
    })
    yield* Effect.acquireRelease(
      Effect.callback<void>((resume) => {
        server.listen(0, "127.0.0.1", () => resume(Effect.void))
      }),
      () =>
        Effect.sync(() => {
          server.close()
          for (const socket of sockets) socket.destroy()
        })
    )
    const port = (server.address() as Net.AddressInfo).port
    const proxied = new URL(target)
    proxied.port = String(port)
    return {
      url: Redacted.make(proxied.toString()),
      cut: () => {
        server.close()
        for (const socket of sockets) socket.destroy()
      },
      restore: () =>
        new Promise<void>((resolve) => {
          server.listen(port, "127.0.0.1", () => resolve())
        }),
      freeze: () => {
        frozen = true
      },
      thaw: () => {
        frozen = false
        for (const [to, chunks] of held) for (const chunk of chunks) to.write(chunk)
        held.clear()
      }
    }
  })
)
