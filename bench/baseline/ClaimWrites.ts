/**
 * Baseline for the writes benchmark: a plain `node:http` + `pg` server doing, for a claim creation
 * and a moderator's decision (and for edit proposals, below), the same SQL statements in the same
 * order and in one transaction as our write runner (src/catalog/writes/Writes.ts) and claims
 * (src/catalog/claims/Claims.ts, ClaimsRepo.ts; statements as of commit 34f176d), with the same
 * prepared-statement use and the same pool size:
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
 * Edit proposals (src/catalog/proposals/Proposals.ts, ProposalsRepo.ts; the field writes of
 * src/catalog/fields/EntityFields.ts and FieldStore.ts), through the same write runner, for proposals on
 * works whose patch holds `catalog.work.length_minutes` (the one key the benchmark sends; a column of
 * the work row), with the statements ours sends for it (as PostgreSQL's `log_statement = all` showed
 * them), in its order:
 *
 * - creation (`POST /v2/proposals`, quota `proposals`): the work's liveness and content gate (not
 *   locked), then the proposal inserted and read back in one statement;
 * - amendment (`POST /v2/proposals/{id}/amendments`, quota `proposals`): the proposal locked
 *   `FOR UPDATE`, tenant, `If-Match` and state checked, then one statement bumping the proposal's
 *   version and effective patch and inserting the amendment;
 * - merge (`POST /v2/moderation/proposals/{id}/decisions` `{"decision":"merge"}`, quota
 *   `decisions`): the proposal locked `FOR UPDATE`, the work locked `FOR UPDATE` (content gate,
 *   `If-Match`, state, liveness checked), the snapshot of the patch's keys, the work's `UPDATE` (its
 *   columns and `updated_at`), `catalog_touch('work', id)` (the change-feed row), the snapshot again,
 *   the revision inserted with the keys whose value changed, the proposal closed.
 *
 * Cover votes, news and playtimes (src/catalog/votes/CoverVotes.ts, src/catalog/news/News.ts and
 * NewsRepo.ts, src/catalog/playtimes/Playtimes.ts), through the same write runner, with the statements
 * ours sends (as PostgreSQL's `log_statement = all` showed them):
 *
 * - a vote (`PUT /v2/catalog/works/{id}/covers/{cover_id}/vote`, quota `votes`, no `Idempotency-Key`:
 *   the route takes none): the work locked `FOR SHARE`, the cover locked `FOR UPDATE`, the vote
 *   inserted (`ON CONFLICT DO NOTHING`), and when it was new the cover's `vote_count` moved and
 *   `catalog_touch('work', id)`;
 * - a news post (`POST /v2/news`, quota `news`; its rule needs no user, so no standing is read): the
 *   source share-locked, the linked works' visibility, the item inserted (`ON CONFLICT (source_url) DO
 *   NOTHING`), its work links, the item read back;
 * - a playtime batch (`POST /v2/playtimes`, quota `playtimes`): the works' visibility, their aggregate
 *   rows locked in id order (an upsert), the playtimes upserted with the old minutes, then for the
 *   changed ones the histogram (minutes and buckets) and the aggregates with their change-feed rows.
 *
 * An editor image (`POST /v2/media/images?preset=cover|screenshot`, quota `media` counting the body's
 * bytes; src/catalog/media/Media.ts and Http.ts), through the same write runner with ours' statements
 * for a byte-counted quota (src/catalog/writes/Writes.ts): the raw body read with the same 20 MiB cap
 * (413 past it), its SHA-256 in the fingerprint (preset, declared type, digest), the site's use of the
 * day read before the transaction (a byte-counted write is refused before it runs when it cannot fit),
 * then in the transaction the picture decoded and re-encoded with sharp directly, its ThumbHash and
 * its file (bench/baseline/ImageUpload.ts: the decode bounded as ours, at most the cores but one at
 * once, under `MEDIA_DIR`), `INSERT INTO images ... ON CONFLICT (hash) DO NOTHING`, and the quota
 * counted by the body's bytes with the answer stored in one statement. The thread pool is sized as
 * ours (src/ThreadPool.ts).
 *
 * The same answers (status, JSON, `ETag`, `Location`, `Idempotent-Replayed`). None of our stack: no
 * Effect, no schemas, no middleware, no rate limiter, no error model beyond a status code. The
 * credential is looked up once per API key and kept in memory (ours caches it too).
 *
 * Diagnostic `QUOTA=off`: no site quota row is counted (the answer alone is stored), to show what the
 * one row per site and kind that every write of a site updates before COMMIT costs.
 *
 * Diagnostics (creation only), `EVENT_LOCK`:
 * - `0`: the same without `claim_event_lock()` (what the lock costs; event ids then commit out of
 *   order);
 * - `long`: the sequence before commits 00f5a1b and 34f176d, with the lock held over 8 statements
 *   instead of 3: `SELECT claim_event_lock()`, `nextval`, the claims upsert, the claim_events insert,
 *   the record read back (a lateral join), the quota upsert and the stored answer as separate
 *   statements, then COMMIT.
 */
// First: libuv's thread pool sized as ours, before any module can queue work on it.
import "../../src/ThreadPool.js"
import * as Crypto from "node:crypto"
import * as Http from "node:http"
import * as Path from "node:path"
import Pg from "pg"
import { MAX_UPLOAD_BYTES, UPLOAD_CONTENT_TYPES, UPLOAD_PATH } from "../../schema/Api/MediaApi.js"
import { AdvisoryLockClass } from "../../src/platform/AdvisoryLocks.js"
import { ImagePresets } from "../../src/platform/Images.js"
import { keep, processUpload, thumbhash } from "./ImageUpload.js"

const port = Number(process.env.PORT)
const lockMode = process.env.EVENT_LOCK === "0" ? "off" : process.env.EVENT_LOCK === "long" ? "long" : "on"
/** QUOTA=off (a diagnostic): no quota row is counted; the answer alone is stored. */
const quotaOff = process.env.QUOTA === "off"
/** The daily quota per site and kind: set as high as the server's (`CATALOG_QUOTA_*`). */
const quotaLimit = Number(process.env.QUOTA_LIMIT ?? 1e9)
/** The daily `media` quota per site, in bytes of upload bodies: set as high as the server's (`CATALOG_QUOTA_MEDIA_BYTES`). */
const mediaQuotaLimit = Number(process.env.MEDIA_QUOTA_LIMIT ?? 1024 ** 3)
/** Where uploaded images are kept (ours: `SHIORI_DATA_DIR/media`). */
const mediaDir = Path.resolve(process.env.MEDIA_DIR ?? ".data/media-baseline")
/** The origin an image's `url` names (ours: `CATALOG_PUBLIC_URL`). */
const publicUrl = process.env.PUBLIC_URL ?? `http://127.0.0.1:${port}`
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

// A write whose quota counts bytes (src/catalog/writes/Writes.ts): the day's use read before the
// transaction, then the quota counted by the write's weight with the answer stored, in one statement.
const sqlUsedToday = `SELECT used::text AS used FROM catalog_quota_usage
  WHERE site = $1 AND kind = $2 AND day = (now() AT TIME ZONE 'UTC')::date`
const sqlFinishWeighted = (keyed: boolean) =>
  `WITH counted AS (
    INSERT INTO catalog_quota_usage AS q (site, kind, day, used)
    SELECT $1, $2, (now() AT TIME ZONE 'UTC')::date, $3::bigint
    WHERE $4::bigint <= $5::bigint
    ON CONFLICT (site, kind, day) DO UPDATE SET used = q.used + EXCLUDED.used
      WHERE q.used + EXCLUDED.used <= $6::bigint
    RETURNING used),
  kept AS (${
    keyed
      ? `
    INSERT INTO catalog_idempotency (scope, key, fingerprint, status, headers, body)
    SELECT $7, $8, $9, $10, $11::jsonb, $12
    FROM counted
    ON CONFLICT (scope, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, status = EXCLUDED.status,
      headers = EXCLUDED.headers, body = EXCLUDED.body, created_at = now()`
      : "SELECT 1"
  })
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

// Edit proposals: the statements ours sends (src/catalog/proposals/ProposalsRepo.ts, src/catalog/fields/EntityFields.ts,
// FieldStore.ts) for a work and its column keys.
const proposalColumns = `p.id::text AS id, p.entity_type, p.entity_id::text AS entity_id, p.site, p.proposer_uid,
  p.patch, p.effective, p.note, p.state, p.version, p.amendment_count, p.decided_by, p.decision_note,
  p.revision_id::text AS revision_id, ${rfc3339("p.created_at")} AS created_at,
  ${rfc3339("p.updated_at")} AS updated_at, ${rfc3339("p.closed_at")} AS closed_at`
const sqlLocateWork = (lock: boolean) =>
  `SELECT e.id::text AS id, e.live, e.nsfw AS nsfw, e.merged_into IS NOT NULL AS merged
  FROM "works" e WHERE e.id = $1::bigint${lock ? " FOR UPDATE" : ""}`
const sqlInsertProposal = `WITH p AS (
    INSERT INTO proposals (entity_type, entity_id, site, proposer_uid, patch, effective, note)
    VALUES ($1, $2::bigint, $3, $4, $5::jsonb, $6::jsonb, $7)
    RETURNING *)
  SELECT ${proposalColumns} FROM p`
const sqlLockProposal = `SELECT ${proposalColumns} FROM proposals p WHERE p.id = $1::bigint FOR UPDATE`
const sqlAmend = `WITH p AS (
    UPDATE proposals SET amendment_count = amendment_count + 1, version = version + 1, updated_at = now(),
      effective = (effective || $1::jsonb) - $2::text[]
    WHERE id = $3::bigint
    RETURNING id, amendment_count),
  a AS (
    INSERT INTO proposal_amendments (proposal_id, seq, amender_uid, set, unset, note)
    SELECT p.id, p.amendment_count, $4, $5::jsonb, $6::text[], $7
    FROM p
    RETURNING *)
  SELECT a.id::text AS id, a.seq, a.amender_uid, a.note, a.set, a.unset, ${rfc3339("a.created_at")} AS created_at
  FROM a`
/** The current values of the work's `columns`, keyed by their field keys (the same SQL before and after the write). */
const sqlSnapshot = (columns: ReadonlyArray<string>) =>
  `SELECT (jsonb_build_object(${
    columns.map((c) => `'catalog.work.${c}', e.${c}`).join(", ")
  }))::text AS v FROM "works" e WHERE e.id = $1::bigint`
const sqlUpdateWork = (columns: ReadonlyArray<string>) =>
  `UPDATE "works" SET ${columns.map((c, i) => `"${c}" = $${i + 1}`).join(",")},updated_at = now() WHERE id = $${
    columns.length + 1
  }::bigint`
const sqlTouch = "SELECT catalog_touch($1, $2::bigint)"
const sqlRecordRevision = `WITH r AS (
    INSERT INTO revisions (entity_type, entity_id, seq, proposal_id, proposer_uid, moderator_uid, note, field_diffs)
    SELECT $1, $2::bigint,
      coalesce((SELECT max(seq) FROM revisions WHERE entity_type = $3 AND entity_id = $4::bigint), 0) + 1,
      $5::bigint, $6, $7, $8, $9::jsonb
    RETURNING *)
  SELECT r.id::text AS id, r.entity_type, r.entity_id::text AS entity_id, r.proposal_id::text AS proposal_id,
    r.proposer_uid, r.moderator_uid, r.field_diffs, ${rfc3339("r.created_at")} AS created_at FROM r`
const sqlCloseProposal = `WITH p AS (
    UPDATE proposals SET state = $1, version = version + 1, updated_at = now(),
      closed_at = now(), decided_by = $2, decision_note = $3, revision_id = $4::bigint
    WHERE id = $5::bigint
    RETURNING *)
  SELECT ${proposalColumns} FROM p`

// Cover votes (src/catalog/votes/CoverVotes.ts).
const sqlShareWork = (nsfw: boolean) =>
  `SELECT w.id::text AS id FROM works w WHERE w.id = $1::bigint AND ${nsfw ? "w.live" : "w.live AND NOT w.nsfw"}
          FOR SHARE OF w`
const sqlLockCover = `SELECT c.id::text AS id FROM covers c
          WHERE c.id = $1::bigint AND c.work_id = $2::bigint FOR UPDATE OF c`
const sqlInsertVote = `INSERT INTO cover_votes (cover_id, uid) VALUES ($1::bigint, $2)
        ON CONFLICT (cover_id, uid) DO NOTHING
        RETURNING cover_id::text AS cover_id`
const sqlCountVote = "UPDATE covers SET vote_count = vote_count + $1 WHERE id = $2::bigint"
const sqlTouchWork = "SELECT catalog_touch('work', $1::bigint)"

// News (src/catalog/news/NewsRepo.ts).
const sqlNewsSource = `SELECT s.source, s.site, s.active, ${rfc3339("s.created_at")} AS created_at, ${
  rfc3339("s.updated_at")
} AS updated_at FROM news_sources s WHERE s.source = $1 FOR SHARE`
const sqlVisibleWorks = (nsfw: boolean) =>
  `SELECT w.id::text AS id FROM works w
            WHERE w.id = ANY($1::bigint[]) AND w.live AND ${nsfw ? "TRUE" : "NOT w.nsfw"}`
const sqlInsertNews =
  `INSERT INTO news_items (source, site, title, summary, source_url, lane, published_at, banner_hash)
          VALUES ($1, $2, $3, $4, $5, $6,
            now(),
            $7)
          ON CONFLICT (source_url) DO NOTHING
          RETURNING id::text AS id`
const sqlLinkNews = `INSERT INTO news_item_works (news_id, work_id, position)
            SELECT $1::bigint, w.id, w.ord - 1
            FROM unnest($2::bigint[]) WITH ORDINALITY AS w (id, ord)`
const sqlFindNews = (nsfw: boolean) =>
  `SELECT n.id::text AS id, n.source, n.site, n.title, n.summary, n.source_url, n.lane,
        ${rfc3339("n.published_at")} AS published_at, n.banner_hash,
        coalesce((
          SELECT array_agg(l.work_id::text ORDER BY l.position) FROM news_item_works l
          JOIN works w ON w.id = l.work_id
          WHERE l.news_id = n.id AND w.live AND ${nsfw ? "TRUE" : "NOT w.nsfw"}
        ), '{}'::text[]) AS work_ids,
        ${rfc3339("n.created_at")} AS created_at FROM news_items n WHERE n.id = $1::bigint`

// Playtimes (src/catalog/playtimes/Playtimes.ts).
const sqlPlaytimeWorks = (nsfw: boolean) =>
  `SELECT w.id::text AS id FROM works w
          WHERE w.id = ANY($1::bigint[]) AND ${nsfw ? "w.live" : "w.live AND NOT w.nsfw"}`
const sqlLockAggregates = `INSERT INTO work_playtimes (work_id)
          SELECT x FROM unnest($1::bigint[]) AS x
          ON CONFLICT (work_id) DO UPDATE SET players = work_playtimes.players`
const sqlUpsertPlaytimes = `WITH input AS (
            SELECT * FROM unnest($1::bigint[], $2::int[]) AS i (work_id, minutes)
          ), old AS (
            SELECT p.work_id, p.minutes FROM playtimes p JOIN input USING (work_id) WHERE p.user_id = $3::bigint
          ), up AS (
            INSERT INTO playtimes AS p (user_id, work_id, minutes)
            SELECT $4::bigint, work_id, minutes FROM input
            ON CONFLICT (user_id, work_id) DO UPDATE SET minutes = EXCLUDED.minutes, updated_at = now()
            RETURNING p.work_id, p.minutes, p.updated_at
          )
          SELECT p.work_id::text AS work_id, p.minutes, ${rfc3339("p.updated_at")} AS updated_at,
                 old.minutes AS old_minutes
          FROM up p LEFT JOIN old USING (work_id)`
const sqlHistogram = `WITH c AS (
              SELECT * FROM unnest($1::bigint[], $2::int[],
                $3::int[]) AS c (work_id, old, new)
            ), d AS (
              SELECT work_id, minutes, sum(delta)::int AS delta FROM (
                SELECT work_id, new AS minutes, 1 AS delta FROM c
                UNION ALL SELECT work_id, old, -1 FROM c WHERE old >= 0
              ) x GROUP BY work_id, minutes
            ), m AS (
              INSERT INTO work_playtime_minutes AS t (work_id, minutes, players)
              SELECT work_id, minutes, delta FROM d ORDER BY work_id, minutes
              ON CONFLICT (work_id, minutes) DO UPDATE SET players = t.players + EXCLUDED.players
            )
            INSERT INTO work_playtime_buckets AS t (work_id, bucket, players)
            SELECT work_id, minutes / 250, sum(delta)::int FROM d GROUP BY work_id, minutes / 250
            ORDER BY 1, 2
            ON CONFLICT (work_id, bucket) DO UPDATE SET players = t.players + EXCLUDED.players`
const sqlAggregates = `WITH n AS (
              SELECT b.work_id, sum(b.players)::int AS players FROM work_playtime_buckets b
              WHERE b.work_id = ANY($1::bigint[]) GROUP BY b.work_id
            ), next AS (
              SELECT n.work_id, n.players, CASE WHEN n.players = 0 THEN NULL ELSE
                (playtime_kth(n.work_id, (n.players + 1) / 2) + playtime_kth(n.work_id, n.players / 2 + 1)) / 2.0
                END::double precision AS median_minutes
              FROM n
            ), upd AS (
              UPDATE work_playtimes s SET players = next.players, median_minutes = next.median_minutes
              FROM next WHERE s.work_id = next.work_id
                AND (s.players, s.median_minutes) IS DISTINCT FROM (next.players, next.median_minutes)
              RETURNING s.work_id
            )
            SELECT catalog_touch('work', upd.work_id) FROM upd`

// Editor images (src/catalog/media/Media.ts).
const sqlInsertImage = `INSERT INTO images (hash, url, width, height, thumbhash, source, preset, size_bytes)
  VALUES ($1, $2, $3, $4, $5, 'upload', $6, $7)
  ON CONFLICT (hash) DO NOTHING
  RETURNING hash`

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

/** The quota kinds of the routes here (src/catalog/limits/Limits.ts). */
type Quota = "claims" | "decisions" | "proposals" | "votes" | "news" | "playtimes" | "media"

/**
 * The write runner: standing, then in one transaction the key's lock and lookup, the write, the
 * quota and the stored answer. `weight` is what a write whose quota counts bytes (`media`) counts.
 */
const runWrite = async (
  principal: Principal,
  key: string | undefined,
  fingerprint: Buffer,
  quota: Quota,
  write: (client: Pg.PoolClient) => Promise<Answer>,
  weight?: number
): Promise<Answer & { readonly replayed?: boolean }> => {
  // A news post's rule needs no user: ours reads no standing for it.
  if (quota !== "news") {
    const standing = await pool.query<{ roles: Array<string>; banned: boolean }>(
      { name: "b_standing", text: sqlStanding, values: [principal.userId] }
    )
    const user = standing.rows[0]
    if (user === undefined || user.banned || (quota === "decisions" && !user.roles.includes("moderator"))) {
      return problem(403, "PERMISSION_REQUIRED")
    }
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
  const limit = quota === "media" ? mediaQuotaLimit : quotaLimit
  if (weight !== undefined) {
    const used = await pool.query<{ used: string }>(
      { name: "b_used_today", text: sqlUsedToday, values: [principal.site, quota] }
    )
    if (Number(used.rows[0]?.used ?? 0) + weight > limit) return problem(429, "QUOTA_EXCEEDED")
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
      } else if (quotaOff) {
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
      } else if (weight !== undefined) {
        const counted = [principal.site, quota, weight, weight, limit, limit]
        const finished = await query<{ allowed: number }>(
          client,
          sqlFinishWeighted(key !== undefined),
          key === undefined ? counted : [
            ...counted,
            principal.owner,
            key,
            fingerprint,
            answer.status,
            JSON.stringify(answer.headers),
            answer.body
          ]
        )
        if (finished.rows[0]?.allowed !== 1) throw new Refused(429, "QUOTA_EXCEEDED")
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

// --- Edit proposals ---------------------------------------------------------------------------------

/** The work columns a patch may set here, as `catalog.work.<column>` (integer columns; the benchmark sends one). */
const workColumns: ReadonlySet<string> = new Set(["length_minutes"])

/** A patch's columns and values, or undefined when a key is not one of `workColumns` or a value not an integer's. */
const columnsOf = (patch: unknown): Array<readonly [string, number | null]> | undefined => {
  if (patch === null || typeof patch !== "object" || Array.isArray(patch)) return undefined
  const columns: Array<readonly [string, number | null]> = []
  for (const [key, value] of Object.entries(patch)) {
    const column = key.startsWith("catalog.work.") ? key.slice("catalog.work.".length) : ""
    if (!workColumns.has(column)) return undefined
    if (value !== null && !(Number.isInteger(value) && (value as number) >= 0 && (value as number) <= 2_147_483_647)) {
      return undefined
    }
    columns.push([column, value as number | null])
  }
  return columns
}

interface ProposalRow {
  readonly id: string
  readonly entity_type: string
  readonly entity_id: string
  readonly site: string
  readonly proposer_uid: string
  readonly patch: Record<string, unknown>
  readonly effective: Record<string, unknown>
  readonly note: string
  readonly state: string
  readonly version: number
  readonly amendment_count: number
  readonly decided_by: string | null
  readonly decision_note: string | null
  readonly revision_id: string | null
  readonly created_at: string
  readonly updated_at: string
  readonly closed_at: string | null
}

interface LocatedWork {
  readonly id: string
  readonly live: boolean
  readonly nsfw: boolean
  readonly merged: boolean
}

const proposalEtag = (row: { readonly id: string; readonly version: number }) => `"proposal-${row.id}-${row.version}"`

const proposalAnswer = (row: ProposalRow, status: number, extra: Record<string, string> = {}): Answer => ({
  status,
  headers: { "content-type": "application/json", etag: proposalEtag(row), ...extra },
  body: JSON.stringify({
    object: "proposal",
    id: row.id,
    entity_type: row.entity_type,
    entity_id: row.entity_id,
    state: row.state,
    site: row.site,
    proposer_uid: row.proposer_uid,
    patch: row.patch,
    effective_patch: row.effective,
    note: row.note,
    amendment_count: row.amendment_count,
    moderator_uid: row.decided_by,
    decision_note: row.decision_note,
    revision_id: row.revision_id,
    created_at: row.created_at,
    updated_at: row.updated_at,
    closed_at: row.closed_at
  })
})

/** `If-Match` against the proposal's ETag: 428 without one, 412 for another. */
const matchProposal = (row: ProposalRow, ifMatch: string | undefined) => {
  if (ifMatch === undefined) throw new Refused(428, "PRECONDITION_REQUIRED")
  if (ifMatch.trim() !== proposalEtag(row)) throw new Refused(412, "PRECONDITION_FAILED")
}

const propose =
  (principal: Principal, entityId: string, patch: Record<string, unknown>, note: string) =>
  async (client: Pg.PoolClient): Promise<Answer> => {
    const work = (await query<LocatedWork>(client, sqlLocateWork(false), [entityId])).rows[0]
    if (work === undefined || !work.live || (work.nsfw && !principal.nsfw)) {
      throw new Refused(404, work?.merged === true ? "ENTITY_MERGED" : "NOT_FOUND")
    }
    const text = JSON.stringify(patch)
    const row = (await query<ProposalRow>(client, sqlInsertProposal, [
      "catalog.work",
      work.id,
      principal.site,
      principal.userId,
      text,
      text,
      note
    ])).rows[0]!
    return proposalAnswer(row, 201, { location: `/v2/proposals/${row.id}` })
  }

const amendProposal = (
  principal: Principal,
  id: string,
  set: Record<string, unknown>,
  unset: Array<string>,
  note: string,
  ifMatch: string | undefined
) =>
async (client: Pg.PoolClient): Promise<Answer> => {
  const row = (await query<ProposalRow>(client, sqlLockProposal, [id])).rows[0]
  if (row === undefined) throw new Refused(404, "NOT_FOUND")
  if (row.site !== principal.site) throw new Refused(403, "TENANT_MISMATCH")
  matchProposal(row, ifMatch)
  if (row.state !== "open") throw new Refused(409, "INVALID_STATE_TRANSITION")
  const text = JSON.stringify(set)
  const amendment = (await query<
    { id: string; seq: number; amender_uid: string; note: string; set: unknown; unset: unknown; created_at: string }
  >(client, sqlAmend, [text, unset, row.id, principal.userId, text, unset, note])).rows[0]!
  return {
    status: 201,
    headers: { "content-type": "application/json", etag: proposalEtag({ id: row.id, version: row.version + 1 }) },
    body: JSON.stringify({ object: "amendment", ...amendment })
  }
}

const mergeProposal =
  (principal: Principal, id: string, note: string | null, ifMatch: string | undefined) =>
  async (client: Pg.PoolClient): Promise<Answer> => {
    const row = (await query<ProposalRow>(client, sqlLockProposal, [id])).rows[0]
    if (row === undefined) throw new Refused(404, "NOT_FOUND")
    const work = (await query<LocatedWork>(client, sqlLocateWork(true), [row.entity_id])).rows[0]
    if (work !== undefined && work.live && work.nsfw && !principal.nsfw) throw new Refused(404, "NOT_FOUND")
    matchProposal(row, ifMatch)
    if (row.state !== "open") throw new Refused(409, "INVALID_STATE_TRANSITION")
    const columns = columnsOf(row.effective)
    if (work === undefined || !work.live || columns === undefined) throw new Refused(409, "INVALID_STATE_TRANSITION")
    const names = columns.map(([column]) => column)
    const snapshot = async () =>
      JSON.parse((await query<{ v: string }>(client, sqlSnapshot(names), [work.id])).rows[0]!.v) as Record<
        string,
        unknown
      >
    const before = await snapshot()
    await query(client, sqlUpdateWork(names), [...columns.map(([, value]) => value), work.id])
    await query(client, sqlTouch, ["work", work.id])
    const after = await snapshot()
    const diffs = names.flatMap((name) => {
      const key = `catalog.work.${name}`
      const from = before[key] ?? null
      const to = after[key] ?? null
      return JSON.stringify(from) === JSON.stringify(to) ? [] : [{ key, from, to }]
    })
    const revision = (await query<{ id: string }>(client, sqlRecordRevision, [
      "catalog.work",
      work.id,
      "catalog.work",
      work.id,
      row.id,
      row.proposer_uid,
      principal.userId,
      row.note,
      JSON.stringify(diffs)
    ])).rows[0]!
    const closed = (await query<ProposalRow>(client, sqlCloseProposal, [
      "merged",
      principal.userId,
      note,
      revision.id,
      row.id
    ])).rows[0]!
    return proposalAnswer(closed, 200)
  }

// --- Cover votes, news, playtimes ---------------------------------------------------------------------

const vote =
  (principal: Principal, workId: string, coverId: string) => async (client: Pg.PoolClient): Promise<Answer> => {
    const work = (await query<{ id: string }>(client, sqlShareWork(principal.nsfw), [workId])).rows[0]
    if (work === undefined) throw new Refused(404, "NOT_FOUND")
    const cover = (await query<{ id: string }>(client, sqlLockCover, [coverId, work.id])).rows[0]
    if (cover === undefined) throw new Refused(404, "NOT_FOUND")
    const inserted = await query(client, sqlInsertVote, [cover.id, principal.userId])
    if (inserted.rows.length > 0) {
      await query(client, sqlCountVote, [1, cover.id])
      await query(client, sqlTouchWork, [work.id])
    }
    return {
      status: 200,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ object: "cover_vote", cover_id: cover.id, work_id: work.id, vote: "up" })
    }
  }

interface NewsRow {
  readonly id: string
  readonly banner_hash: string
  readonly [column: string]: unknown
}

const postNews = (
  principal: Principal,
  item: { source: string; title: string; summary: string; source_url: string; lane: string; work_ids: Array<string> }
) =>
async (client: Pg.PoolClient): Promise<Answer> => {
  const source = (await query<{ site: string; active: boolean }>(client, sqlNewsSource, [item.source])).rows[0]
  if (source === undefined || source.site !== principal.site || !source.active) {
    throw new Refused(422, "VALIDATION_FAILED")
  }
  const ids = [...new Set(item.work_ids)]
  if (ids.length > 0) {
    const visible = await query<{ id: string }>(client, sqlVisibleWorks(principal.nsfw), [ids])
    if (visible.rows.length !== ids.length) throw new Refused(422, "VALIDATION_FAILED")
  }
  const inserted = (await query<{ id: string }>(client, sqlInsertNews, [
    item.source,
    principal.site,
    item.title,
    item.summary,
    item.source_url,
    item.lane,
    ""
  ])).rows[0]
  if (inserted === undefined) throw new Refused(409, "ALREADY_EXISTS")
  if (ids.length > 0) await query(client, sqlLinkNews, [inserted.id, ids])
  const row = (await query<NewsRow>(client, sqlFindNews(principal.nsfw), [inserted.id])).rows[0]!
  return {
    status: 201,
    headers: { "content-type": "application/json", location: `/v2/news/${row.id}` },
    body: JSON.stringify({
      object: "news_item",
      ...row,
      banner_hash: row.banner_hash === "" ? null : row.banner_hash
    })
  }
}

const playtimes =
  (principal: Principal, items: Array<{ work_id: string; minutes: number }>) =>
  async (client: Pg.PoolClient): Promise<Answer> => {
    const works = items.map((item) => item.work_id)
    if (new Set(works).size !== works.length) throw new Refused(422, "VALIDATION_FAILED")
    const visible = await query<{ id: string }>(client, sqlPlaytimeWorks(principal.nsfw), [works])
    if (visible.rows.length !== works.length) throw new Refused(422, "VALIDATION_FAILED")
    await query(client, sqlLockAggregates, [[...works].sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1))])
    const stored = (await query<{ work_id: string; minutes: number; updated_at: string; old_minutes: number | null }>(
      client,
      sqlUpsertPlaytimes,
      [works, items.map((item) => item.minutes), principal.userId, principal.userId]
    )).rows
    const changed = stored.filter((row) => row.old_minutes !== row.minutes)
    if (changed.length > 0) {
      const changedWorks = changed.map((row) => row.work_id)
      await query(client, sqlHistogram, [
        changedWorks,
        changed.map((row) => row.old_minutes ?? -1),
        changed.map((row) => row.minutes)
      ])
      await query(client, sqlAggregates, [changedWorks])
    }
    return {
      status: 200,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        object: "list",
        items: stored.map((row) => ({
          object: "playtime",
          work_id: row.work_id,
          minutes: row.minutes,
          updated_at: row.updated_at
        }))
      })
    }
  }

// --- Editor images -------------------------------------------------------------------------------------

/** The `Content-Type` an upload of each format sharp reads must be declared as (src/catalog/media/Media.ts). */
const declaredAs: Readonly<Record<string, string>> = {
  jpeg: "image/jpeg",
  png: "image/png",
  webp: "image/webp",
  avif: "image/avif",
  heif: "image/avif",
  gif: "image/gif"
}

const uploadImage =
  (preset: "cover" | "screenshot", contentType: string, body: Buffer) =>
  async (client: Pg.PoolClient): Promise<Answer> => {
    const image = await processUpload(body, ImagePresets[preset])
    if (image === undefined || declaredAs[image.sourceFormat] !== contentType) {
      throw new Refused(422, "VALIDATION_FAILED")
    }
    const placeholder = await thumbhash(image.bytes)
    const url = `${publicUrl}${UPLOAD_PATH}/${image.sha256}`
    await keep(mediaDir, image.sha256, image.bytes)
    const inserted = await query(client, sqlInsertImage, [
      image.sha256,
      url,
      image.width,
      image.height,
      placeholder,
      preset,
      image.bytes.length
    ])
    const deduplicated = inserted.rows.length === 0
    return {
      status: deduplicated ? 200 : 201,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        object: "edit_image",
        preset,
        url,
        hash: image.sha256,
        width: image.width,
        height: image.height,
        thumbhash: placeholder,
        sexual: null,
        violence: null,
        size_bytes: image.bytes.length,
        is_deduplicated: deduplicated
      })
    }
  }

/** An upload's raw body, or undefined past `MAX_UPLOAD_BYTES` (declared or counted while read). */
const readUpload = (req: Http.IncomingMessage) =>
  new Promise<Buffer | undefined>((resolve, reject) => {
    if (Number(req.headers["content-length"] ?? 0) > MAX_UPLOAD_BYTES) return resolve(undefined)
    const chunks: Array<Buffer> = []
    let size = 0
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size <= MAX_UPLOAD_BYTES) {
        chunks.push(chunk)
        return
      }
      req.off("data", onData)
      resolve(undefined)
    }
    req.on("data", onData)
    req.on("end", () => resolve(Buffer.concat(chunks, size)))
    req.on("error", reject)
  })

/** `POST /v2/media/images?preset=...` with the image's bytes as the body. */
const upload = (req: Http.IncomingMessage, res: Http.ServerResponse) => {
  const preset = new URLSearchParams((req.url ?? "").split("?")[1] ?? "").get("preset")
  const token = (req.headers.authorization ?? "").replace(/^Bearer /i, "")
  const key = req.headers["idempotency-key"] as string | undefined
  const contentType = (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase()
  Promise.all([readUpload(req), principalOf(token)]).then(async ([body, principal]) => {
    if (body === undefined) {
      const refused = problem(413, "PAYLOAD_TOO_LARGE")
      return send(res, { ...refused, headers: { ...refused.headers, connection: "close" } })
    }
    if (principal === undefined) return send(res, problem(401, "INVALID_CREDENTIAL"))
    if (preset !== "cover" && preset !== "screenshot") return send(res, problem(400, "INVALID_PARAMETER"))
    if (!(UPLOAD_CONTENT_TYPES as ReadonlyArray<string>).includes(contentType)) {
      return send(res, problem(422, "VALIDATION_FAILED"))
    }
    const digest = Crypto.createHash("sha256").update(body).digest("hex")
    const fingerprint = Crypto.createHash("sha256")
      .update(`POST ${UPLOAD_PATH}\n${canonical({ preset, content_type: contentType, sha256: digest })}`)
      .digest()
    const write = uploadImage(preset, contentType, body)
    return send(res, await runWrite(principal, key, fingerprint, "media", write, Math.max(1, body.length)))
  }).catch(() => send(res, problem(500, "INTERNAL_ERROR")))
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
const amendmentsPath = /^\/v2\/proposals\/([0-9]{1,18})\/amendments$/
const proposalDecisionPath = /^\/v2\/moderation\/proposals\/([0-9]{1,18})\/decisions$/

const votePath = /^\/v2\/catalog\/works\/([0-9]{1,18})\/covers\/([0-9]{1,18})\/vote$/

const isObject = (u: unknown): u is Record<string, unknown> => u !== null && typeof u === "object" && !Array.isArray(u)

/** The write of a POST (or the vote's PUT) to `path`, its quota kind, or undefined (404) / a refusal of its body (422). */
const writeOf = (
  method: string,
  path: string,
  payload: Record<string, unknown>,
  principal: Principal,
  ifMatch: string | undefined
):
  | { readonly quota: Quota; readonly write: (client: Pg.PoolClient) => Promise<Answer> }
  | Answer
  | undefined =>
{
  const invalid = problem(422, "VALIDATION_FAILED")
  const voted = votePath.exec(path)
  if (voted !== null) {
    if (method !== "PUT") return undefined
    return payload.vote === "up" ? { quota: "votes", write: vote(principal, voted[1]!, voted[2]!) } : invalid
  }
  if (method !== "POST") return undefined
  if (path === "/v2/news") {
    const { lane = "news", source, source_url, summary, title, work_ids = [] } = payload
    return typeof source === "string" && typeof title === "string" && typeof summary === "string" &&
        typeof source_url === "string" && typeof lane === "string" && Array.isArray(work_ids) &&
        work_ids.every((id) => typeof id === "string")
      ? { quota: "news", write: postNews(principal, { source, title, summary, source_url, lane, work_ids }) }
      : invalid
  }
  if (path === "/v2/playtimes") {
    const { items } = payload
    return Array.isArray(items) && items.length > 0 && items.length <= 100 &&
        items.every((item) =>
          isObject(item) && typeof item.work_id === "string" && Number.isInteger(item.minutes) &&
          (item.minutes as number) >= 0 && (item.minutes as number) <= 60_000
        )
      ? { quota: "playtimes", write: playtimes(principal, items as Array<{ work_id: string; minutes: number }>) }
      : invalid
  }
  const note = typeof payload.note === "string" ? payload.note : ""
  if (path === "/v2/claims") {
    return typeof payload.work_id === "string"
      ? { quota: "claims", write: createClaim(principal, payload.work_id) }
      : invalid
  }
  if (path === "/v2/proposals") {
    const { entity_id: id, patch } = payload
    return payload.entity_type === "catalog.work" && typeof id === "string" && isObject(patch) &&
        Object.keys(patch).length > 0 && columnsOf(patch) !== undefined
      ? { quota: "proposals", write: propose(principal, id, patch, note) }
      : invalid
  }
  const claim = decisionPath.exec(path)
  if (claim !== null) {
    return payload.decision === "approve"
      ? { quota: "decisions", write: approve(principal, claim[1]!, ifMatch) }
      : invalid
  }
  const amended = amendmentsPath.exec(path)
  if (amended !== null) {
    const { set = {}, unset = [] } = payload
    return isObject(set) && columnsOf(set) !== undefined && Array.isArray(unset) &&
        unset.every((key): key is string =>
          typeof key === "string" && columnsOf({ [key]: null }) !== undefined && !Object.hasOwn(set, key)
        )
      ? { quota: "proposals", write: amendProposal(principal, amended[1]!, set, unset, note, ifMatch) }
      : invalid
  }
  const decided = proposalDecisionPath.exec(path)
  if (decided !== null) {
    return payload.decision === "merge"
      ? { quota: "decisions", write: mergeProposal(principal, decided[1]!, note === "" ? null : note, ifMatch) }
      : invalid
  }
  return undefined
}

Http.createServer((req, res) => {
  const path = (req.url ?? "/").split("?")[0]!
  if (path === "/healthz") return send(res, { status: 200, headers: {}, body: "{\"status\":\"ok\"}" })
  if (path === UPLOAD_PATH && req.method === "POST") return upload(req, res)
  if (req.method !== "POST" && req.method !== "PUT") return send(res, problem(404, "NOT_FOUND"))
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
    if (!isObject(payload)) return send(res, problem(422, "VALIDATION_FAILED"))
    const route = writeOf(req.method!, path, payload, principal, req.headers["if-match"])
    if (route === undefined) return send(res, problem(404, "NOT_FOUND"))
    if (!("write" in route)) return send(res, route)
    const fingerprint = Crypto.createHash("sha256").update(`${req.method} ${path}\n${canonical(payload)}`).digest()
    // The vote's route takes no Idempotency-Key (ours ignores one).
    return send(
      res,
      await runWrite(principal, route.quota === "votes" ? undefined : key, fingerprint, route.quota, route.write)
    )
  }).catch(() => send(res, problem(500, "INTERNAL_ERROR")))
}).listen(port, "127.0.0.1")
