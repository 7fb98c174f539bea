/**
 * Sign-in beside avatar uploads: decoding pictures (sharp) and hashing passwords (scrypt) share
 * libuv's thread pool, so the identity server bounds image work (src/identity/account/Avatars.ts)
 * and sizes the pool on purpose (src/ThreadPool.ts). This suite measures what a sign-in costs while
 * sixteen clients upload 40-megapixel pictures as fast as they are answered, against the same
 * sign-in with nothing else running, in the same run on the same machine:
 *
 * - **bounded**: the server as configured by default (the per-account bucket refuses most uploads);
 * - **bounded, buckets lifted**: the avatar buckets out of the way, so only the image line
 *   (`IDENTITY_IMAGE_CONCURRENCY` derived from the pool, `IDENTITY_IMAGE_QUEUE`) bounds the work;
 * - **unbounded** (what the server did before the bounds): libuv's default 4 threads, as many
 *   pictures decoding at once as arrive, buckets lifted.
 *
 * Each server runs in turn on one throwaway embedded database; one client signs in over and over
 * (`POST /api/v1/auth/login`, the production scrypt cost unless `BENCH_UPLOADS_SCRYPT_LOG_N`), first
 * alone, then beside the uploads. Target: the loaded p99 at most 2x the unloaded p99 of the same
 * server.
 */
import { execFileSync, spawn } from "node:child_process"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { performance } from "node:perf_hooks"
import sharp from "sharp"
import { freePort, type Proc, root, settings, startProcess } from "../Harness.js"

const uploaders = Number(process.env.BENCH_UPLOADS_CLIENTS ?? 16)
const scryptLogN = process.env.BENCH_UPLOADS_SCRYPT_LOG_N

const loadavg = () => Os.loadavg().map((n) => n.toFixed(2)).join(", ")

const lifted = {
  IDENTITY_AVATAR_USER_BURST: "100000000",
  IDENTITY_AVATAR_USER_PER_MINUTE: "100000000",
  IDENTITY_AVATAR_IP_BURST: "100000000",
  IDENTITY_AVATAR_IP_PER_MINUTE: "100000000"
}

/** The servers, in the order they run. */
const variants: ReadonlyArray<{ readonly label: string; readonly env: Record<string, string> }> = [
  { label: "bounded (defaults)", env: {} },
  { label: "bounded, upload buckets lifted", env: lifted },
  {
    label: "unbounded (before: 4 pool threads, no image line, no buckets)",
    env: { ...lifted, UV_THREADPOOL_SIZE: "4", IDENTITY_IMAGE_CONCURRENCY: "1000", IDENTITY_IMAGE_QUEUE: "1000" }
  }
]

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!

interface SignIns {
  readonly count: number
  readonly failed: number
  readonly p50: number
  readonly p99: number
  readonly max: number
}

/** Signs in one after the other for `seconds`; the latencies of those that started in the window. */
const signIns = async (issuer: string, credentials: string, seconds: number): Promise<SignIns> => {
  const latencies: Array<number> = []
  let failed = 0
  const until = performance.now() + seconds * 1000
  while (performance.now() < until) {
    const started = performance.now()
    const res = await fetch(`${issuer}/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: credentials
    })
    await res.arrayBuffer()
    if (res.status !== 200) failed++
    latencies.push(performance.now() - started)
  }
  const sorted = latencies.sort((a, b) => a - b)
  return {
    count: sorted.length,
    failed,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    max: sorted.at(-1) ?? 0
  }
}

interface Uploads {
  readonly stored: number
  readonly refused: number
  readonly other: number
}

/**
 * The uploading clients, in a process of their own so that sending megabytes does not delay the
 * measuring client's event loop: `UPLOAD_CLIENTS` loops, each sending the body in `UPLOAD_FILE` again
 * as soon as it is answered, until SIGTERM; then the answers' counts on stdout.
 */
const uploadClients = `
import * as Fs from "node:fs"
const body = new Blob([Fs.readFileSync(process.env.UPLOAD_FILE)])
const counts = { stored: 0, refused: 0, other: 0 }
let stopped = false
process.on("SIGTERM", () => { stopped = true })
await Promise.all(Array.from({ length: Number(process.env.UPLOAD_CLIENTS) }, async () => {
  while (!stopped) {
    const res = await fetch(process.env.UPLOAD_URL, {
      method: "POST",
      headers: { authorization: "Bearer " + process.env.UPLOAD_TOKEN, "content-type": process.env.UPLOAD_CONTENT_TYPE },
      body
    }).catch(() => undefined)
    await res?.arrayBuffer()
    if (res?.status === 200) counts.stored++
    else if (res?.status === 429) counts.refused++
    else counts.other++
  }
}))
process.stdout.write(JSON.stringify(counts))
`

/** Starts the uploading clients; `stop` ends them and answers their counts. */
const startUploads = (env: Record<string, string>) => {
  const child = spawn(process.execPath, ["--input-type=module", "-e", uploadClients], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"]
  })
  let out = ""
  child.stdout.on("data", (chunk: Buffer) => out += chunk.toString("utf8"))
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  return {
    stop: async (): Promise<Uploads> => {
      child.kill("SIGTERM")
      await exited
      return JSON.parse(out) as Uploads
    }
  }
}

const ms = (n: number) => n.toFixed(0)

export const uploads = async (): Promise<string> => {
  const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "shiori-bench-uploads-"))
  const pgPort = await freePort()
  const port = await freePort()
  const origin = `http://127.0.0.1:${port}`
  const issuer = `${origin}/api/v1`
  const base = {
    SHIORI_DATA_DIR: dataDir,
    EMBEDDED_PG_PORT: String(pgPort),
    IDENTITY_PORT: String(port),
    CATALOG_PORT: String(await freePort()),
    IDENTITY_ISSUER: issuer,
    SHIORI_SERVE: "identity",
    SHIORI_DEMO_WORKS: "0",
    // One client signs in again and again from one address: the sign-in buckets are not measured.
    IDENTITY_LOGIN_IP_BURST: "100000000",
    IDENTITY_LOGIN_IP_PER_MINUTE: "100000000",
    ...(scryptLogN === undefined ? {} : { IDENTITY_SCRYPT_LOG_N: scryptLogN })
  }
  // 8000 x 5000: the 40 megapixels an avatar may have, about 0.5 MB as PNG.
  const picture = await sharp({ create: { width: 8000, height: 5000, channels: 3, background: "#336699" } })
    .png()
    .toBuffer()
  const boundary = `----bench${Crypto.randomBytes(8).toString("hex")}`
  const body = Buffer.concat([
    Buffer.from(
      `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="big.png"\r\n` +
        "content-type: image/png\r\n\r\n"
    ),
    picture,
    Buffer.from(`\r\n--${boundary}--\r\n`)
  ])
  const contentType = `multipart/form-data; boundary=${boundary}`
  const bodyDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "shiori-bench-upload-body-"))
  const bodyFile = Path.join(bodyDir, "upload.multipart")
  Fs.writeFileSync(bodyFile, body)
  const signer = { email: "signer@example.com", password: Crypto.randomBytes(18).toString("base64url") }
  const uploader = { email: "uploader@example.com", password: Crypto.randomBytes(18).toString("base64url") }

  const lines: Array<string> = []
  const notes: Array<string> = [`Load average before: ${loadavg()} (${Os.cpus().length} CPUs).`]
  let server: Proc | undefined
  try {
    for (const [i, variant] of variants.entries()) {
      console.error(`  sign-in beside uploads: ${variant.label}`)
      const env = { ...base, ...variant.env }
      server = await startProcess("dist/src/main.js", env, `${origin}/readyz`)
      if (i === 0) {
        for (const user of [signer, uploader]) {
          execFileSync(process.execPath, [
            "dist/src/cli/main.js",
            "user",
            "create",
            "--email",
            user.email,
            "--password",
            user.password,
            "--name",
            "Bench",
            "--json"
          ], { cwd: root, env: { ...process.env, LOG_LEVEL: "Warning", ...env } })
        }
      }
      const credentials = JSON.stringify(signer)
      const login = await fetch(`${issuer}/auth/login`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(uploader)
      })
      if (login.status !== 200) throw new Error(`login: ${login.status} ${await login.text()}`)
      const token = ((await login.json()) as { data: { access_token: string } }).data.access_token

      await signIns(issuer, credentials, settings.warmup)
      const alone = await signIns(issuer, credentials, settings.duration)
      const clients = startUploads({
        UPLOAD_CLIENTS: String(uploaders),
        UPLOAD_FILE: bodyFile,
        UPLOAD_URL: `${issuer}/auth/me/avatar`,
        UPLOAD_TOKEN: token,
        UPLOAD_CONTENT_TYPE: contentType
      })
      // The uploads run a warm-up's length before the sign-ins are measured beside them.
      await new Promise((r) => setTimeout(r, settings.warmup * 1000))
      const beside = await signIns(issuer, credentials, settings.duration)
      const sent = await clients.stop()
      const ratio = alone.p99 > 0 ? beside.p99 / alone.p99 : 0
      const met = alone.failed === 0 && beside.failed === 0 && sent.other === 0 && ratio <= 2
      lines.push(
        `| ${variant.label} | ${alone.count} | ${ms(alone.p50)} | ${ms(alone.p99)} | ${beside.count} | ` +
          `${ms(beside.p50)} | ${ms(beside.p99)} | ${ms(beside.max)} | ${ratio.toFixed(2)}x | ` +
          `${alone.failed + beside.failed} | ${sent.stored} / ${sent.refused} / ${sent.other} | ` +
          `${met ? "yes" : "**no**"} |`
      )
      notes.push(`${variant.label}: RSS ${server.rssMb().toFixed(0)} MB after the uploads.`)
      await server.stop()
      server = undefined
    }
  } finally {
    await server?.stop()
    Fs.rmSync(dataDir, { recursive: true, force: true })
    Fs.rmSync(bodyDir, { recursive: true, force: true })
  }
  return [
    "## Sign-in beside avatar uploads",
    `One client signs in one request after the other (scrypt N = 2^${scryptLogN ?? 17}) for ${settings.duration} s ` +
    `alone, then for ${settings.duration} s while ${uploaders} clients upload a 40-megapixel PNG (8000 x 5000, ` +
    `${(picture.length / 1e6).toFixed(1)} MB) with one account's token, each sending again as soon as it is ` +
    "answered (refusals included). Latencies in ms. Target: loaded p99 at most 2x unloaded p99.",
    [
      "| server | alone n | p50 | p99 | beside uploads n | p50 | p99 | max | p99 ratio | failed sign-ins | " +
      "uploads stored / 429 / other | met |",
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|:-:|",
      ...lines
    ].join("\n"),
    ...notes,
    `Load average after: ${loadavg()}.`
  ].join("\n\n")
}
