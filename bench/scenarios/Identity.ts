/**
 * The identity provider against `oidc-provider`: the real server (`node dist/src/main.js`,
 * identity only, on a throwaway embedded database) and the reference (bench/baseline/OidcProvider.ts,
 * in-memory storage) signing with the same RS256 key, driven in the same run with the same requests:
 *
 * - token exchange: `authorization_code` with PKCE, a fresh code per request from a pool minted
 *   before each phase (ours through the real `/oauth/authorize` with a session cookie and an
 *   auto-consent client; the reference's through its model classes);
 * - refresh: `refresh_token` with rotation; a pool of live chains, each request takes a chain's
 *   current token and puts its successor back, and every answer must carry an id_token;
 * - userinfo: `GET` with a valid access token.
 *
 * Target (bench/README.md): at least 1.0x the reference's throughput on each, p99 under 50 ms, at 32
 * connections. A request that found the code pool empty is sent with a dead code and counts as a
 * non-2xx, never hidden.
 */
import { execFileSync } from "node:child_process"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import Pg from "pg"
import {
  descendantsCpu,
  freePort,
  load,
  ownCpu,
  type Proc,
  type Result,
  root,
  settings,
  startProcess
} from "../Harness.js"

/** Codes per second assumed when sizing the warm-up's pool; the measured pool follows the warm-up's rate. */
const codeRate = Number(process.env.BENCH_IDENTITY_CODE_RATE ?? 500)
/** `BENCH_IDENTITY_ONLY=token,userinfo`: run only the scenarios whose names start with these words. */
const only = process.env.BENCH_IDENTITY_ONLY?.split(",").map((word) => word.trim()).filter((word) => word !== "")
const clientId = "bench"
const clientSecret = Crypto.randomBytes(24).toString("base64url")
const redirectUri = "https://rp.example/callback"
const scope = "openid profile email"
const verifier = Crypto.randomBytes(32).toString("base64url")
const challenge = Crypto.createHash("sha256").update(verifier, "ascii").digest("base64url")
const nonce = "bench-nonce"
const form = { "content-type": "application/x-www-form-urlencoded" }

const loadavg = () => Os.loadavg().map((n) => n.toFixed(2)).join(", ")

// ---------------------------------------------------------------------------------------------
// The two sides
// ---------------------------------------------------------------------------------------------

interface Side {
  readonly label: string
  readonly origin: string
  readonly tokenPath: string
  readonly userinfoPath: string
  /** `count` fresh codes for the bench client (PKCE `challenge`, `scope`, `nonce`). */
  readonly mintCodes: (count: number) => Promise<Array<string>>
  /** CPU seconds so far: the provider's process, and its database when it has one. */
  readonly cpu: () => { readonly server: number; readonly database?: number }
}

const exchangeBody = (code: string) =>
  new URLSearchParams({
    grant_type: "authorization_code",
    code,
    redirect_uri: redirectUri,
    code_verifier: verifier,
    client_id: clientId,
    client_secret: clientSecret
  }).toString()

const refreshBody = (token: string) =>
  new URLSearchParams({
    grant_type: "refresh_token",
    refresh_token: token,
    client_id: clientId,
    client_secret: clientSecret
  }).toString()

interface TokenBody {
  readonly access_token: string
  readonly refresh_token: string
  readonly id_token?: string
}

const postToken = async (side: Side, body: string): Promise<TokenBody> => {
  const res = await fetch(`${side.origin}${side.tokenPath}`, { method: "POST", headers: form, body })
  const text = await res.text()
  if (res.status !== 200) throw new Error(`${side.label} token endpoint: ${res.status} ${text}`)
  return JSON.parse(text) as TokenBody
}

/** Runs `task` for 0..count-1 with at most `width` at once; answers in order. */
const parallel = async <A>(count: number, width: number, task: (i: number) => Promise<A>): Promise<Array<A>> => {
  const out = new Array<A>(count)
  let next = 0
  await Promise.all(Array.from({ length: Math.min(width, count) }, async () => {
    while (next < count) {
      const i = next++
      out[i] = await task(i)
    }
  }))
  return out
}

/** Setup requests (minting codes, fresh tokens) that failed and were retried: reported, never hidden. */
const setupFailures: Array<string> = []

/** `task`, tried up to three times. */
const retried = async <A>(label: string, task: () => Promise<A>): Promise<A> => {
  for (let attempt = 1;; attempt++) {
    try {
      return await task()
    } catch (error) {
      setupFailures.push(`${label}: ${String(error).slice(0, 200)}`)
      if (attempt === 3) throw error
      await new Promise((r) => setTimeout(r, 500))
    }
  }
}

/** Fresh tokens: `count` codes minted and exchanged, one at a time per worker. */
const freshTokens = (side: Side, count: number) =>
  parallel(
    count,
    8,
    () => retried(`${side.label} fresh token`, async () => postToken(side, exchangeBody((await side.mintCodes(1))[0]!)))
  )

const kidOf = (jwt: string) =>
  (JSON.parse(Buffer.from(jwt.split(".")[0]!, "base64url").toString("utf8")) as { kid?: string }).kid

// ---------------------------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------------------------

interface Run extends Result {
  /** CPU milliseconds per completed request, per process. */
  readonly cpuMs: { readonly server: number; readonly database?: number }
  /** Scenario-specific failures (empty code pool, broken chains, missing id_token). */
  readonly problems: ReadonlyArray<string>
  /** Seconds spent minting codes or tokens before the phases. */
  readonly setupSeconds: number
}

/** `load` with the side's CPU measured over the measured phase. */
const measure = async (
  side: Side,
  name: string,
  target: Omit<Parameters<typeof load>[1], "prepare">,
  prepare: (phase: "warmup" | "measured", warmup?: Result) => Promise<void>,
  problems: () => ReadonlyArray<string>
): Promise<Run> => {
  console.error(`  ${name}: ${side.label}`)
  let before = side.cpu()
  let setup = 0
  const result = await load(`${name}: ${side.label}`, {
    ...target,
    prepare: async (phase, warmup) => {
      const started = Date.now()
      await prepare(phase, warmup)
      setup += (Date.now() - started) / 1000
      before = side.cpu()
    }
  })
  const after = side.cpu()
  const perRequest = (a: number, b: number) => result.requests > 0 ? ((b - a) * 1000) / result.requests : 0
  return {
    ...result,
    cpuMs: {
      server: perRequest(before.server, after.server),
      ...(after.database !== undefined ? { database: perRequest(before.database!, after.database) } : {})
    },
    problems: problems(),
    setupSeconds: setup
  }
}

/** `authorization_code`: every request takes the next code of a pool filled before each phase. */
const tokenExchange = async (side: Side): Promise<Run> => {
  let pool: Array<string> = []
  let empty = 0
  const prepare = async (phase: "warmup" | "measured", warmup?: Result) => {
    // The measured pool: 3x the warm-up's successful rate (a warmed-up server runs faster than its
    // warm-up did), from twice the guess when the warm-up ran dry.
    const rate = phase === "warmup" || warmup === undefined
      ? codeRate
      : Math.max((warmup.requests - warmup.non2xx) / settings.warmup, empty > 0 ? 2 * codeRate : 100)
    const seconds = phase === "warmup" ? settings.warmup : settings.duration
    pool = await side.mintCodes(Math.ceil(rate * (phase === "warmup" ? 1.5 : 3) * seconds) + 2 * settings.connections)
    empty = 0
  }
  return measure(
    side,
    "token exchange (authorization_code + PKCE)",
    {
      url: side.origin,
      requests: [{
        method: "POST",
        path: side.tokenPath,
        headers: form,
        setupRequest: (request) => {
          const code = pool.pop()
          if (code === undefined) empty++
          return { ...request, body: exchangeBody(code ?? "pool-ran-out") }
        }
      }]
    },
    prepare,
    () => empty > 0 ? [`the code pool ran out: ${empty} requests sent without a valid code`] : []
  )
}

/** `refresh_token` with rotation: a pool of live chains; each answer's refresh_token goes back into it. */
const refresh = async (side: Side): Promise<Run> => {
  let chains: Array<string> = []
  let empty = 0
  let broken = 0
  let withoutIdToken = 0
  const prepare = async () => {
    // One chain per connection, plus spares for chains a failed request ends.
    chains = (await freshTokens(side, settings.connections + 8)).map((t) => t.refresh_token)
    empty = broken = withoutIdToken = 0
  }
  return measure(
    side,
    "refresh (rotation, id_token)",
    {
      url: side.origin,
      requests: [{
        method: "POST",
        path: side.tokenPath,
        headers: form,
        setupRequest: (request) => {
          const token = chains.pop()
          if (token === undefined) empty++
          return { ...request, body: refreshBody(token ?? "no-live-chain-left") }
        },
        onResponse: (status, body) => {
          if (status !== 200) {
            broken++
            return
          }
          let parsed: Partial<TokenBody> = {}
          try {
            parsed = JSON.parse(body) as Partial<TokenBody>
          } catch {
            // Counted below as a broken chain.
          }
          if (parsed.id_token === undefined) withoutIdToken++
          if (parsed.refresh_token !== undefined) chains.push(parsed.refresh_token)
          else broken++
        }
      }]
    },
    prepare,
    () => [
      ...(broken > 0 ? [`${broken} refreshes failed (their chains ended)`] : []),
      ...(empty > 0 ? [`${empty} requests found no live chain`] : []),
      ...(withoutIdToken > 0 ? [`${withoutIdToken} answers carried no id_token`] : [])
    ]
  )
}

const userinfo = async (side: Side): Promise<Run> => {
  const token = (await freshTokens(side, 1))[0]!.access_token
  return measure(
    side,
    "userinfo",
    {
      url: `${side.origin}${side.userinfoPath}`,
      headers: { authorization: `Bearer ${token}` }
    },
    async () => {},
    () => []
  )
}

// ---------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------

const cpuText = (run: Run) =>
  `${run.cpuMs.server.toFixed(2)}${run.cpuMs.database !== undefined ? ` + ${run.cpuMs.database.toFixed(2)} db` : ""}`

const row = (name: string, ours: Run, reference: Run) => {
  const ratio = reference.rps > 0 ? ours.rps / reference.rps : 0
  const clean = (r: Run) => r.requests > 0 && r.non2xx === 0 && r.errors === 0 && r.problems.length === 0
  // A failing reference makes the ratio meaningless: the scenario does not count as met either.
  const met = clean(ours) && clean(reference) && ratio >= 1 && ours.p99 < 50
  return `| ${name} | ${ours.rps.toFixed(0)} | ${ours.p50} | ${ours.p99} | ${ours.non2xx} | ${ours.errors} | ` +
    `${reference.rps.toFixed(0)} | ${reference.p50} | ${reference.p99} | ${reference.non2xx} | ${reference.errors} | ` +
    `${ratio.toFixed(2)}x | ${cpuText(ours)} | ${cpuText(reference)} | >= 1.0x, p99 < 50 ms | ` +
    `${met ? "yes" : "**no**"} |`
}

/** The floor next to both providers: what the design allows, and how far our stack is from it. */
const floorRow = (name: string, ours: Run, floor: Run, reference: Run) => {
  const ratio = (a: Run, b: Run) => b.rps > 0 ? `${(a.rps / b.rps).toFixed(2)}x` : "-"
  return `| ${name} | ${floor.rps.toFixed(0)} | ${floor.p99} | ${floor.non2xx + floor.errors} | ${cpuText(floor)} | ` +
    `${ratio(floor, reference)} | ${ratio(ours, floor)} |`
}

const versionOf = (packageJson: string) =>
  (JSON.parse(Fs.readFileSync(Path.join(root, packageJson), "utf8")) as { version: string }).version
const packageVersion = (name: string) => versionOf(`node_modules/${name}/package.json`)

// ---------------------------------------------------------------------------------------------
// Suite
// ---------------------------------------------------------------------------------------------

/** A sealed signing key opened with the development secret's key-encryption key (SigningKeyCipher.ts). */
const openSealed = (kid: string, sealed: { iv: string; tag: string; ct: string }): Record<string, unknown> => {
  const secret = process.env.SHIORI_SECRET ?? "shiori-development-secret-change-me"
  const kek = Buffer.from(Crypto.hkdfSync("sha256", secret, Buffer.alloc(0), "shiori signing-key encryption v1", 32))
  const decipher = Crypto.createDecipheriv("aes-256-gcm", kek, Buffer.from(sealed.iv, "base64url"), {
    authTagLength: 16
  })
  decipher.setAAD(Buffer.from(kid, "utf8"))
  decipher.setAuthTag(Buffer.from(sealed.tag, "base64url"))
  const plain = Buffer.concat([decipher.update(Buffer.from(sealed.ct, "base64url")), decipher.final()])
  return JSON.parse(plain.toString("utf8")) as Record<string, unknown>
}

export const identity = async (): Promise<string> => {
  const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "shiori-bench-identity-"))
  const pgPort = await freePort()
  const port = await freePort()
  const origin = `http://127.0.0.1:${port}`
  const issuer = `${origin}/api/v1`
  const env = {
    SHIORI_DATA_DIR: dataDir,
    EMBEDDED_PG_PORT: String(pgPort),
    IDENTITY_PORT: String(port),
    CATALOG_PORT: String(await freePort()),
    IDENTITY_ISSUER: issuer,
    SHIORI_SERVE: "identity",
    SHIORI_DEMO_WORKS: "0",
    // One client drives every request: its token bucket must not be what is measured.
    IDENTITY_TOKEN_RATE_BURST: "100000000",
    IDENTITY_TOKEN_RATE_PER_SECOND: "100000000",
    // Nor the per-address buckets of authorize, userinfo and revocation: every request comes from one address.
    IDENTITY_AUTHORIZE_RATE_BURST: "100000000",
    IDENTITY_AUTHORIZE_RATE_PER_SECOND: "100000000",
    IDENTITY_USERINFO_RATE_BURST: "100000000",
    IDENTITY_USERINFO_RATE_PER_SECOND: "100000000",
    IDENTITY_REVOKE_RATE_BURST: "100000000",
    IDENTITY_REVOKE_RATE_PER_SECOND: "100000000"
  }
  const cli = (args: ReadonlyArray<string>) =>
    JSON.parse(
      execFileSync(process.execPath, ["dist/src/cli/main.js", ...args, "--json"], {
        cwd: root,
        env: { ...process.env, LOG_LEVEL: "Warning", ...env }
      }).toString()
    )
  const notes: Array<string> = [`Load average before: ${loadavg()} (${Os.cpus().length} CPUs).`]
  setupFailures.length = 0
  let server: Proc | undefined
  let reference: Proc | undefined
  let floor: Proc | undefined
  try {
    server = await startProcess("dist/src/main.js", env, `${origin}/readyz`)
    const ourProc = server
    const password = Crypto.randomBytes(18).toString("base64url")
    const user = cli(["user", "create", "--email", "bench@example.com", "--password", password, "--name", "Bench"]) as {
      sub: string
    }
    cli([
      "client",
      "create",
      "--client-id",
      clientId,
      "--secret",
      clientSecret,
      "--redirect-uri",
      redirectUri,
      "--auto-consent",
      "--name",
      "Bench"
    ])
    const login = await fetch(`${issuer}/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "bench@example.com", password })
    })
    if (login.status !== 200) throw new Error(`login: ${login.status} ${await login.text()}`)
    const cookie = (login.headers.get("set-cookie") ?? "").split(";")[0]!

    // The key our server signs with now, for the reference. It is stored sealed (migrations/0011:
    // AES-256-GCM under a key derived from SHIORI_SECRET, the row's kid as associated data; the
    // server here runs on the development secret): opened here as src/identity/keys/SigningKeyCipher.ts does.
    const pg = new Pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${pgPort}/shiori` })
    await pg.connect()
    const stored = (await pg.query(
      `SELECT kid, private_jwk, private_jwk_encrypted FROM signing_keys
       WHERE activates_at <= now() AND (retired_at IS NULL OR retired_at > now())
       ORDER BY activates_at DESC LIMIT 1`
    ).finally(() => pg.end())).rows[0] as {
      kid: string
      private_jwk: Record<string, unknown> | null
      private_jwk_encrypted: { iv: string; tag: string; ct: string } | null
    }
    const key = {
      kid: stored.kid,
      private_jwk: stored.private_jwk ?? openSealed(stored.kid, stored.private_jwk_encrypted!)
    }

    const referencePort = await freePort()
    reference = await startProcess("dist/bench/baseline/OidcProvider.js", {
      PORT: String(referencePort),
      CLIENT_ID: clientId,
      CLIENT_SECRET: clientSecret,
      REDIRECT_URI: redirectUri,
      SIGNING_JWK: JSON.stringify(key.private_jwk),
      ACCOUNT_SUB: user.sub
    }, `http://127.0.0.1:${referencePort}/healthz`)
    const referenceProc = reference

    const floorPort = await freePort()
    floor = await startProcess("dist/bench/baseline/IdentityFloor.js", {
      PORT: String(floorPort),
      DATABASE_URL: `postgres://postgres@127.0.0.1:${pgPort}/shiori`,
      ISSUER: issuer,
      CLIENT_ID: clientId,
      CLIENT_SECRET: clientSecret,
      SIGNING_JWK: JSON.stringify({ ...key.private_jwk, kid: key.kid })
    }, `http://127.0.0.1:${floorPort}/healthz`)
    const floorProc = floor

    const authorizeQuery = new URLSearchParams({
      client_id: clientId,
      redirect_uri: redirectUri,
      response_type: "code",
      state: "bench",
      scope,
      code_challenge: challenge,
      code_challenge_method: "S256",
      nonce
    }).toString()
    const ours: Side = {
      label: "shiori",
      origin,
      tokenPath: "/api/v1/oauth/token",
      userinfoPath: "/api/v1/oauth/userinfo",
      // The real authorize endpoint: session cookie, auto-consent client, 302 to the client with a code.
      mintCodes: (count) =>
        parallel(count, 8, () =>
          retried("shiori authorize", async () => {
            const res = await fetch(`${issuer}/oauth/authorize?${authorizeQuery}`, {
              redirect: "manual",
              headers: { cookie }
            })
            await res.arrayBuffer()
            const code = new URL(res.headers.get("location") ?? "", redirectUri).searchParams.get("code")
            if (res.status !== 302 || code === null) {
              throw new Error(`authorize answered ${res.status}, location ${res.headers.get("location")}`)
            }
            return code
          })),
      cpu: () => ({ server: ownCpu(ourProc.child.pid!), database: descendantsCpu(ourProc.child.pid!) })
    }
    const theirs: Side = {
      label: "oidc-provider",
      origin: `http://127.0.0.1:${referencePort}`,
      tokenPath: "/token",
      userinfoPath: "/me",
      mintCodes: async (count) => {
        const codes: Array<string> = []
        // In slices, so one minting request never holds the reference's event loop for long.
        for (let done = 0; done < count; done += 5000) {
          const query = new URLSearchParams({
            count: String(Math.min(5000, count - done)),
            code_challenge: challenge,
            nonce
          })
          const res = await fetch(`http://127.0.0.1:${referencePort}/bench/codes?${query}`)
          if (res.status !== 200) throw new Error(`reference codes: ${res.status} ${await res.text()}`)
          codes.push(...((await res.json()) as { codes: Array<string> }).codes)
        }
        return codes
      },
      cpu: () => ({ server: ownCpu(referenceProc.child.pid!) })
    }

    // The floor redeems codes our provider minted, in our database (whose CPU it is charged).
    const floorSide: Side = {
      label: "floor",
      origin: `http://127.0.0.1:${floorPort}`,
      tokenPath: "/token",
      userinfoPath: "/userinfo",
      mintCodes: ours.mintCodes,
      cpu: () => ({ server: ownCpu(floorProc.child.pid!), database: descendantsCpu(ourProc.child.pid!) })
    }

    // Every side answers, with the same key.
    const kids = await Promise.all(
      [ours, theirs, floorSide].map(async (side) => kidOf((await freshTokens(side, 1))[0]!.id_token!))
    )
    notes.push(
      `Signing key: kid \`${key.kid}\` (RSA 2048, RS256); the id_tokens of both sides name ` +
        (kids.every((kid) => kid === key.kid) ? "it." : `**${kids.join(" and ")}**.`)
    )

    const lines: Array<string> = []
    const floorLines: Array<string> = []
    const problems: Array<string> = []
    const setup: Array<string> = []
    for (
      const [name, scenario] of [
        ["token exchange", tokenExchange],
        ["refresh + rotation", refresh],
        ["userinfo", userinfo]
      ] as const
    ) {
      if (only !== undefined && !only.some((word) => name.startsWith(word))) continue
      const theirRun = await scenario(theirs)
      const floorRun = await scenario(floorSide)
      const ourRun = await scenario(ours)
      lines.push(row(name, ourRun, theirRun))
      floorLines.push(floorRow(name, ourRun, floorRun, theirRun))
      for (const run of [ourRun, theirRun, floorRun]) {
        for (const problem of run.problems) problems.push(`${run.name}: ${problem}.`)
      }
      if (ourRun.setupSeconds > 0.5) {
        setup.push(
          `${name}: ${ourRun.setupSeconds.toFixed(1)} s (shiori), ${theirRun.setupSeconds.toFixed(1)} s (reference)`
        )
      }
    }

    const versions = `shiori ${versionOf("package.json")}; oidc-provider ${packageVersion("oidc-provider")} ` +
      `(koa ${packageVersion("koa")}, jose ${packageVersion("jose")}); node ${process.version}.`
    return [
      "## Identity provider against oidc-provider",
      [
        "| scenario | shiori req/s | p50 ms | p99 ms | non-2xx | errors | oidc-provider req/s | p50 ms | p99 ms | " +
        "non-2xx | errors | shiori / reference | shiori CPU ms/req | reference CPU ms/req | target | met |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|:-:|",
        ...lines
      ].join("\n"),
      "### The design's floor",
      "`bench/baseline/IdentityFloor.ts`: plain `node:http` + `pg` on our database, with none of our stack, " +
      "doing only the success path's unavoidable work: the same SQL statements as our provider (two for a code, " +
      "one rotation, one liveness read), two RS256 signatures per token response and one verification per " +
      "userinfo. It bounds what a provider keeping its state in PostgreSQL and issuing JWT access tokens " +
      "can do on this machine; CPU includes the database's.",
      [
        "| scenario | floor req/s | p99 ms | failures | floor CPU ms/req | floor / reference | shiori / floor |",
        "|---|---:|---:|---:|---:|---:|---:|",
        ...floorLines
      ].join("\n"),
      ...(problems.length > 0 ? [`Failures outside the status counts: ${problems.join(" ")}`] : []),
      `Versions: ${versions}` +
      (Number(process.versions.node.split(".")[0]) < 22
        ? " oidc-provider 9 supports Node 22 and later and warns on this runtime; it runs and passes the checks above."
        : ""),
      "Access tokens: shiori issues RS256 JWTs (RFC 9068 `at+jwt`), so a token response signs two JWTs (access " +
      "token and id_token) and userinfo verifies a signature and then asks the database whether the token's " +
      "family is alive; oidc-provider's default is opaque (random, looked up in storage), so a token response " +
      "signs one JWT (the id_token). Storage: shiori PostgreSQL (embedded, same machine: users, codes, " +
      "refresh families, the token endpoint's shared rate-limit bucket), oidc-provider memory (its one account " +
      "included).",
      "CPU ms/req: CPU time of the provider's process over the measured seconds divided by the requests " +
      "completed (shiori: node process + its PostgreSQL). The load generator runs on the same cores.",
      ...notes,
      ...(setup.length > 0 ? [`Minting codes and tokens before the phases took: ${setup.join("; ")}.`] : []),
      ...(setupFailures.length > 0
        ? [
          `Setup requests that failed and were retried: ${setupFailures.length}; first: ` +
          setupFailures.slice(0, 3).map((f) => `\`${f}\``).join(", ")
        ]
        : []),
      `RSS after the run: shiori ${ourProc.rssMb().toFixed(0)} MB (node only, PostgreSQL not counted), ` +
      `oidc-provider ${referenceProc.rssMb().toFixed(0)} MB.`,
      `Load average after: ${loadavg()}. ${settings.connections} connections.`
    ].join("\n\n")
  } finally {
    await floor?.stop()
    await reference?.stop()
    await server?.stop()
    Fs.rmSync(dataDir, { recursive: true, force: true })
  }
}
