/**
 * docs/deploying.md, "The topology, step by step" (readiness for the proxy): once SIGTERM starts the
 * drain (src/platform/HttpListener.ts), no readiness check of the built server succeeds any more,
 * while the requests in flight still get their answers: a new connection is refused, and a check
 * begun on a connection accepted before is answered 503 with `Connection: close`
 * (src/platform/Health.ts). So a proxy's next check takes the process out of rotation, however it
 * connects.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import * as Net from "node:net"
import { inject } from "vitest"
import { exited, freePort, startBuiltCatalog } from "../support/BuiltServer.js"
import { eventuallyAsync } from "../support/Eventually.js"
import { sleepReal } from "../support/Problems.js"
import { newTestDatabase } from "../support/TestDatabase.js"

/** A connection to `port` on loopback, open. */
const connect = (port: number) =>
  new Promise<Net.Socket>((resolve, reject) => {
    const socket = Net.connect(port, "127.0.0.1", () => resolve(socket))
    socket.once("error", reject)
  })

/** Whether a new connection to `port` is refused. */
const refused = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = Net.connect(port, "127.0.0.1", () => {
      socket.destroy()
      resolve(false)
    })
    socket.once("error", () => resolve(true))
  })

/** Everything `socket` receives until the server closes it. */
const answer = (socket: Net.Socket) =>
  new Promise<string>((resolve) => {
    const chunks: Array<Buffer> = []
    socket.on("data", (chunk: Buffer) => chunks.push(chunk))
    socket.once("close", () => resolve(Buffer.concat(chunks).toString("latin1")))
  })

describe("readiness while draining (docs/deploying.md, \"The topology, step by step\")", () => {
  it.live(
    "after SIGTERM no readiness check succeeds while an in-flight request still gets its answer",
    () =>
      Effect.gen(function*() {
        const url = yield* newTestDatabase(inject("pgTemplate"))
        const identityPort = yield* Effect.promise(freePort)
        const server = yield* startBuiltCatalog(Redacted.value(url), {
          SHIORI_SERVE: "all",
          IDENTITY_PORT: String(identityPort)
        })
        yield* Effect.promise(async () => {
          // `startBuiltCatalog` waits for the catalog server only.
          await eventuallyAsync(async () => {
            const res = await fetch(`http://127.0.0.1:${identityPort}/readyz`)
            await res.arrayBuffer()
            expect(res.status).toBe(200)
          }, { timeoutMs: 30_000, intervalMs: 100 })
          // In flight across the stop: a token request whose body is not all there yet.
          const holding = await connect(identityPort)
          const form = "grant_type=client_credentials&client_id=draining&client_secret=not-a-secret"
          holding.write(
            "POST /api/v1/oauth/token HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
              `Content-Type: application/x-www-form-urlencoded\r\nContent-Length: ${form.length}\r\n\r\n` +
              form.slice(0, 10)
          )
          const held = answer(holding)
          // A readiness check begun before the stop, finished after it.
          const check = await connect(identityPort)
          check.write("GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
          const checked = answer(check)
          await Effect.runPromise(sleepReal(300))

          server.child.kill("SIGTERM")
          await eventuallyAsync(async () => expect(await refused(identityPort)).toBe(true), { timeoutMs: 10_000 })
          check.write("\r\n")
          const checkText = await checked
          expect(checkText).toMatch(/^HTTP\/1\.1 503 /)
          expect(checkText.toLowerCase()).toContain("connection: close")

          holding.write(form.slice(10))
          const text = await held
          expect(text).toMatch(/^HTTP\/1\.1 401 /)
          expect(text.toLowerCase()).toContain("connection: close")
          await exited(server.child)
          expect(server.child.exitCode, server.output()).toBe(0)
        })
      }),
    60_000
  )
})
