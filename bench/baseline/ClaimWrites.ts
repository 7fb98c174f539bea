/**
 * Baseline for the writes benchmark: a plain `node:http` + `pg` server doing, for a claim creation
 * and a moderator's decision, the same SQL statements in the same order and in one transaction as
 * our write runner (src/catalog/writes/Writes.ts) and claims (src/catalog/claims/Claims.ts,
 * ClaimsRepo.ts; statements as of commit 34f176d), with the same prepared-statement use and the
 * same pool size:
 *
 * - before the transaction, the acting user's standing (`SELECT roles, banned FROM users`), which
 *   ours reads on every request that acts for a user (src/identity/users/Standing.ts);
 * - with an `Idempotency-Key`: the stored answer's lookup outside any transaction (a stored answer
 *   is final: replayed at once for the same fingerprint, 409 for another);
 * - BEGIN; with the key: its advisory lock taken without waiting and the lookup again (an answer
 *   stored meanwhile by the request that held the key);
 * - creation: the work's liveness and name (with the key's content gate), the claim row locked
 *   `FOR UPDATE` with the bearer's earlier events on the work (none for an unclaimed work);
 *   decision: the same lock, then the `If-Match` check;
 * - then one statement: `claim_event_lock()`, `nextval('claim_event_seq')`, the claims upsert (or
 *   update) and the claim_events insert, returning the event's id and time;
 * - one statement upserting the quota and storing the answer (built from what the write knows) under
 *   the key when the quota allowed it; COMMIT. The event lock is held over 3 statements.
 *
 * The same answers (status, JSON, `ETag`, `Location`, `Idempotent-Replayed`). None of our stack: no
 * Effect, no schemas, no middleware, no rate limiter, no error model beyond a status code. The
 * credential is looked up once per API key and kept in memory (ours caches it too).
 *
 * Diagnostics (creation only), `EVENT_LOCK`:
 * - `0`: the same without `claim_event_lock()` (what the lock costs; event ids then commit out of
 *   order);
 * - `long`: the sequence before commits 00f5a1b and 34f176d, with the lock held over 8 statements
 *   instead of 3: `SELECT claim_event_lock()`, `nextval`, the claims upsert, the claim_events insert,
 *   the record read back (a lateral join), the quota upsert and the stored answer as separate
 *   statements, then COMMIT.
 */
import * as Crypto from "node:crypto"
import * as Http from "node:http"
import Pg from "pg"
import { AdvisoryLockClass } from "../../src/platform/AdvisoryLocks.js"

const port = Number(process.env.PORT)
const lockMode = process.env.EVENT_LOCK === "0" ? "off" : process.env.EVENT_LOCK === "long" ? "long" : "on"
/** The daily quota per site and kind: set as high as the server's (`CATALOG_QUOTA_*`). */
const quotaLimit = Number(process.env.QUOTA_LIMIT ?? 1e9)
const pool = new Pg.Pool({
  connectionString: process.env.DATABASE_URL,
  max: Number(process.env.DATABASE_POOL_SIZE ?? 20),
  application_name: process.env.APPLICATION_NAME ?? "bench-baseline"
})
pool.on("error", () => {})

const KEEP = "24 hours"
const rfc3339 = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`

// The statement texts ours sends (src/catalog/writes/Writes.ts, src/catalog/claims/ClaimsRepo.ts).
const sqlStanding = "SELECT roles, banned FROM users WHERE id = $1"
const sqlKeyLock = "SELECT pg_try_advisory_xact_lock($1::int4, hashtext($2)) AS ok"
const sqlStored = `SELECT fingerprint, status, headers, body FROM catalog_idempotency
  WHERE scope = $1 AND key = $2 AND created_at > now() - $3::interval`
const sqlLiveWork = (nsfw: boolean) =>
  `SELECT w.id::text AS id, w.display_name FROM works w
  WHERE w.id = $1::bigint AND w.live AND ${nsfw ? "TRUE" : "NOT w.nsfw"}`
const sqlLockClaim = `SELECT c.work_id::text AS work_id, c.state, c.site, c.site_work_id, c.owner_uid, c.hidden_from,
    c.minted, c.last_event_id::text AS last_event_id, w.live AS work_live, w.display_name,
    (SELECT count(*)::int FROM claim_events a WHERE a.work_id = c.work_id AND a.actor_uid = $1) AS acted_count,
    (SELECT ${rfc3339("min(a.created_at)")} FROM claim_events a
     WHERE a.work_id = c.work_id AND a.actor_uid = $2) AS first_acted_at
  FROM claims c JOIN works w ON w.id = c.work_id
  WHERE c.work_id = $3::bigint
  FOR UPDATE OF c`
/** The event lock, the next id, the claim's row (`claim`, returning `last_event_id`) and the event, in one statement. */
const sqlAppend = (claim: string, firstEventParam: number) =>
  `WITH ${lockMode === "off" ? "" : "locked AS (SELECT claim_event_lock()),\n  "}next AS (
    SELECT nextval('claim_event_seq') AS id${lockMode === "off" ? "" : " FROM locked"}),
  claim AS (${claim}),
  event AS (
    INSERT INTO claim_events (id, work_id, from_state, to_state, decision, reason, actor_uid, site)
    SELECT claim.last_event_id, $${firstEventParam}::bigint, $${firstEventParam + 1}, $${firstEventParam + 2},
      $${firstEventParam + 3}, $${firstEventParam + 4}, $${firstEventParam + 5}, $${firstEventParam + 6}
    FROM claim
    RETURNING id, created_at)
  SELECT id::text AS id, ${rfc3339("created_at")} AS created_at FROM event`
const sqlAppendCreation = sqlAppend(
  `INSERT INTO claims AS c (work_id, state, site, site_work_id, owner_uid, minted, last_event_id)
    SELECT $1::bigint, $2, $3, $4, $5, $6, next.id FROM next
    ON CONFLICT (work_id) DO UPDATE SET state = EXCLUDED.state, site = EXCLUDED.site,
      site_work_id = EXCLUDED.site_work_id, owner_uid = EXCLUDED.owner_uid, hidden_from = NULL,
      minted = EXCLUDED.minted, last_event_id = EXCLUDED.last_event_id, updated_at = now()
    WHERE c.state = 'none'
    RETURNING c.last_event_id`,
  7
)
const sqlAppendChange = sqlAppend(
  `UPDATE claims c SET state = $1, hidden_from = $2, last_event_id = next.id, updated_at = now(),
      site = CASE WHEN $3 THEN '' ELSE c.site END, minted = CASE WHEN $4 THEN false ELSE c.minted END
    FROM next
    WHERE c.work_id = $5::bigint
    RETURNING c.last_event_id`,
  6
)
/** The quota counted and, when it allowed the write, the answer stored (`$4`..`$9`), in one statement. */
const sqlFinish = `WITH counted AS (
    INSERT INTO catalog_quota_usage AS q (site, kind, day, used)
    VALUES ($1, $2, (now() AT TIME ZONE 'UTC')::date, 1)
    ON CONFLICT (site, kind, day) DO UPDATE SET used = q.used + 1 WHERE q.used < $3
    RETURNING used),
  kept AS (
    INSERT INTO catalog_idempotency (scope, key, fingerprint, status, headers, body)
    SELECT $4, $5, $6, $7, $8::jsonb, $9
    FROM counted
    ON CONFLICT (scope, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, status = EXCLUDED.status,
      headers = EXCLUDED.headers, body = EXCLUDED.body, created_at = now())
  SELECT count(*)::int AS allowed FROM counted`
const sqlFinishNoKey = `WITH counted AS (
    INSERT INTO catalog_quota_usage AS q (site, kind, day, used)
    VALUES ($1, $2, (now() AT TIME ZONE 'UTC')::date, 1)
    ON CONFLICT (site, kind, day) DO UPDATE SET used = q.used + 1 WHERE q.used < $3
    RETURNING used),
  kept AS (SELECT 1)
  SELECT count(*)::int AS allowed FROM counted`

// EVENT_LOCK=long: the statements of the sequence before commits 00f5a1b and 34f176d.
const sqlQuota = `INSERT INTO catalog_quota_usage AS q (site, kind, day, used)
  VALUES ($1, $2, (now() AT TIME ZONE 'UTC')::date, 1)
  ON CONFLICT (site, kind, day) DO UPDATE SET used = q.used + 1 WHERE q.used < $3
  RETURNING used`
const sqlStore = `INSERT INTO catalog_idempotency (scope, key, fingerprint, status, headers, body)
  VALUES ($1, $2, $3, $4, $5::jsonb, $6)
  ON CONFLICT (scope, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, status = EXCLUDED.status,
    headers = EXCLUDED.headers, body = EXCLUDED.body, created_at = now()`
const sqlNextEvent = "SELECT nextval('claim_event_seq')::text AS id"
const sqlInsertClaim = `INSERT INTO claims AS c (work_id, state, site, site_work_id, owner_uid, minted, last_event_id)
  VALUES ($1::bigint, $2, $3, $4, $5, $6, $7::bigint)
  ON CONFLICT (work_id) DO UPDATE SET state = EXCLUDED.state, site = EXCLUDED.site,
    site_work_id = EXCLUDED.site_work_id, owner_uid = EXCLUDED.owner_uid, hidden_from = NULL,
    minted = EXCLUDED.minted, last_event_id = EXCLUDED.last_event_id, updated_at = now()
  WHERE c.state = 'none'
  RETURNING work_id::text AS work_id`
const sqlInsertEvent = `INSERT INTO claim_events (id, work_id, from_state, to_state, decision, reason, actor_uid, site)
  VALUES ($1::bigint, $2::bigint, $3, $4, $5, $6, $7, $8)`
const sqlRecord = `SELECT w.id::text AS work_id, w.display_name, coalesce(c.state, 'none') AS state,
    coalesce(c.site, '') AS site,
    CASE WHEN coalesce(c.state, 'none') = 'none' THEN NULL ELSE c.site_work_id END AS product_work_id,
    coalesce(c.minted, false) AS minted, w.live AS work_live, w.nsfw,
    le.id::text AS last_event_id, le.from_state AS le_from, le.to_state AS le_to, le.reason AS le_reason,
    le.actor_uid AS le_actor, ${rfc3339("le.created_at")} AS le_created_at,
    (SELECT count(*)::int FROM claim_events a WHERE a.work_id = w.id AND a.actor_uid = $1
       AND ($2::text IS NULL OR a.site = $3)) AS acted_count,
    (SELECT ${rfc3339("min(a.created_at)")} FROM claim_events a WHERE a.work_id = w.id AND a.actor_uid = $4
       AND ($5::text IS NULL OR a.site = $6)) AS first_acted_at
  FROM works w
  LEFT JOIN claims c ON c.work_id = w.id
  LEFT JOIN LATERAL (
    SELECT e.id, e.from_state, e.to_state, e.reason, e.actor_uid, e.created_at FROM claim_events e
    WHERE e.work_id = w.id ORDER BY e.id DESC LIMIT 1
  ) le ON true
  WHERE w.id = $7::bigint
  ORDER BY w.id
  LIMIT $8`

const names = new Map<string, string>()
/** Parameterized statements go as named prepared statements, as ours (src/platform/Database.ts). */
const query = <R = any>(client: Pg.PoolClient, text: string, values?: Array<unknown>) => {
  if (values === undefined || values.length === 0) return client.query<R & Pg.QueryResultRow>(text)
  let name = names.get(text)
  if (name === undefined) {
    name = `b_${Crypto.createHash("sha256").update(text).digest("hex").slice(0, 24)}`
    names.set(text, name)
  }
  return client.query<R & Pg.QueryResultRow>({ name, text, values })
}

interface Principal {
  readonly owner: string
  readonly site: string
  readonly userId: string
  readonly nsfw: boolean
}
const principals = new Map<string, Principal>()

const principalOf = async (token: string): Promise<Principal | undefined> => {
  const hash = Crypto.createHash("sha256").update(token).digest()
  const cached = principals.get(hash.toString("hex"))
  if (cached !== undefined) return cached
  const { rows } = await pool.query<{ id: string; site: string; user_id: string | null; content_limit: string }>(
    `SELECT id::text AS id, site, user_id::text AS user_id, content_limit FROM api_keys
     WHERE key_hash = $1 AND revoked_at IS NULL`,
    [hash]
  )
  const row = rows[0]
  if (row === undefined || row.user_id === null) return undefined
  const principal = {
    owner: `key:${row.id}`,
    site: row.site,
    userId: row.user_id,
    nsfw: row.content_limit === "nsfw"
  }
  principals.set(hash.toString("hex"), principal)
  return principal
}

/** JSON with sorted keys: the request's fingerprint, as ours. */
const canonical = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined)
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`
  }
  return JSON.stringify(value) ?? "null"
}

interface Answer {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: string
}

class Refused extends Error {
  constructor(readonly status: number, readonly code: string) {
    super(code)
  }
}

const problem = (status: number, code: string): Answer => ({
  status,
  headers: { "content-type": "application/problem+json" },
  body: JSON.stringify({ status, code })
})

/**
 * The write runner: standing, then in one transaction the key's lock and lookup, the write, the
 * quota and the stored answer.
 */
const runWrite = async (
  principal: Principal,
  key: string | undefined,
  fingerprint: Buffer,
  quota: "claims" | "decisions",
  write: (client: Pg.PoolClient) => Promise<Answer>
): Promise<Answer & { readonly replayed?: boolean }> => {
  const standing = await pool.query<{ roles: Array<string>; banned: boolean }>(
    { name: "b_standing", text: sqlStanding, values: [principal.userId] }
  )
  const user = standing.rows[0]
  if (user === undefined || user.banned || (quota === "decisions" && !user.roles.includes("moderator"))) {
    return problem(403, "PERMISSION_REQUIRED")
  }
  type Stored = { fingerprint: Buffer; status: number; headers: Record<string, string>; body: string }
  const judge = (found: Stored) => {
    if (!found.fingerprint.equals(fingerprint)) throw new Refused(409, "IDEMPOTENCY_KEY_REUSED")
    return { status: found.status, headers: found.headers, body: found.body, replayed: true }
  }
  if (key !== undefined) {
    const stored = await pool.query<Stored>({ name: "b_stored", text: sqlStored, values: [principal.owner, key, KEEP] })
    if (stored.rows[0] !== undefined) {
      try {
        return judge(stored.rows[0])
      } catch (error) {
        if (error instanceof Refused) return problem(error.status, error.code)
        throw error
      }
    }
  }
  const client = await pool.connect()
  try {
    await client.query("BEGIN")
    try {
      if (key !== undefined) {
        const lock = await query<{ ok: boolean }>(client, sqlKeyLock, [
          AdvisoryLockClass.idempotency,
          `${principal.owner}\n${key}`
        ])
        if (lock.rows[0]?.ok !== true) throw new Refused(409, "IDEMPOTENCY_REQUEST_IN_PROGRESS")
        const found = (await query<Stored>(client, sqlStored, [principal.owner, key, KEEP])).rows[0]
        if (found !== undefined) {
          const answer = judge(found)
          await client.query("COMMIT")
          return answer
        }
      }
      const answer = await write(client)
      if (lockMode === "long") {
        const used = await query(client, sqlQuota, [principal.site, quota, quotaLimit])
        if (used.rows.length === 0) throw new Refused(429, "QUOTA_EXCEEDED")
        if (key !== undefined) {
          await query(client, sqlStore, [
            principal.owner,
            key,
            fingerprint,
            answer.status,
            JSON.stringify(answer.headers),
            answer.body
          ])
        }
      } else {
        const finished = key === undefined
          ? await query<{ allowed: number }>(client, sqlFinishNoKey, [principal.site, quota, quotaLimit])
          : await query<{ allowed: number }>(client, sqlFinish, [
            principal.site,
            quota,
            quotaLimit,
            principal.owner,
            key,
            fingerprint,
            answer.status,
            JSON.stringify(answer.headers),
            answer.body
          ])
        if (finished.rows[0]?.allowed !== 1) throw new Refused(429, "QUOTA_EXCEEDED")
      }
      await client.query("COMMIT")
      return answer
    } catch (error) {
      await client.query("ROLLBACK").catch(() => {})
      if (error instanceof Refused) return problem(error.status, error.code)
      throw error
    }
  } finally {
    client.release()
  }
}

interface LockedClaim {
  readonly state: string
  readonly site: string
  readonly last_event_id: string
  readonly display_name: string
  readonly acted_count: number
  readonly first_acted_at: string | null
}

const claimAnswer = (workId: string, body: Record<string, unknown>): Answer => ({
  status: 201,
  headers: {
    "content-type": "application/json",
    etag: `"claim-${workId}-${(body.last_event as { readonly id: string } | undefined)?.id ?? "0"}"`,
    location: `/v2/claims/${workId}`
  },
  body: JSON.stringify(body)
})

const createClaim = (principal: Principal, workId: string) => async (client: Pg.PoolClient): Promise<Answer> => {
  const live = (await query<{ id: string; display_name: string }>(client, sqlLiveWork(principal.nsfw), [workId]))
    .rows[0]
  if (live === undefined) throw new Refused(422, "VALIDATION_FAILED")
  const locked = (await query<LockedClaim>(client, sqlLockClaim, [principal.userId, principal.userId, workId])).rows[0]
  if (locked !== undefined && locked.state !== "none") throw new Refused(409, "ALREADY_EXISTS")
  if (lockMode === "long") return createLong(client, principal, workId)
  const event = (await query<{ id: string; created_at: string }>(client, sqlAppendCreation, [
    workId,
    "pending",
    principal.site,
    null,
    principal.userId,
    false,
    workId,
    null,
    "pending",
    null,
    null,
    principal.userId,
    principal.site
  ])).rows[0]
  if (event === undefined) throw new Refused(409, "ALREADY_EXISTS")
  return claimAnswer(workId, {
    object: "claim",
    id: workId,
    state: "pending",
    display_name: live.display_name,
    site: principal.site,
    product_work_id: null,
    last_event: {
      object: "claim_event",
      id: event.id,
      from_state: null,
      to_state: "pending",
      reason: null,
      actor_uid: principal.userId,
      created_at: event.created_at
    },
    acted_count: (locked?.acted_count ?? 0) + 1,
    first_acted_at: locked?.first_acted_at ?? event.created_at
  })
}

/** EVENT_LOCK=long: lock, id, claim, event and the record read back as separate statements. */
const createLong = async (client: Pg.PoolClient, principal: Principal, workId: string): Promise<Answer> => {
  await client.query("SELECT claim_event_lock()")
  const eventId = (await client.query<{ id: string }>(sqlNextEvent)).rows[0]!.id
  const inserted = await query(client, sqlInsertClaim, [
    workId,
    "pending",
    principal.site,
    null,
    principal.userId,
    false,
    eventId
  ])
  if (inserted.rows.length === 0) throw new Refused(409, "ALREADY_EXISTS")
  await query(client, sqlInsertEvent, [eventId, workId, null, "pending", null, null, principal.userId, principal.site])
  const record = (await query(client, sqlRecord, [
    principal.userId,
    null,
    null,
    principal.userId,
    null,
    null,
    workId,
    1
  ])).rows[0]
  return claimAnswer(workId, {
    object: "claim",
    id: record.work_id,
    state: record.state,
    display_name: record.display_name,
    site: record.site,
    product_work_id: record.product_work_id,
    ...(record.last_event_id === null ? {} : {
      last_event: {
        object: "claim_event",
        id: record.last_event_id,
        from_state: record.le_from,
        to_state: record.le_to,
        reason: record.le_reason,
        actor_uid: record.le_actor,
        created_at: record.le_created_at
      }
    }),
    acted_count: record.acted_count ?? 0,
    first_acted_at: record.first_acted_at
  })
}

const approve =
  (principal: Principal, workId: string, ifMatch: string | undefined) =>
  async (client: Pg.PoolClient): Promise<Answer> => {
    const claim = (await query<LockedClaim>(client, sqlLockClaim, [principal.userId, principal.userId, workId])).rows[0]
    if (claim === undefined) throw new Refused(404, "NOT_FOUND")
    if (ifMatch === undefined) throw new Refused(428, "PRECONDITION_REQUIRED")
    if (ifMatch.trim() !== `"claim-${workId}-${claim.last_event_id}"`) throw new Refused(412, "PRECONDITION_FAILED")
    if (claim.state !== "pending") throw new Refused(409, "INVALID_STATE_TRANSITION")
    const event = (await query<{ id: string }>(client, sqlAppendChange, [
      "live",
      null,
      false,
      false,
      workId,
      workId,
      "pending",
      "live",
      "approve",
      null,
      principal.userId,
      claim.site
    ])).rows[0]!
    return {
      status: 201,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        object: "decision",
        id: event.id,
        decision: "approve",
        note: "",
        from_state: "pending",
        to_state: "live"
      })
    }
  }

const send = (res: Http.ServerResponse, answer: Answer & { readonly replayed?: boolean }) => {
  const headers: Record<string, string | number> = {
    ...answer.headers,
    "content-length": Buffer.byteLength(answer.body)
  }
  if (answer.replayed === true) headers["idempotent-replayed"] = "true"
  res.writeHead(answer.status, headers)
  res.end(answer.body)
}

const readBody = (req: Http.IncomingMessage) =>
  new Promise<string>((resolve, reject) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    req.on("error", reject)
  })

const decisionPath = /^\/v2\/moderation\/claims\/([0-9]{1,18})\/decisions$/

Http.createServer((req, res) => {
  const path = (req.url ?? "/").split("?")[0]!
  if (path === "/healthz") return send(res, { status: 200, headers: {}, body: "{\"status\":\"ok\"}" })
  const decision = decisionPath.exec(path)
  if (req.method !== "POST" || (path !== "/v2/claims" && decision === null)) return send(res, problem(404, "NOT_FOUND"))
  const token = (req.headers.authorization ?? "").replace(/^Bearer /i, "")
  const key = req.headers["idempotency-key"] as string | undefined
  Promise.all([readBody(req), principalOf(token)]).then(async ([text, principal]) => {
    if (principal === undefined) return send(res, problem(401, "INVALID_CREDENTIAL"))
    let payload: Record<string, unknown>
    try {
      payload = JSON.parse(text)
    } catch {
      return send(res, problem(400, "MALFORMED_BODY"))
    }
    const fingerprint = Crypto.createHash("sha256").update(`POST ${path}\n${canonical(payload)}`).digest()
    if (decision === null) {
      if (typeof payload.work_id !== "string") return send(res, problem(422, "VALIDATION_FAILED"))
      return send(res, await runWrite(principal, key, fingerprint, "claims", createClaim(principal, payload.work_id)))
    }
    if (payload.decision !== "approve") return send(res, problem(422, "VALIDATION_FAILED"))
    const ifMatch = req.headers["if-match"]
    return send(
      res,
      await runWrite(principal, key, fingerprint, "decisions", approve(principal, decision[1]!, ifMatch))
    )
  }).catch(() => send(res, problem(500, "INTERNAL_ERROR")))
}).listen(port, "127.0.0.1")
