/**
 * A client that hangs up does not cancel its request (HttpListener `completeOnHangUp` and
 * `runToCompletion`): the platform's router would run a handler interruptible again, and
 * interrupting a running statement cancels it with a PostgreSQL cancel request, which can land late
 * on the next statement of a reused connection, another client's (a spurious 503
 * SERVICE_UNAVAILABLE for a request that did nothing wrong). A route registered without the option
 * shows the difference.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { completedSlowRequests, ProbeServer, ProbeServerLive } from "../support/ProbeApi.js"
import { sleepReal } from "../support/Problems.js"
import { TestSqlLive } from "../support/TestDatabase.js"
import { serverLayerOptions, testConfig } from "../support/TestServers.js"

/** Starts a GET and hangs up after `afterMs`, long before its 0.4 s statement ends. */
const hangUp = (url: string, afterMs: number) =>
  Effect.promise(async () => {
    const controller = new AbortController()
    const pending = fetch(url, { signal: controller.signal }).then(() => "answered", () => "aborted")
    await new Promise((resolve) => setTimeout(resolve, afterMs))
    controller.abort()
    return pending
  })

describe("a client hanging up", () => {
  it.layer(
    ProbeServerLive.pipe(Layer.provide(TestSqlLive), Layer.provide(testConfig())),
    serverLayerOptions("60 seconds")
  )((it) => {
    it.effect("lets a route's statement run to its end; an interruptible route's statement is cancelled", () =>
      Effect.gen(function*() {
        const base = yield* ProbeServer
        const token = `t${Date.now()}`
        expect(yield* hangUp(`${base}/probe/slow?token=${token}-complete`, 100)).toBe("aborted")
        expect(yield* hangUp(`${base}/probe/slow-interruptible?token=${token}-cut`, 100)).toBe("aborted")
        yield* sleepReal(1_000)
        expect(completedSlowRequests.has(`${token}-complete`)).toBe(true)
        expect(completedSlowRequests.has(`${token}-cut`)).toBe(false)
      }))
  })
})
