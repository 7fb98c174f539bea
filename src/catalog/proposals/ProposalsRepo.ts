/**
 * The proposal tables (migrations/0026): statements only, run inside the write runner's transaction
 * for writes (src/catalog/writes/Writes.ts). Rules live in Proposals.ts.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { EntityTypeSchema } from "../../../schema/Catalog/Fields.js"
import { FieldDiff, ProposalState } from "../../../schema/Catalog/Proposal.js"
import { bigintId } from "../shared/Lanes.js"
import { rfc3339Sql } from "../shared/Rfc3339.js"

const Json = Schema.Record(Schema.String, Schema.Unknown)

export const ProposalRow = Schema.Struct({
  id: Schema.String,
  entity_type: EntityTypeSchema,
  entity_id: Schema.String,
  site: Schema.String,
  proposer_uid: Schema.String,
  patch: Json,
  effective: Json,
  note: Schema.String,
  state: ProposalState,
  version: Schema.Number,
  amendment_count: Schema.Number,
  decided_by: Schema.NullOr(Schema.String),
  decision_note: Schema.NullOr(Schema.String),
  revision_id: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String,
  closed_at: Schema.NullOr(Schema.String)
})
export type ProposalRow = typeof ProposalRow.Type

export const AmendmentRow = Schema.Struct({
  id: Schema.String,
  seq: Schema.Number,
  amender_uid: Schema.String,
  note: Schema.String,
  set: Json,
  unset: Schema.Array(Schema.String),
  created_at: Schema.String
})
export type AmendmentRow = typeof AmendmentRow.Type

export const RevisionRow = Schema.Struct({
  id: Schema.String,
  entity_type: EntityTypeSchema,
  entity_id: Schema.String,
  proposal_id: Schema.String,
  proposer_uid: Schema.String,
  moderator_uid: Schema.String,
  field_diffs: Schema.Array(FieldDiff),
  created_at: Schema.String
})
export type RevisionRow = typeof RevisionRow.Type

const proposalColumns = `p.id::text AS id, p.entity_type, p.entity_id::text AS entity_id, p.site, p.proposer_uid,
  p.patch, p.effective, p.note, p.state, p.version, p.amendment_count, p.decided_by, p.decision_note,
  p.revision_id::text AS revision_id, ${rfc3339Sql("p.created_at")} AS created_at,
  ${rfc3339Sql("p.updated_at")} AS updated_at, ${rfc3339Sql("p.closed_at")} AS closed_at`

const amendmentColumns = `a.id::text AS id, a.seq, a.amender_uid, a.note, a.set, a.unset,
  ${rfc3339Sql("a.created_at")} AS created_at`

const revisionColumns = `r.id::text AS id, r.entity_type, r.entity_id::text AS entity_id,
  r.proposal_id::text AS proposal_id, r.proposer_uid, r.moderator_uid, r.field_diffs,
  ${rfc3339Sql("r.created_at")} AS created_at`

export class ProposalsRepo extends Context.Service<ProposalsRepo>()("catalog/ProposalsRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const proposals = sql.literal(proposalColumns)
    /**
     * The content gate of a credential on the proposal `p` (docs/api-contract.md, the content limit): an
     * sfw credential does not see proposals on nsfw works, releases or characters (as they are now).
     */
    const gate = (nsfw: boolean) =>
      nsfw ? sql`TRUE` : sql`NOT coalesce(CASE p.entity_type
        WHEN 'catalog.work' THEN (SELECT x.nsfw FROM works x WHERE x.id = p.entity_id)
        WHEN 'catalog.release' THEN (SELECT x.nsfw FROM releases x WHERE x.id = p.entity_id)
        WHEN 'catalog.character' THEN (SELECT x.nsfw FROM characters x WHERE x.id = p.entity_id)
        END, false)`
    const amendments = sql.literal(amendmentColumns)
    const revisions = sql.literal(revisionColumns)

    const insert = SqlSchema.findOne({
      Request: Schema.Struct({
        entityType: Schema.String,
        entityId: Schema.String,
        site: Schema.String,
        proposerUid: Schema.String,
        patch: Json,
        note: Schema.String
      }),
      Result: ProposalRow,
      execute: (p) =>
        sql`
          WITH p AS (
            INSERT INTO proposals (entity_type, entity_id, site, proposer_uid, patch, effective, note)
            VALUES (${p.entityType}, ${p.entityId}::bigint, ${p.site}, ${p.proposerUid},
              ${JSON.stringify(p.patch)}::jsonb, ${JSON.stringify(p.patch)}::jsonb, ${p.note})
            RETURNING *)
          SELECT ${proposals} FROM p`
    })

    /** One proposal the content gate lets `nsfw` see; `lock`: locked for the rest of the transaction. */
    const find = (id: string, lock: boolean, nsfw: boolean) => {
      // An id beyond bigint (the wire allows 20 digits) names no proposal.
      const key = bigintId(id)
      return key === undefined ? Effect.succeed(undefined) : SqlSchema.findAll({
        Request: Schema.String,
        Result: ProposalRow,
        execute: (key) =>
          sql`SELECT ${proposals} FROM proposals p WHERE p.id = ${key}::bigint AND ${gate(nsfw)}
            ${lock ? sql`FOR UPDATE OF p` : sql``}`
      })(key).pipe(Effect.map((rows) => rows[0]))
    }

    /**
     * Appends an amendment to a locked proposal: the next `seq`, the effective patch with `set` laid
     * over it and the `unset` keys taken out, one more version.
     */
    const amend = (options: {
      readonly id: string
      readonly amenderUid: string
      readonly set: Readonly<Record<string, unknown>>
      readonly unset: ReadonlyArray<string>
      readonly note: string
    }) =>
      SqlSchema.findOne({
        Request: Schema.Void,
        Result: AmendmentRow,
        execute: () =>
          sql`
            WITH p AS (
              UPDATE proposals SET amendment_count = amendment_count + 1, version = version + 1, updated_at = now(),
                effective = (effective || ${JSON.stringify(options.set)}::jsonb) - ${options.unset}::text[]
              WHERE id = ${options.id}::bigint
              RETURNING id, amendment_count),
            a AS (
              INSERT INTO proposal_amendments (proposal_id, seq, amender_uid, set, unset, note)
              SELECT p.id, p.amendment_count, ${options.amenderUid}, ${JSON.stringify(options.set)}::jsonb,
                ${options.unset}::text[], ${options.note}
              FROM p
              RETURNING *)
            SELECT ${amendments} FROM a`
      })(undefined)

    /** Closes a locked proposal: `state`, and for a decision its moderator, note and revision. */
    const close = (options: {
      readonly id: string
      readonly state: "merged" | "declined" | "withdrawn"
      readonly moderatorUid: string | null
      readonly note: string | null
      readonly revisionId: string | null
    }) =>
      SqlSchema.findOne({
        Request: Schema.Void,
        Result: ProposalRow,
        execute: () =>
          sql`
            WITH p AS (
              UPDATE proposals SET state = ${options.state}, version = version + 1, updated_at = now(),
                closed_at = now(), decided_by = ${options.moderatorUid}, decision_note = ${options.note},
                revision_id = ${options.revisionId}::bigint
              WHERE id = ${options.id}::bigint
              RETURNING *)
            SELECT ${proposals} FROM p`
      })(undefined)

    /** A site's proposals the content gate lets `nsfw` see, newest first, below `beforeId`. */
    const bySite = (options: {
      readonly site: string
      readonly nsfw: boolean
      readonly state: string | undefined
      readonly entityType: string | undefined
      readonly entityId: string | undefined
      readonly beforeId: string | undefined
      readonly limit: number
    }) =>
      SqlSchema.findAll({
        Request: Schema.Void,
        Result: ProposalRow,
        execute: () =>
          sql`
            SELECT ${proposals} FROM proposals p
            WHERE p.site = ${options.site} AND ${gate(options.nsfw)}
              ${options.state === undefined ? sql`` : sql`AND p.state = ${options.state}`}
              ${options.entityType === undefined ? sql`` : sql`AND p.entity_type = ${options.entityType}`}
              ${options.entityId === undefined ? sql`` : sql`AND p.entity_id = ${options.entityId}::bigint`}
              ${options.beforeId === undefined ? sql`` : sql`AND p.id < ${options.beforeId}::bigint`}
            ORDER BY p.id DESC LIMIT ${options.limit}`
      })(undefined)

    /** The moderation queue: proposals in `state` the gate lets `nsfw` see, oldest first, above `afterId`. */
    const queue = (options: {
      readonly state: string
      readonly nsfw: boolean
      readonly entityType: string | undefined
      readonly site: string | undefined
      readonly afterId: string | undefined
      readonly limit: number
    }) =>
      SqlSchema.findAll({
        Request: Schema.Void,
        Result: ProposalRow,
        execute: () =>
          sql`
            SELECT ${proposals} FROM proposals p
            WHERE p.state = ${options.state} AND ${gate(options.nsfw)}
              ${options.entityType === undefined ? sql`` : sql`AND p.entity_type = ${options.entityType}`}
              ${options.site === undefined ? sql`` : sql`AND p.site = ${options.site}`}
              ${options.afterId === undefined ? sql`` : sql`AND p.id > ${options.afterId}::bigint`}
            ORDER BY p.id LIMIT ${options.limit}`
      })(undefined)

    /** A proposal's amendments in `seq` order, above `afterSeq`. */
    const amendmentsOf = (options: { readonly id: string; readonly afterSeq: number; readonly limit: number }) =>
      SqlSchema.findAll({
        Request: Schema.Void,
        Result: AmendmentRow,
        execute: () =>
          sql`
            SELECT ${amendments} FROM proposal_amendments a
            WHERE a.proposal_id = ${options.id}::bigint AND a.seq > ${options.afterSeq}
            ORDER BY a.seq LIMIT ${options.limit}`
      })(undefined)

    /** Records a revision of a locked entity (its number follows the entity's last one). */
    const record = (options: {
      readonly entityType: string
      readonly entityId: string
      readonly proposalId: string
      readonly proposerUid: string
      readonly moderatorUid: string
      readonly note: string
      readonly diffs: ReadonlyArray<FieldDiff>
    }) =>
      SqlSchema.findOne({
        Request: Schema.Void,
        Result: RevisionRow,
        execute: () =>
          sql`
            WITH r AS (
              INSERT INTO revisions (entity_type, entity_id, seq, proposal_id, proposer_uid, moderator_uid, note,
                field_diffs)
              SELECT ${options.entityType}, ${options.entityId}::bigint,
                coalesce((SELECT max(seq) FROM revisions WHERE entity_type = ${options.entityType}
                  AND entity_id = ${options.entityId}::bigint), 0) + 1,
                ${options.proposalId}::bigint, ${options.proposerUid}, ${options.moderatorUid}, ${options.note},
                ${JSON.stringify(options.diffs)}::jsonb
              RETURNING *)
            SELECT ${revisions} FROM r`
      })(undefined)

    const revision = (id: string) =>
      SqlSchema.findAll({
        Request: Schema.String,
        Result: RevisionRow,
        execute: (key) => sql`SELECT ${revisions} FROM revisions r WHERE r.id = ${key}::bigint`
      })(id).pipe(Effect.map((rows) => rows[0]))

    /**
     * An entity's revisions, newest first, below `beforeId`, with those of every entity merged into it
     * (the merge map names the final survivor of each merged-away id).
     */
    const revisionsOf = (options: {
      readonly entityType: string
      readonly object: string
      readonly entityId: string
      readonly beforeId: string | undefined
      readonly limit: number
    }) =>
      SqlSchema.findAll({
        Request: Schema.Void,
        Result: RevisionRow,
        execute: () =>
          sql`
            SELECT ${revisions} FROM revisions r
            WHERE r.entity_type = ${options.entityType}
              AND r.entity_id IN (SELECT ${options.entityId}::bigint UNION ALL
                SELECT from_id FROM catalog_redirects
                WHERE target_object = ${options.object} AND current_id = ${options.entityId}::bigint)
              ${options.beforeId === undefined ? sql`` : sql`AND r.id < ${options.beforeId}::bigint`}
            ORDER BY r.id DESC LIMIT ${options.limit}`
      })(undefined)

    // A statement that fails here is a defect, except the ones the write runner retries (a deadlock or
    // a serialization failure), which it finds among defects too; a row that does not decode is one.
    const orDie =
      <Args extends ReadonlyArray<any>, A, E, R>(f: (...args: Args) => Effect.Effect<A, E, R>) => (...args: Args) =>
        Effect.orDie(f(...args))

    return {
      insert: orDie(insert),
      find: orDie(find),
      amend: orDie(amend),
      close: orDie(close),
      bySite: orDie(bySite),
      queue: orDie(queue),
      amendmentsOf: orDie(amendmentsOf),
      record: orDie(record),
      revision: orDie(revision),
      revisionsOf: orDie(revisionsOf)
    } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
