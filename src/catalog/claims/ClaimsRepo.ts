/**
 * The claim tables (migrations/0021, 0022): statements only, run inside the transaction of the write
 * runner (src/catalog/writes/Writes.ts) for writes. Rules live in Claims.ts, except the one rule
 * every read shares, who sees which claim event (`seesEvent`, docs/writing.md, "Who sees what"),
 * which is SQL so that lists and the log can filter by it.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { Statement } from "effect/sql/Statement"
import { ClaimState } from "../../../schema/Catalog/Claim.js"
import { searchDocument } from "../search/SearchKey.js"
import { bigintId } from "../shared/Lanes.js"
import { rfc3339Sql } from "../shared/Rfc3339.js"
import type { MintFields } from "./WorkFields.js"

/** A claim as locked for a change. */
export const LockedClaim = Schema.Struct({
  work_id: Schema.String,
  state: ClaimState,
  site: Schema.String,
  site_work_id: Schema.NullOr(Schema.String),
  owner_uid: Schema.NullOr(Schema.String),
  hidden_from: Schema.NullOr(ClaimState),
  minted: Schema.Boolean,
  last_event_id: Schema.String,
  work_live: Schema.Boolean,
  nsfw: Schema.Boolean,
  display_name: Schema.String,
  /** The acting user's events on the work so far, and the first one's time. */
  acted_count: Schema.Number,
  first_acted_at: Schema.NullOr(Schema.String)
})
export type LockedClaim = typeof LockedClaim.Type

/** An appended event: its id and time. */
export const Appended = Schema.Struct({ id: Schema.String, created_at: Schema.String })
export type Appended = typeof Appended.Type

/** One row of a claim record, with the newest event and the bearer's counts. */
export const RecordRow = Schema.Struct({
  work_id: Schema.String,
  display_name: Schema.String,
  state: ClaimState,
  site: Schema.String,
  product_work_id: Schema.NullOr(Schema.String),
  minted: Schema.Boolean,
  work_live: Schema.Boolean,
  nsfw: Schema.Boolean,
  last_event_id: Schema.NullOr(Schema.String),
  le_from: Schema.NullOr(ClaimState),
  le_to: Schema.NullOr(ClaimState),
  le_reason: Schema.NullOr(Schema.String),
  le_actor: Schema.NullOr(Schema.String),
  le_created_at: Schema.NullOr(Schema.String),
  acted_count: Schema.NullOr(Schema.Number),
  first_acted_at: Schema.NullOr(Schema.String)
})
export type RecordRow = typeof RecordRow.Type

export const EventRow = Schema.Struct({
  id: Schema.String,
  work_id: Schema.String,
  from_state: Schema.NullOr(ClaimState),
  to_state: ClaimState,
  reason: Schema.NullOr(Schema.String),
  actor_uid: Schema.String,
  site: Schema.String,
  product_work_id: Schema.NullOr(Schema.String),
  created_at: Schema.String
})
export type EventRow = typeof EventRow.Type

export interface NewEvent {
  readonly workId: string
  readonly from: ClaimState | null
  readonly to: ClaimState
  readonly decision: "approve" | "decline" | "ban" | "unban" | null
  readonly reason: string | null
  readonly actorUid: string
  readonly site: string
}

/**
 * Who reads (docs/writing.md, "Who sees what"): the credential's site (empty: none, which owns
 * nothing), whether its user is a moderator now, and its content limit.
 */
export interface Viewer {
  readonly site: string
  readonly moderator: boolean
  readonly nsfw: boolean
}

/** A ref a going-live work cannot take: another served work holds it. */
export interface HeldRef {
  readonly source: string
  readonly external_id: string
  readonly holder: string
}

export interface Bearer {
  readonly uid: string
  /** Count only actions within this site. */
  readonly site: string | undefined
}

export class ClaimsRepo extends Context.Service<ClaimsRepo>()("catalog/ClaimsRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const decodeLocked = Schema.decodeUnknownEffect(Schema.Array(LockedClaim))
    const decodeRecords = Schema.decodeUnknownEffect(Schema.Array(RecordRow))
    const decodeEvents = Schema.decodeUnknownEffect(Schema.Array(EventRow))
    const decodeAppended = Schema.decodeUnknownEffect(Schema.Array(Appended))

    /** The content gate of a credential (`nsfw`: sees nsfw works too). */
    const gate = (nsfw: boolean) => nsfw ? sql`TRUE` : sql`NOT w.nsfw`

    /**
     * The viewer sees everything of the claim event `e`, its reason too: a moderator every event, a
     * site its own site's events (a claim's events carry its site, moderators' decisions included).
     */
    const privileged = (viewer: Viewer, e: string) =>
      viewer.moderator ? sql`TRUE` : viewer.site === "" ? sql`FALSE` : sql`${sql(e)}.site = ${viewer.site}`

    /**
     * The one visibility rule of every claim read: the viewer sees the claim event `e` of the work `w`
     * when it is privileged to (above), or when the event is public: it puts a claim into `live` or
     * takes it out of `live`, on a work the catalog serves. Everything before a claim first goes live
     * (its draft, its submission, its moderation) stays the claiming site's and the moderators'. The
     * content gate (`gate`) applies on top, to the work.
     */
    const seesEvent = (viewer: Viewer, e: string) =>
      viewer.moderator ? sql`TRUE` : sql`(${privileged(viewer, e)} OR (w.live AND (${sql(e)}.to_state = 'live'
        OR coalesce(${sql(e)}.from_state, '') = 'live')))`

    /** A served work's id and name; none when the work does not exist, is not served, or is gated away. */
    const liveWork = (workId: string, nsfw: boolean) =>
      bigintId(workId) === undefined ? Effect.succeed(undefined) : sql<{ id: string; display_name: string }>`
        SELECT w.id::text AS id, w.display_name FROM works w
        WHERE w.id = ${workId}::bigint AND w.live AND ${gate(nsfw)}`.pipe(
        Effect.map((rows) => rows[0])
      )

    /** The distinct served works the refs name (exact source and external id), at most two, with names. */
    const worksByRefs = (
      refs: ReadonlyArray<{ readonly source: string; readonly external_id: string }>,
      nsfw: boolean
    ) =>
      sql<{ id: string; display_name: string }>`
        SELECT DISTINCT r.entity_id::text AS id, w.display_name
        FROM entity_refs r JOIN works w ON w.id = r.entity_id AND w.live AND ${gate(nsfw)}
        WHERE r.entity_type = 'work'
          AND (r.source, r.external_id) IN (
            SELECT * FROM unnest(${refs.map((r) => r.source)}::text[], ${refs.map((r) => r.external_id)}::text[]))
        ORDER BY 1 LIMIT 2`

    /**
     * Creates a work for a claim, withdrawn (invisible) until its claim goes live. Its refs stay with
     * the claim (`claim_refs`) until then: a ref belongs to a served work only.
     */
    const mintWork = (
      fields: MintFields,
      refs: ReadonlyArray<{ readonly source: string; readonly external_id: string }>
    ) =>
      Effect.gen(function*() {
        const lang = fields.olang ?? "und"
        const localized = { [lang]: { value: fields.display_name, latin: fields.latin } }
        const [row] = yield* sql<{ id: string }>`
          INSERT INTO works (display_name, latin, lang, localized, olang, length_minutes, development_status, withdrawn)
          VALUES (${fields.display_name}, ${fields.latin}, ${lang}, ${
          JSON.stringify(localized)
        }::jsonb, ${fields.olang},
                  ${fields.length_minutes}, ${fields.development_status}, true)
          RETURNING id::text AS id`
        const id = row!.id
        yield* sql`
          INSERT INTO work_titles (work_id, lang, value, latin, is_main, is_official)
          VALUES (${id}::bigint, ${lang}, ${fields.display_name}, ${fields.latin}, true, true)`
        const document = searchDocument([fields.display_name, ...(fields.latin === null ? [] : [fields.latin])])
        yield* sql`INSERT INTO work_search (work_id, norm, key) VALUES (${id}::bigint, ${document.norm}, ${document.key})`
        if (refs.length > 0) {
          yield* sql`
            INSERT INTO claim_refs (work_id, source, external_id)
            SELECT ${id}::bigint, s, e
            FROM unnest(${refs.map((r) => r.source)}::text[], ${refs.map((r) => r.external_id)}::text[]) AS x (s, e)
            ON CONFLICT DO NOTHING`
        }
        return id
      })

    /**
     * A minted work going live takes its claim's refs into `entity_refs`; none when it took them all,
     * else the first ref another served work holds (then the caller refuses the write, which rolls
     * this back). A ref held by a work that is not served passes to this one. Two works going live
     * with one ref at once: the second insert waits for the first transaction, then conflicts, and
     * the look that follows (a statement of its own, so it sees that commit) finds the holder.
     */
    const attachRefs = (workId: string) =>
      Effect.gen(function*() {
        yield* sql`
          INSERT INTO entity_refs (entity_type, entity_id, source, external_id)
          SELECT 'work', work_id, source, external_id FROM claim_refs
          WHERE work_id = ${workId}::bigint ORDER BY source, external_id
          ON CONFLICT DO NOTHING`
        const [held] = yield* sql<HeldRef>`
          SELECT r.source, r.external_id, r.entity_id::text AS holder
          FROM claim_refs cr
          JOIN entity_refs r ON r.entity_type = 'work' AND r.source = cr.source AND r.external_id = cr.external_id
            AND r.entity_id <> cr.work_id
          JOIN works h ON h.id = r.entity_id AND h.live
          WHERE cr.work_id = ${workId}::bigint
          ORDER BY r.source, r.external_id LIMIT 1`
        if (held !== undefined) return held
        yield* sql`
          UPDATE entity_refs r SET entity_id = cr.work_id
          FROM claim_refs cr
          WHERE cr.work_id = ${workId}::bigint AND r.entity_type = 'work' AND r.source = cr.source
            AND r.external_id = cr.external_id AND r.entity_id <> cr.work_id`
        yield* sql`DELETE FROM claim_refs WHERE work_id = ${workId}::bigint`
        return undefined
      })

    /** A released claim gives up the refs it kept. */
    const releaseRefs = (workId: string) => sql`DELETE FROM claim_refs WHERE work_id = ${workId}::bigint`

    /**
     * A minted work follows its claim: served while the claim is live, withdrawn otherwise. The change
     * feed lists it when it appears and (gone) when it leaves again.
     */
    const setServed = (workId: string, served: boolean) =>
      Effect.gen(function*() {
        const changed = yield* sql`
          UPDATE works SET withdrawn = ${!served}, updated_at = now()
          WHERE id = ${workId}::bigint AND withdrawn = ${served} RETURNING id`
        if (changed.length > 0) yield* sql`SELECT catalog_touch('work', ${workId}::bigint, ${!served})`
      })

    /**
     * Locks the work's claim row; none when the work was never claimed (then nobody has acted on it).
     * With the acting user's events on the work so far, for the face the change answers.
     */
    const lock = (workId: string, actorUid: string) =>
      bigintId(workId) === undefined ? Effect.succeed(undefined) : sql`
        SELECT c.work_id::text AS work_id, c.state, c.site, c.site_work_id, c.owner_uid, c.hidden_from, c.minted,
               c.last_event_id::text AS last_event_id, w.live AS work_live, w.nsfw, w.display_name,
               (SELECT count(*)::int FROM claim_events a WHERE a.work_id = c.work_id AND a.actor_uid = ${actorUid})
                 AS acted_count,
               (SELECT ${sql.literal(rfc3339Sql("min(a.created_at)"))} FROM claim_events a
                WHERE a.work_id = c.work_id AND a.actor_uid = ${actorUid}) AS first_acted_at
        FROM claims c JOIN works w ON w.id = c.work_id
        WHERE c.work_id = ${workId}::bigint
        FOR UPDATE OF c`.pipe(Effect.flatMap(decodeLocked), Effect.map((rows) => rows[0]))

    /**
     * The event and the claim's new row, in one statement that first takes the event lock (held until
     * commit: ids become visible in ascending order) and then the next id. One round trip, so the
     * lock is held for as little of the transaction as possible: call it as its last change.
     */
    const appendSql = (event: NewEvent, claim: Statement<unknown>) =>
      sql`
        WITH locked AS (SELECT claim_event_lock()),
        next AS (SELECT nextval('claim_event_seq') AS id FROM locked),
        claim AS (${claim}),
        event AS (
          INSERT INTO claim_events (id, work_id, from_state, to_state, decision, reason, actor_uid, site)
          SELECT claim.last_event_id, ${event.workId}::bigint, ${event.from}, ${event.to}, ${event.decision},
                 ${event.reason}, ${event.actorUid}, ${event.site}
          FROM claim
          RETURNING id, created_at
        )
        SELECT id::text AS id, ${sql.literal(rfc3339Sql("created_at"))} AS created_at FROM event`.pipe(
        Effect.flatMap(decodeAppended),
        Effect.map((rows) => rows[0])
      )

    /** A new claim on a work without one (or released) and its creating event; none when the work holds a claim. */
    const appendCreation = (claim: {
      readonly state: ClaimState
      readonly siteWorkId: string | null
      readonly minted: boolean
    }, event: NewEvent) =>
      appendSql(
        event,
        sql`
          INSERT INTO claims AS c (work_id, state, site, site_work_id, owner_uid, minted, last_event_id)
          SELECT ${event.workId}::bigint, ${claim.state}, ${event.site}, ${claim.siteWorkId}, ${event.actorUid},
                 ${claim.minted}, next.id
          FROM next
          ON CONFLICT (work_id) DO UPDATE SET state = EXCLUDED.state, site = EXCLUDED.site,
            site_work_id = EXCLUDED.site_work_id, owner_uid = EXCLUDED.owner_uid, hidden_from = NULL,
            minted = EXCLUDED.minted, last_event_id = EXCLUDED.last_event_id, updated_at = now()
          WHERE c.state = 'none'
          RETURNING c.last_event_id`
      )

    /** A locked claim's move to `event.to` and its event. */
    const appendChange = (
      change: { readonly hiddenFrom: ClaimState | null; readonly released: boolean },
      event: NewEvent
    ) =>
      Effect.map(
        appendSql(
          event,
          sql`
            UPDATE claims c SET state = ${event.to}, hidden_from = ${change.hiddenFrom}, last_event_id = next.id,
              updated_at = now(),
              site = CASE WHEN ${change.released} THEN '' ELSE c.site END,
              minted = CASE WHEN ${change.released} THEN false ELSE c.minted END
            FROM next
            WHERE c.work_id = ${event.workId}::bigint
            RETURNING c.last_event_id`
        ),
        (appended) => appended!
      )

    /**
     * Claim records as `viewer` sees them: each work's newest event the viewer sees (`le`), the claim
     * as of that event, and the bearer's counts when a bearer is given. When the viewer sees the
     * claim's newest event, that is the claim itself; otherwise what it sees ended before the current
     * claim (a claim's public events run from its first `live` to its end), so it reads `none`. A work
     * is listed when the viewer sees an event on it, or the work is served (an unclaimed or a
     * not-yet-public claim reads `none`), or for a moderator; always within the content gate.
     */
    const records = (options: {
      readonly viewer: Viewer
      readonly bearer: Bearer | undefined
      readonly where: (projected: { readonly state: Statement<unknown> }) => ReadonlyArray<Statement<unknown>>
      readonly order: "work" | "queue"
      readonly limit: number
    }) => {
      const { bearer, viewer } = options
      const counts = bearer === undefined
        ? sql`NULL::int AS acted_count, NULL::text AS first_acted_at`
        : sql`
          (SELECT count(*)::int FROM claim_events a WHERE a.work_id = w.id AND a.actor_uid = ${bearer.uid}
             AND (${bearer.site ?? null}::text IS NULL OR a.site = ${bearer.site ?? null})) AS acted_count,
          (SELECT ${sql.literal(rfc3339Sql("min(a.created_at)"))} FROM claim_events a
           WHERE a.work_id = w.id AND a.actor_uid = ${bearer.uid}
             AND (${bearer.site ?? null}::text IS NULL OR a.site = ${bearer.site ?? null})) AS first_acted_at`
      const order = options.order === "work" ? sql`w.id` : sql`c.last_event_id`
      const current = sql`(le.id IS NOT DISTINCT FROM c.last_event_id)`
      const state = sql`(CASE WHEN ${current} THEN coalesce(c.state, 'none') ELSE coalesce(le.to_state, 'none') END)`
      return sql`
        SELECT w.id::text AS work_id, w.display_name, ${state} AS state,
               CASE WHEN ${current} THEN coalesce(c.site, '') WHEN coalesce(le.to_state, 'none') = 'none' THEN ''
                    ELSE le.site END AS site,
               CASE WHEN ${current} AND coalesce(c.state, 'none') <> 'none' THEN c.site_work_id END AS product_work_id,
               coalesce(c.minted, false) AS minted, w.live AS work_live, w.nsfw,
               le.id::text AS last_event_id, le.from_state AS le_from, le.to_state AS le_to, le.reason AS le_reason,
               le.actor_uid AS le_actor, ${sql.literal(rfc3339Sql("le.created_at"))} AS le_created_at,
               ${counts}
        FROM works w
        LEFT JOIN claims c ON c.work_id = w.id
        LEFT JOIN LATERAL (
          SELECT e.id, e.from_state, e.to_state, e.site, e.actor_uid, e.created_at,
                 CASE WHEN ${privileged(viewer, "e")} THEN e.reason END AS reason
          FROM claim_events e
          WHERE e.work_id = w.id AND ${seesEvent(viewer, "e")} ORDER BY e.id DESC LIMIT 1
        ) le ON true
        WHERE ${
        sql.and([
          gate(viewer.nsfw),
          viewer.moderator ? sql`TRUE` : sql`(w.live OR le.id IS NOT NULL)`,
          ...options.where({ state })
        ])
      }
        ORDER BY ${order}
        LIMIT ${options.limit}`.pipe(Effect.flatMap(decodeRecords))
    }

    /** One work's claim record as the viewer sees it; none when the viewer cannot see the work. */
    const record = (workId: string, viewer: Viewer, bearer: Bearer | undefined) =>
      bigintId(workId) === undefined ? Effect.succeed(undefined) : Effect.map(
        records({ viewer, bearer, where: () => [sql`w.id = ${workId}::bigint`], order: "work", limit: 1 }),
        (rows) => rows[0]
      )

    /**
     * The works the bearer acted on, by an action the viewer sees, by id, after `afterId`; `state` as
     * the viewer sees it.
     */
    const actedOn = (options: {
      readonly viewer: Viewer
      readonly bearer: Bearer
      readonly state: ClaimState | undefined
      readonly afterId: string | undefined
      readonly limit: number
    }) =>
      records({
        viewer: options.viewer,
        bearer: options.bearer,
        where: ({ state }) => [
          // An action of the bearer that this credential sees (one made for another site is that site's).
          sql`EXISTS (SELECT 1 FROM claim_events a WHERE a.work_id = w.id AND a.actor_uid = ${options.bearer.uid}
            AND (${options.bearer.site ?? null}::text IS NULL OR a.site = ${options.bearer.site ?? null})
            AND ${seesEvent(options.viewer, "a")})`,
          options.afterId === undefined ? sql`TRUE` : sql`w.id > ${options.afterId}::bigint`,
          options.state === undefined ? sql`TRUE` : sql`${state} = ${options.state}`
        ],
        order: "work",
        limit: options.limit
      })

    /** Claims in `state` that the viewer sees, longest waiting first (by their newest event). */
    const queue = (options: {
      readonly viewer: Viewer
      readonly state: ClaimState
      readonly site: string | undefined
      readonly afterEventId: string | undefined
      readonly limit: number
    }) =>
      records({
        viewer: options.viewer,
        bearer: undefined,
        where: ({ state }) => [
          sql`c.state = ${options.state}`,
          sql`${state} = ${options.state}`,
          options.site === undefined ? sql`TRUE` : sql`c.site = ${options.site}`,
          options.afterEventId === undefined ? sql`TRUE` : sql`c.last_event_id > ${options.afterEventId}::bigint`
        ],
        order: "queue",
        limit: options.limit
      })

    /**
     * The event log above `after`, ascending, as the viewer sees it: only the events it sees, the
     * reason only where it is privileged, and the claim's `product_work_id` only when it sees the
     * claim's newest event (the claim as it is now).
     */
    const events = (options: {
      readonly viewer: Viewer
      readonly after: string | undefined
      readonly workId: string | undefined
      readonly limit: number
    }) =>
      options.workId !== undefined && bigintId(options.workId) === undefined
        ? Effect.succeed([])
        : sql`
        SELECT e.id::text AS id, e.work_id::text AS work_id, e.from_state, e.to_state,
               CASE WHEN ${privileged(options.viewer, "e")} THEN e.reason END AS reason, e.actor_uid, e.site,
               CASE WHEN c.state IS NULL OR c.state = 'none' OR NOT coalesce(${seesEvent(options.viewer, "ce")}, false)
                    THEN NULL ELSE c.site_work_id END AS product_work_id,
               ${sql.literal(rfc3339Sql("e.created_at"))} AS created_at
        FROM claim_events e
        JOIN works w ON w.id = e.work_id
        LEFT JOIN claims c ON c.work_id = e.work_id
        LEFT JOIN claim_events ce ON ce.id = c.last_event_id
        WHERE e.id > ${options.after ?? "0"}::bigint
          AND ${gate(options.viewer.nsfw)} AND ${seesEvent(options.viewer, "e")}
          ${options.workId === undefined ? sql`` : sql`AND e.work_id = ${options.workId}::bigint`}
        ORDER BY e.id
        LIMIT ${options.limit}`.pipe(Effect.flatMap(decodeEvents))

    /** The row of an entity for a snapshot: its name fields, and for works the other field keys. */
    // A statement that fails here is a defect (the rules above it refuse every bad input first).
    const orDie =
      <Args extends ReadonlyArray<any>, A, E, R>(f: (...args: Args) => Effect.Effect<A, E, R>) => (...args: Args) =>
        Effect.orDie(f(...args))

    return {
      liveWork: orDie(liveWork),
      worksByRefs: orDie(worksByRefs),
      mintWork: orDie(mintWork),
      attachRefs: orDie(attachRefs),
      releaseRefs: orDie(releaseRefs),
      setServed: orDie(setServed),
      lock: orDie(lock),
      appendCreation: orDie(appendCreation),
      appendChange: orDie(appendChange),
      record: orDie(record),
      actedOn: orDie(actedOn),
      queue: orDie(queue),
      events: orDie(events)
    } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
