/**
 * The mixed load of docs/deploying.md ("The topology, step by step") that test/deploy/Topology.test.ts
 * drives through a rolling restart and bench/scenarios/Faults.ts through a rolling restart and a
 * PostgreSQL primary restart: catalog reads and discovery documents, claim writes with an
 * Idempotency-Key, token refreshes, all through the proxy of scripts/local-topology.ts.
 */
import { Effect } from "effect"
import * as Crypto from "node:crypto"
import { performance } from "node:perf_hooks"
import type { Topology } from "../../scripts/local-topology.js"
import { withPgClient } from "../../src/platform/Database.js"
import { runCli } from "./Cli.js"
import { exchangeCode, getCode, login, refreshRequest, type TestClient } from "./IdentityServers.js"

/** An operator command on the topology's database; answers its JSON. */
export const topologyCli = async (topology: Topology, args: ReadonlyArray<string>) => {
  const result = await runCli([...args, "--json"], { ...topology.env })
  if (result.code !== 0) throw new Error(`cli ${args.join(" ")}: ${result.stderr}`)
  return JSON.parse(result.stdout)
}

/** A parameterized query on the topology's primary. */
export const topologyQuery = <A>(topology: Topology, text: string, params: ReadonlyArray<unknown> = []) =>
  Effect.runPromise(
    withPgClient(topology.databaseUrl, async (client) => (await client.query(text, [...params])).rows as Array<A>)
  )

export const newTopologyUser = async (topology: Topology, label: string) => {
  const email = `${label}-${Crypto.randomBytes(4).toString("hex")}@example.com`
  const password = `pw-${Crypto.randomBytes(12).toString("hex")}`
  const { id } = await topologyCli(topology, [
    "user",
    "create",
    "--email",
    email,
    "--password",
    password,
    "--name",
    label
  ])
  return { id: Number(id), email, password }
}

/** Who the load acts as: a writer with a `catalog:read,claims:write` key and an OAuth client. */
export interface LoadActors {
  readonly writer: { readonly id: number; readonly email: string; readonly password: string }
  readonly key: string
  readonly client: TestClient
}

export const loadActors = async (topology: Topology): Promise<LoadActors> => {
  const writer = await newTopologyUser(topology, "writer")
  const { key } = await topologyCli(topology, [
    "api-key",
    "create",
    "--site",
    "site_a",
    "--scopes",
    "catalog:read,claims:write",
    "--user",
    String(writer.id)
  ])
  const client: TestClient = {
    clientId: `deploy-${Crypto.randomBytes(4).toString("hex")}`,
    secret: Crypto.randomBytes(24).toString("hex"),
    redirectUri: "https://rp.example/callback"
  }
  await topologyCli(topology, [
    "client",
    "create",
    "--client-id",
    client.clientId,
    "--secret",
    client.secret!,
    "--redirect-uri",
    client.redirectUri,
    "--auto-consent"
  ])
  return { writer, key, client }
}

/** A refresh token of `actors.client` for the writer, from a full code flow. */
export const firstRefreshToken = async (topology: Topology, actors: LoadActors): Promise<string> => {
  const signedIn = await login(topology.identity, actors.writer)
  const { code } = await getCode(topology.identity, actors.client, signedIn.accessToken, {
    scope: "openid offline_access"
  })
  const first = await exchangeCode(topology.identity, actors.client, code)
  if (first.status !== 200 || typeof first.body?.refresh_token !== "string") {
    throw new Error(`code exchange: ${first.status} ${JSON.stringify(first.body)}`)
  }
  return first.body.refresh_token
}

/** One request of the load: its kind, when it was sent and answered (ms since the epoch), its status. */
export interface Answer {
  readonly kind: string
  readonly sentAt: number
  readonly answeredAt: number
  readonly ms: number
  /** `undefined`: no answer (the connection failed). */
  readonly status: number | undefined
  readonly retryAfter: string | null
  /** The answer was a problem document (`application/problem+json`). */
  readonly problem: boolean
  readonly contentType: string | null
}

export interface MixedLoadOptions {
  /** Display names of the claimed works start with this. */
  readonly writePrefix: string
  /** Idempotency keys start with this (letters, digits and dashes). */
  readonly keyPrefix: string
  readonly readers?: number
  readonly writers?: number
  /**
   * Attempts per claim write: after a 503, a 429 or a failed connection the client sends the same
   * request with the same Idempotency-Key again, after Retry-After (at most `maxWaitMs`), as a
   * well-behaved client does. 1 (the default): no retry.
   */
  readonly writeAttempts?: number
  readonly maxWaitMs?: number
  /** Token refreshes that answer no refresh token start a new code flow instead of stopping. */
  readonly renewRefreshToken?: boolean
}

export interface LoadOutcome {
  readonly answers: ReadonlyArray<Answer>
  /** Display names of the claim writes answered 201 (or 200, a replay) at some attempt. */
  readonly acknowledged: ReadonlyArray<string>
  /** Display names of the claim writes the client gave up on. */
  readonly abandoned: ReadonlyArray<string>
  /** 5xx answers, failed connections, writes not acknowledged at the first attempt, lost refresh tokens. */
  readonly failures: ReadonlyArray<string>
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Runs the load until `stop()`, which answers what it saw. */
export const mixedLoad = (topology: Topology, actors: LoadActors, refreshToken: string, options: MixedLoadOptions) => {
  const answers: Array<Answer> = []
  const failures: Array<string> = []
  const acknowledged: Array<string> = []
  const abandoned: Array<string> = []
  const attempts = options.writeAttempts ?? 1
  const maxWaitMs = options.maxWaitMs ?? 2000
  let running = true

  const call = async (kind: string, run: () => Promise<Response>) => {
    const sentAt = Date.now()
    const started = performance.now()
    try {
      const res = await run()
      const text = await res.text()
      answers.push({
        kind,
        sentAt,
        answeredAt: Date.now(),
        ms: performance.now() - started,
        status: res.status,
        retryAfter: res.headers.get("retry-after"),
        problem: (res.headers.get("content-type") ?? "").startsWith("application/problem+json"),
        contentType: res.headers.get("content-type")
      })
      if (res.status >= 500) failures.push(`${kind}: ${res.status} ${text.slice(0, 200)}`)
      return { status: res.status, text, retryAfter: res.headers.get("retry-after") }
    } catch (e) {
      answers.push({
        kind,
        sentAt,
        answeredAt: Date.now(),
        ms: performance.now() - started,
        status: undefined,
        retryAfter: null,
        problem: false,
        contentType: null
      })
      const cause = (e as { cause?: { code?: string; message?: string } }).cause
      failures.push(`${kind}: ${cause?.code ?? cause?.message ?? String(e)}`)
      return undefined
    }
  }
  /** Retry-After (seconds) in ms, at most `maxWaitMs`; 200 ms without one. */
  const wait = (retryAfter: string | null | undefined) => {
    const seconds = Number(retryAfter)
    return Math.min(maxWaitMs, retryAfter != null && Number.isFinite(seconds) ? seconds * 1000 : 200)
  }
  const bearer = { authorization: `Bearer ${actors.key}` }
  const reader = async () => {
    while (running) {
      await call("catalog read", () => fetch(`${topology.catalog}/v2/catalog/works?limit=5`, { headers: bearer }))
      await call("discovery", () => fetch(`${topology.issuer}/.well-known/openid-configuration`))
    }
  }
  const claimWriter = async (name: string) => {
    for (let n = 1; running; n++) {
      const displayName = `${options.writePrefix} ${name} ${n}`
      for (let attempt = 1; attempt <= attempts; attempt++) {
        const answer = await call("claim write", () =>
          fetch(`${topology.catalog}/v2/claims`, {
            method: "POST",
            headers: {
              ...bearer,
              "content-type": "application/json",
              "idempotency-key": `${options.keyPrefix}-${name}-${n}`
            },
            body: JSON.stringify({ display_name: displayName, site_work_id: String(n) })
          }))
        if (answer?.status === 201 || answer?.status === 200) {
          acknowledged.push(displayName)
          break
        }
        if (answer !== undefined) failures.push(`claim write: ${answer.status} ${answer.text.slice(0, 200)}`)
        const retryable = answer === undefined || answer.status === 503 || answer.status === 429
        if (!retryable || attempt === attempts) {
          abandoned.push(displayName)
          break
        }
        await sleep(wait(answer?.retryAfter))
      }
    }
  }
  const refresher = async () => {
    let token = refreshToken
    while (running) {
      let next: string | undefined
      let retryAfter: string | null = null
      const answer = await call("token refresh", async () => {
        const res = await refreshRequest(topology.identity, actors.client, token)
        next = res.body?.refresh_token
        retryAfter = res.headers.get("retry-after")
        const headers = new Headers()
        for (const name of ["content-type", "retry-after"]) {
          const value = res.headers.get(name)
          if (value !== null) headers.set(name, value)
        }
        return new Response(JSON.stringify(res.body), { status: res.status, headers })
      })
      if (next !== undefined) {
        token = next
        continue
      }
      failures.push("token refresh: no refresh token in the answer")
      if (options.renewRefreshToken !== true) return
      await sleep(wait(retryAfter))
      // Refused for want of capacity, the token is still good; anything else, a new code flow.
      const retryable = answer === undefined || answer.status === 503 || answer.status === 429
      if (!retryable) token = await firstRefreshToken(topology, actors).catch(() => token)
    }
  }

  const running$ = Promise.all([
    ...Array.from({ length: options.readers ?? 2 }, () => reader()),
    ...Array.from({ length: options.writers ?? 2 }, (_, i) => claimWriter(String.fromCharCode(97 + i))),
    refresher()
  ])
  return {
    stop: async (): Promise<LoadOutcome> => {
      running = false
      await running$
      return { answers, acknowledged, abandoned, failures }
    }
  }
}
