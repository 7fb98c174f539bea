/**
 * Heavy work cannot starve sign-in (src/identity/account/Avatars.ts): decoding avatars and hashing
 * passwords share libuv's thread pool, so avatar uploads pass buckets per account and per client
 * address (src/identity/ratelimit/UploadLimits.ts: 429 `RATE_LIMITED` with `Retry-After`) and then a
 * bounded line (src/identity/ratelimit/WorkQueue.ts) in which at most `imagePermits` pictures decode
 * at once, derived from the pool's size; the pool itself is sized before anything uses it
 * (src/ThreadPool.ts). Real HTTP against the real servers, which run in this process: the
 * `identity_image_decodes` gauge and sharp's own counters are read here while the uploads run.
 * Sign-in latencies are printed, never asserted.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Fiber, Metric } from "effect"
import { spawnSync } from "node:child_process"
import * as Crypto from "node:crypto"
import * as Http from "node:http"
import * as Os from "node:os"
import * as Path from "node:path"
import { performance } from "node:perf_hooks"
import sharp from "sharp"
import { imageDecodes, imagePermits } from "../../src/identity/account/Avatars.js"
import { makeWorkQueue, WorkQueueFull } from "../../src/identity/ratelimit/WorkQueue.js"
import {
  createUser,
  IdentityServers,
  IdentityTestEnv,
  login,
  serverLayerOptions,
  type TestUser
} from "../support/IdentityServers.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const dist = Path.resolve(import.meta.dirname, "../../dist/src")

const USER_BURST = 4
const ADDRESS_BURST = 20

/**
 * Per-account and per-address buckets refilled so slowly that a spent one stays spent, a short
 * line, and password hashes of a real (if reduced) cost, so sign-ins do use the pool.
 */
const Env = IdentityTestEnv({
  IDENTITY_AVATAR_USER_BURST: String(USER_BURST),
  IDENTITY_AVATAR_USER_PER_MINUTE: "0.01",
  IDENTITY_AVATAR_IP_BURST: String(ADDRESS_BURST),
  IDENTITY_AVATAR_IP_PER_MINUTE: "0.01",
  IDENTITY_IMAGE_QUEUE: "2",
  IDENTITY_SCRYPT_LOG_N: "14"
})

/** What the servers in this process decode at once: the pool here is libuv's own (4 threads unless set). */
const PERMITS = imagePermits(Number(process.env.UV_THREADPOOL_SIZE ?? 4), 2, Os.availableParallelism())

interface Reply {
  readonly status: number
  readonly headers: Http.IncomingHttpHeaders
  readonly text: string
}

/** A request with a binary body from the loopback address `from` (test/support/LocalAddress.ts). */
const send = (from: string, url: string, init: {
  readonly method?: string
  readonly headers?: Record<string, string>
  readonly body?: Buffer
}): Promise<Reply> =>
  new Promise((resolve, reject) => {
    const target = new URL(url)
    const req = Http.request({
      host: target.hostname,
      port: target.port,
      path: `${target.pathname}${target.search}`,
      method: init.method ?? (init.body === undefined ? "GET" : "POST"),
      localAddress: from,
      agent: false,
      headers: { ...init.headers, ...(init.body === undefined ? {} : { "content-length": init.body.length }) }
    }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk))
      res.on("end", () =>
        resolve({ status: res.statusCode!, headers: res.headers, text: Buffer.concat(chunks).toString("utf8") }))
    })
    req.on("error", reject)
    req.end(init.body)
  })

/** A `multipart/form-data` body: text fields, then the picture as the `file` part. */
const multipart = (picture: Buffer, fields: Record<string, string> = {}) => {
  const boundary = `----upload${Crypto.randomBytes(8).toString("hex")}`
  const text = Object.entries(fields).map(([name, value]) =>
    `--${boundary}\r\ncontent-disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`
  ).join("")
  const body = Buffer.concat([
    Buffer.from(
      `${text}--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="me.png"\r\n` +
        "content-type: image/png\r\n\r\n"
    ),
    picture,
    Buffer.from(`\r\n--${boundary}--\r\n`)
  ])
  return { body, contentType: `multipart/form-data; boundary=${boundary}` }
}

/** `POST /auth/me/avatar` with a Bearer token, from `from`. */
const uploadAvatar = (identity: string, from: string, token: string, picture: Buffer) => {
  const { body, contentType } = multipart(picture)
  return send(from, `${identity}/api/v1/auth/me/avatar`, {
    headers: { authorization: `Bearer ${token}`, "content-type": contentType },
    body
  })
}

/** 429 `RATE_LIMITED` in the envelope, with `Retry-After` in whole seconds. */
const expectRefused = (reply: Reply) => {
  expect(reply.status, reply.text).toBe(429)
  expect(JSON.parse(reply.text)).toEqual({ code: 42901, message: "Rate limited", data: null })
  expect(reply.headers["retry-after"]).toMatch(/^[1-9][0-9]*$/)
}

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!

const summary = (latencies: ReadonlyArray<number>) => {
  const sorted = [...latencies].sort((a, b) => a - b)
  return `${sorted.length} sign-ins, p50 ${percentile(sorted, 50).toFixed(0)} ms, ` +
    `p99 ${percentile(sorted, 99).toFixed(0)} ms, max ${(sorted.at(-1) ?? 0).toFixed(0)} ms`
}

/** Signs `user` in until `done` resolves (at least `atLeast` times); answers each sign-in's status and milliseconds. */
const signInsUntil = async (identity: string, user: TestUser, done: Promise<unknown>, atLeast: number) => {
  let finished = false
  void done.finally(() => finished = true)
  const runs: Array<{ status: number; ms: number }> = []
  while (!finished || runs.length < atLeast) {
    const started = performance.now()
    const res = await fetch(`${identity}/api/v1/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: user.email, password: user.password })
    })
    await res.arrayBuffer()
    runs.push({ status: res.status, ms: performance.now() - started })
  }
  return runs
}

/** The most pictures seen decoding at once, by the gauge and by sharp itself, sampled every 2 ms. */
const sampleDecodes = () => {
  const peak = { gauge: 0, sharp: 0, sharpQueued: 0 }
  const timer = setInterval(() => {
    peak.gauge = Math.max(peak.gauge, imageDecodes.valueUnsafe(Context.empty()).value)
    const counters = sharp.counters()
    peak.sharp = Math.max(peak.sharp, counters.process)
    peak.sharpQueued = Math.max(peak.sharpQueued, counters.queue)
  }, 2)
  return { peak, stop: () => clearInterval(timer) }
}

describe("heavy work cannot starve sign-in (avatar uploads beside sign-ins)", () => {
  it.layer(Env, serverLayerOptions)((it) => {
    it.effect("sixteen concurrent 40-megapixel uploads by one user: sign-ins all succeed, at most the bound decodes, the rest is 429", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const uploader = yield* createUser()
        const { accessToken } = yield* promise(() => login(identity, uploader))
        const signer = yield* createUser()
        // 8000 x 5000: exactly the 40 megapixels the pipeline accepts (MAX_INPUT_PIXELS), 0.5 MB as PNG.
        const picture = yield* promise(() =>
          sharp({ create: { width: 8000, height: 5000, channels: 3, background: "#336699" } }).png().toBuffer()
        )

        const quiet = yield* promise(() => signInsUntil(identity, signer, Promise.resolve(), 10))
        const sampler = sampleDecodes()
        const uploads = Promise.all(
          Array.from({ length: 16 }, () => uploadAvatar(identity, "127.0.0.2", accessToken, picture))
        )
        const [replies, loaded] = yield* promise(() =>
          Promise.all([uploads, signInsUntil(identity, signer, uploads, 3)]).finally(sampler.stop)
        )
        console.log(`sign-in alone: ${summary(quiet.map((r) => r.ms))}`)
        console.log(`sign-in beside 16 uploads: ${summary(loaded.map((r) => r.ms))}`)
        console.log(
          `uploads: ${replies.filter((r) => r.status === 200).length} stored, ` +
            `${
              replies.filter((r) => r.status === 429).length
            } refused; decoding at once: at most ${sampler.peak.gauge} ` +
            `(gauge), ${sampler.peak.sharp} (sharp), bound ${PERMITS}; waiting for a pool thread in sharp: ` +
            `at most ${sampler.peak.sharpQueued}`
        )

        // Every sign-in succeeded, unloaded and beside the uploads.
        expect([...quiet, ...loaded].map((r) => r.status)).toEqual([...quiet, ...loaded].map(() => 200))
        // Nothing failed: each upload was stored or refused in the envelope's style.
        for (const reply of replies) {
          if (reply.status === 200) {
            expect(JSON.parse(reply.text).data.picture).toMatch(/\/avatars\/[0-9a-f]{64}\.webp$/)
          } else expectRefused(reply)
        }
        // The account's bucket admits USER_BURST; the line (one decoding, two waiting) may refuse
        // some of those too, when they arrive together.
        const stored = replies.filter((r) => r.status === 200).length
        expect(stored).toBeGreaterThanOrEqual(1)
        expect(stored).toBeLessThanOrEqual(USER_BURST)
        // Never more pictures decoding than the bound, as the servers count and as sharp counts.
        expect(sampler.peak.gauge).toBeGreaterThanOrEqual(1)
        expect(sampler.peak.gauge).toBeLessThanOrEqual(PERMITS)
        expect(sampler.peak.sharp).toBeLessThanOrEqual(PERMITS)
        expect(yield* Metric.value(imageDecodes)).toMatchObject({ value: 0 })

        // The account's bucket is spent from any address; the picture it stored is served.
        expectRefused(yield* promise(() => uploadAvatar(identity, "127.0.0.5", accessToken, picture)))
      }))

    it.effect("per client address: past its burst every account there is refused, other addresses go on", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const picture = yield* promise(() =>
          sharp({ create: { width: 64, height: 64, channels: 3, background: "#996633" } }).png().toBuffer()
        )
        const users = yield* Effect.forEach(
          Array.from({ length: ADDRESS_BURST / USER_BURST + 1 }),
          () => Effect.flatMap(createUser(), (user) => promise(() => login(identity, user)))
        )
        // Each account within its own burst, one after the other, until the address has spent its own.
        for (const { accessToken } of users.slice(0, -1)) {
          for (let i = 0; i < USER_BURST; i++) {
            expect((yield* promise(() => uploadAvatar(identity, "127.0.0.3", accessToken, picture))).status).toBe(200)
          }
        }
        const fresh = users.at(-1)!.accessToken
        expectRefused(yield* promise(() => uploadAvatar(identity, "127.0.0.3", fresh, picture)))
        // The same account from another address: its own bucket is full.
        expect((yield* promise(() => uploadAvatar(identity, "127.0.0.4", fresh, picture))).status).toBe(200)
      }))

    it.effect("the account page's upload: 303 within the account's burst, then the page with 429 and Retry-After", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const user = yield* createUser()
        const { cookie } = yield* promise(() => login(identity, user))
        const picture = yield* promise(() =>
          sharp({ create: { width: 64, height: 64, channels: 3, background: "#669933" } }).png().toBuffer()
        )
        const uploadForm = promise(async () => {
          const page = await send("127.0.0.6", `${identity}/api/v1/ui/account`, { headers: { cookie } })
          const csrfCookie = (page.headers["set-cookie"] ?? []).map((c) => c.split(";")[0]).join("; ")
          const csrf = /name="csrf" value="([^"]+)"/.exec(page.text)![1]!
          const { body, contentType } = multipart(picture, { csrf })
          return send("127.0.0.6", `${identity}/api/v1/ui/account/avatar`, {
            headers: { cookie: [cookie, csrfCookie].filter((c) => c !== "").join("; "), "content-type": contentType },
            body
          })
        })
        for (let i = 0; i < USER_BURST; i++) {
          const stored = yield* uploadForm
          expect(stored.status, stored.text).toBe(303)
          expect(stored.headers.location).toMatch(/\/ui\/account\?done=avatar$/)
        }
        const refused = yield* uploadForm
        expect(refused.status).toBe(429)
        expect(refused.headers["content-type"]).toMatch(/^text\/html/)
        expect(refused.headers["retry-after"]).toMatch(/^[1-9][0-9]*$/)
        expect(refused.text).toContain("Rate limited")
      }))
  })
})

describe("the image line (src/identity/ratelimit/WorkQueue.ts)", () => {
  it.effect("runs the bound at once, queues the line in order, refuses beyond it at once and a wait that runs out", () =>
    Effect.gen(function*() {
      const seen: Array<number> = []
      const queue = makeWorkQueue({ permits: 1, queue: 1, waitMillis: 200, onActive: (n) => seen.push(n) })
      const gate = yield* Deferred.make<void>()
      const order: Array<string> = []
      const first = yield* Effect.forkChild(
        queue.run(Effect.andThen(Deferred.await(gate), Effect.sync(() => order.push("first"))))
      )
      yield* Effect.yieldNow
      const second = yield* Effect.forkChild(queue.run(Effect.sync(() => order.push("second"))))
      yield* Effect.yieldNow
      expect([queue.active(), queue.waiting()]).toEqual([1, 1])
      // The line is full: refused at once, with a retry time.
      const third = yield* Effect.flip(queue.run(Effect.sync(() => order.push("third"))))
      expect(third).toBeInstanceOf(WorkQueueFull)
      expect(third.retryAfterSeconds).toBeGreaterThanOrEqual(1)
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(first)
      yield* Fiber.join(second)
      expect(order).toEqual(["first", "second"])
      expect([queue.active(), queue.waiting()]).toEqual([0, 0])
      // The permit passed from the first to the second without being given up in between.
      expect(seen).toEqual([1, 0])

      // A waiter whose turn does not come within the wait is refused then, and leaves the line.
      const held = yield* Deferred.make<void>()
      const holder = yield* Effect.forkChild(queue.run(Deferred.await(held)))
      yield* Effect.yieldNow
      const late = yield* Effect.flip(queue.run(Effect.void))
      expect(late).toBeInstanceOf(WorkQueueFull)
      expect(queue.waiting()).toBe(0)
      yield* Deferred.succeed(held, undefined)
      yield* Fiber.join(holder)
      expect(queue.active()).toBe(0)
    }))
})

describe("libuv's thread pool is sized before anything uses it (src/ThreadPool.ts)", () => {
  it("the server's first import sets UV_THREADPOOL_SIZE: loading the whole application after it leaves the size in force", () => {
    // As dist/src/main.js starts: src/ThreadPool.ts, then the application's module graph; then work
    // for the pool, and a count of its threads (libuv names them; Linux lists them under /proc).
    const probe = [
      `await import(${JSON.stringify(Path.join(dist, "ThreadPool.js"))})`,
      `await import(${JSON.stringify(Path.join(dist, "App.js"))})`,
      `const Crypto = await import("node:crypto")`,
      `const Fs = await import("node:fs")`,
      `await Promise.all(Array.from({ length: 64 }, () => new Promise((done) => Crypto.pbkdf2("a", "b", 1, 8, "sha256", done))))`,
      `const threads = Fs.readdirSync("/proc/self/task").filter((t) => Fs.readFileSync("/proc/self/task/" + t + "/comm", "utf8").trim() === "libuv-worker")`,
      `console.log(JSON.stringify({ size: process.env.UV_THREADPOOL_SIZE, threads: threads.length }))`
    ].join("\n")
    const run = (env: Record<string, string | undefined>) => {
      const child = spawnSync(process.execPath, ["--input-type=module", "-e", probe], {
        env: { ...process.env, UV_THREADPOOL_SIZE: undefined, LOG_LEVEL: "Warning", ...env },
        encoding: "utf8",
        timeout: 60_000
      })
      expect(child.status, child.stderr).toBe(0)
      return JSON.parse(child.stdout.trim().split("\n").at(-1)!) as { size: string; threads: number }
    }
    const unset = run({})
    const expected = Math.max(4, 2 * Os.availableParallelism())
    expect(unset).toEqual({ size: String(expected), threads: expected })
    expect(run({ UV_THREADPOOL_SIZE: "6" })).toEqual({ size: "6", threads: 6 })
  })

  it("refuses a size outside 1 to 1024 before the server starts", () => {
    for (const value of ["abc", "0", "1025", "2.5"]) {
      const child = spawnSync(process.execPath, [Path.join(dist, "main.js")], {
        env: { ...process.env, UV_THREADPOOL_SIZE: value, SHIORI_DATA_DIR: "/nonexistent/shiori-pool-test" },
        encoding: "utf8",
        timeout: 30_000
      })
      expect(child.status, value).not.toBe(0)
      expect(child.stderr, value).toContain(`UV_THREADPOOL_SIZE must be an integer from 1 to 1024, not ${value}`)
    }
  })
})
