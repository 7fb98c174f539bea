/**
 * Edit proposals (docs/writing.md, "Edit proposals"): creation, amendments, withdrawal, moderator
 * decisions, and the revisions a merge records. Every write returns a `WriteAnswer` for the write
 * runner (src/catalog/writes/Writes.ts), which owns the transaction.
 *
 * States: `open` until its site withdraws it (`withdrawn`) or a moderator decides it (`merged`,
 * `declined`); any other move is 409 `INVALID_STATE_TRANSITION`. The effective patch is the patch,
 * then each amendment's `set` and `unset` in `seq` order (kept in the row by each amendment).
 *
 * A merge locks the proposal, then the entity (so two merges on one entity run one after the other),
 * reads the current values of the effective patch's keys, writes them, reads them again with the
 * same SQL, and records the keys whose value changed as FieldDiffs: `from` is what the entity held
 * just before, whatever merge wrote it, and `to` what it holds now.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import type { ListProposalsParams, PagingParams, ProposalQueueParams } from "../../../schema/Api/ProposalsApi.js"
import type { RevisionCollection } from "../../../schema/Api/ProposalsApi.js"
import type { PrincipalShape } from "../../../schema/Api/Security.js"
import type { RouteRule } from "../../../schema/Api/Writes.js"
import type { TargetObject } from "../../../schema/Catalog/Change.js"
import {
  entityObject,
  type EntityType,
  entityTypeOf,
  EntityTypes,
  fieldOf,
  registeredFields
} from "../../../schema/Catalog/Fields.js"
import {
  Amendment,
  type AmendProposalInputBody,
  type CreateProposalInputBody,
  type DecideProposalInputBody,
  type FieldDiff,
  type FieldInfo,
  Proposal,
  type Revision
} from "../../../schema/Catalog/Proposal.js"
import { DEFAULT_LIMIT } from "../../../schema/Catalog/Query.js"
import {
  EntityMerged,
  type FieldError,
  InvalidStateTransition,
  NotFound,
  UserIdentityRequired,
  ValidationFailed
} from "../../../schema/Problem.js"
import { decodeFields, EntityFields, type Located, pointerToken } from "../fields/EntityFields.js"
import { Cursors } from "../pagination/Cursor.js"
import { bigintId } from "../shared/Lanes.js"
import { checkIfMatch, checkTenant, jsonAnswer } from "../writes/Writes.js"
import { type AmendmentRow, type ProposalRow, ProposalsRepo, type RevisionRow } from "./ProposalsRepo.js"

/** The proposal's strong ETag: it changes with every change to the proposal. */
export const proposalEtag = (row: { readonly id: string; readonly version: number }) =>
  `"proposal-${row.id}-${row.version}"`

const toProposal = (row: ProposalRow): Proposal => ({
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

const toAmendment = (row: AmendmentRow): Amendment => ({ object: "amendment", ...row })

const toRevision = (row: RevisionRow): Revision => ({
  object: "revision",
  id: row.id,
  entity_type: row.entity_type,
  entity_id: row.entity_id,
  proposal_id: row.proposal_id,
  proposer_uid: row.proposer_uid,
  moderator_uid: row.moderator_uid,
  created_at: row.created_at,
  diff: row.field_diffs
})

/** The JSON Schema of a value schema, its definitions inline under `$defs`. */
const jsonSchemaOf = (schema: Schema.Top): Record<string, unknown> => {
  // As values are decoded: a member the records do not have is refused (EntityFields.ts).
  const document = Schema.toJsonSchemaDocument(schema, { onExcessProperty: "error" })
  return Object.keys(document.definitions).length === 0
    ? { ...document.schema }
    : { ...document.schema, $defs: document.definitions }
}

/** The registry as `GET /v2/catalog/fields` lists it (built once: the registry is constant). */
export const fieldInfos: ReadonlyArray<FieldInfo> = registeredFields.map((field) => ({
  object: "field",
  key: field.key,
  entity_type: field.entityType,
  writable: field.writable,
  schema: jsonSchemaOf(field.schema)
}))

/** The entity type of each revisions collection (the collection of the entity's read path). */
const collectionTypes: Readonly<Record<RevisionCollection, EntityType>> = {
  works: "catalog.work",
  releases: "catalog.release",
  characters: "catalog.character",
  "credit-names": "catalog.credit_name",
  companies: "catalog.company",
  tags: "catalog.tag",
  engines: "catalog.engine"
}

const userOf = (principal: PrincipalShape) =>
  Option.match(principal.user, {
    onNone: () => Effect.fail(new UserIdentityRequired({ detail: "This operation acts for a person." })),
    onSome: (user) => Effect.succeed(String(user.id))
  })

const validation = (errors: ReadonlyArray<FieldError>, detail: string) =>
  new ValidationFailed({ detail, errors: [...errors] })

const invalidTransition = (state: string, action: string) =>
  new InvalidStateTransition({ detail: `A proposal in state \`${state}\` cannot be ${action}.` })

/** The caller's content limit hides the entity (docs/api-contract.md, the content limit). */
const gatedAway = (principal: PrincipalShape, located: Located) =>
  located._tag === "Live" && located.nsfw && principal.contentLimit !== "nsfw"

export class Proposals extends Context.Service<Proposals>()("catalog/Proposals", {
  make: Effect.gen(function*() {
    const repo = yield* ProposalsRepo
    const fields = yield* EntityFields
    const cursors = yield* Cursors

    /** 404 for an entity that is not there (or hidden by the content limit), ENTITY_MERGED for a merged one. */
    const visible = (principal: PrincipalShape, entityType: EntityType, located: Located, id: string) => {
      const object = entityObject[entityType]
      if (located._tag === "Merged") {
        return Effect.fail(
          new EntityMerged({
            detail: `This ${object} was merged into ${located.currentId}.`,
            object,
            current_id: located.currentId
          })
        )
      }
      return located._tag === "Missing" || gatedAway(principal, located)
        ? Effect.fail(new NotFound({ detail: `No ${object} with id ${id}.` }))
        : Effect.succeed(located.id)
    }

    const proposalAnswer = (row: ProposalRow, status: number, extra: Record<string, string> = {}) =>
      jsonAnswer(Proposal, toProposal(row), { status, headers: { etag: proposalEtag(row), ...extra } })

    // -------------------------------------------------------------------------------------------
    // Writes
    // -------------------------------------------------------------------------------------------

    const create = (principal: PrincipalShape, body: CreateProposalInputBody) =>
      Effect.gen(function*() {
        const uid = yield* userOf(principal)
        const entityType = EntityTypes.find((type) => type === body.entity_type)
        if (entityType === undefined) {
          return yield* validation([{
            reason: "UNKNOWN_VALUE",
            detail: `\`/entity_type\` \`${body.entity_type}\` is not an entity type proposals edit.`,
            pointer: "/entity_type",
            params: { allowed: [...EntityTypes] }
          }], "The entity type is unknown.")
        }
        if (Object.keys(body.patch).length === 0) {
          return yield* validation([{
            reason: "TOO_FEW_ITEMS",
            detail: "`/patch` must name at least 1 field.",
            pointer: "/patch",
            params: { min_items: 1 }
          }], "The patch is empty.")
        }
        const decoded = decodeFields(entityType, body.patch, "patch")
        if (decoded.errors.length > 0) return yield* validation(decoded.errors, "`patch` has invalid entries.")
        const id = yield* visible(
          principal,
          entityType,
          yield* fields.locate(entityType, body.entity_id),
          body.entity_id
        )
        const missing = yield* fields.references(entityType, id, decoded.values, "patch")
        if (missing.length > 0) return yield* validation(missing, "`patch` names rows that do not exist.")
        const row = yield* repo.insert({
          entityType,
          entityId: id,
          site: principal.site,
          proposerUid: uid,
          patch: body.patch,
          note: body.note ?? ""
        })
        return yield* proposalAnswer(row, 201, { location: `/v2/proposals/${row.id}` })
      })

    /** A proposal locked for a change by its own site: 404 when there is none, 403 for another site's. */
    const lockedOwn = (principal: PrincipalShape, id: string) =>
      Effect.gen(function*() {
        const row = yield* repo.find(id, true, principal.contentLimit === "nsfw")
        if (row === undefined) return yield* new NotFound({ detail: `No proposal ${id}.` })
        yield* checkTenant(principal, row.site)
        return row
      })

    /** Checks an amendment's body against the proposal's entity type (at `/set/<key>`, `/unset/<n>`). */
    const checkAmendment = (entityType: EntityType, body: AmendProposalInputBody) => {
      const decoded = decodeFields(entityType, body.set ?? {}, "set")
      const errors: Array<FieldError> = [...decoded.errors]
      ;(body.unset ?? []).forEach((key, n) => {
        const pointer = `/unset/${n}`
        const field = fieldOf(key)
        if (field === undefined || field.entityType !== entityType) {
          errors.push({
            reason: "UNKNOWN_VALUE",
            detail: `\`${pointer}\`: \`${key}\` is not a field key of ${entityType}.`,
            pointer,
            params: { allowed: registeredFields.filter((f) => f.entityType === entityType).map((f) => f.key) }
          } as FieldError)
        } else if (!field.writable) {
          errors.push({ reason: "IMMUTABLE", detail: `\`${pointer}\`: \`${key}\` cannot be set.`, pointer })
        } else if (body.set !== undefined && Object.hasOwn(body.set, key)) {
          errors.push({
            reason: "INCONSISTENT_WITH",
            detail: `\`${pointer}\`: \`${key}\` is also in \`/set/${pointerToken(key)}\`.`,
            pointer
          })
        }
      })
      return { values: decoded.values, errors }
    }

    const amend = (
      principal: PrincipalShape,
      rule: RouteRule,
      id: string,
      body: AmendProposalInputBody,
      ifMatch: string | undefined
    ) =>
      Effect.gen(function*() {
        const uid = yield* userOf(principal)
        const row = yield* lockedOwn(principal, id)
        yield* checkIfMatch(rule, ifMatch, proposalEtag(row))
        if (row.state !== "open") return yield* invalidTransition(row.state, "amended")
        if (Object.keys(body.set ?? {}).length === 0 && (body.unset ?? []).length === 0 && !body.note) {
          return yield* validation([{
            reason: "REQUIRED",
            detail: "`/set` is required: an amendment sets or unsets keys, or at least carries a `note`.",
            pointer: "/set"
          }], "The amendment changes nothing and says nothing.")
        }
        const checked = checkAmendment(row.entity_type, body)
        if (checked.errors.length > 0) return yield* validation(checked.errors, "The amendment has invalid entries.")
        const missing = yield* fields.references(row.entity_type, row.entity_id, checked.values, "set")
        if (missing.length > 0) return yield* validation(missing, "`set` names rows that do not exist.")
        const amendment = yield* repo.amend({
          id: row.id,
          amenderUid: uid,
          set: body.set ?? {},
          unset: body.unset ?? [],
          note: body.note ?? ""
        })
        return yield* jsonAnswer(Amendment, toAmendment(amendment), {
          status: 201,
          headers: { etag: proposalEtag({ id: row.id, version: row.version + 1 }) }
        })
      })

    const withdraw = (principal: PrincipalShape, rule: RouteRule, id: string, ifMatch: string | undefined) =>
      Effect.gen(function*() {
        yield* userOf(principal)
        const row = yield* lockedOwn(principal, id)
        yield* checkIfMatch(rule, ifMatch, proposalEtag(row))
        if (row.state !== "open") return yield* invalidTransition(row.state, "withdrawn")
        const closed = yield* repo.close({
          id: row.id,
          state: "withdrawn",
          moderatorUid: null,
          note: null,
          revisionId: null
        })
        return yield* proposalAnswer(closed, 200)
      })

    /** Writes the effective patch of a locked, open proposal to its locked entity; answers the revision. */
    const merge = (row: ProposalRow, moderatorUid: string, entityId: string) =>
      Effect.gen(function*() {
        const entityType = row.entity_type
        const decoded = decodeFields(entityType, row.effective, "patch")
        const missing = decoded.errors.length > 0
          ? decoded.errors
          : yield* fields.references(entityType, entityId, decoded.values, "patch")
        if (missing.length > 0) {
          return yield* new InvalidStateTransition({
            detail: "The effective patch no longer applies: " +
              missing.map((e) => "pointer" in e ? e.pointer : "").join(", ") + ". Amend or decline it.",
            errors: [...missing]
          })
        }
        const names = [...decoded.values.keys()]
        const before = (yield* fields.snapshot(entityType, entityId, names)) ?? {}
        yield* fields.apply(entityType, entityId, decoded.values)
        const after = (yield* fields.snapshot(entityType, entityId, names)) ?? {}
        const diffs: Array<FieldDiff> = names.flatMap((name) => {
          const key = `${entityType}.${name}`
          const from = before[key] ?? null
          const to = after[key] ?? null
          return JSON.stringify(from) === JSON.stringify(to) ? [] : [{ key, from, to }]
        })
        return yield* repo.record({
          entityType,
          entityId,
          proposalId: row.id,
          proposerUid: row.proposer_uid,
          moderatorUid,
          note: row.note,
          diffs
        })
      })

    const decide = (
      principal: PrincipalShape,
      rule: RouteRule,
      id: string,
      body: DecideProposalInputBody,
      ifMatch: string | undefined
    ) =>
      Effect.gen(function*() {
        const uid = yield* userOf(principal)
        // A proposal on an entity the moderator's content limit hides is not there: 404 before If-Match
        // is compared.
        const row = yield* repo.find(id, true, principal.contentLimit === "nsfw")
        if (row === undefined) return yield* new NotFound({ detail: `No proposal ${id}.` })
        // The entity is locked before anything is compared: merges on one entity run one at a time. One
        // the moderator's content limit hides is not there: 404 before If-Match is compared.
        const located = yield* fields.locate(row.entity_type, row.entity_id, true)
        if (gatedAway(principal, located)) return yield* new NotFound({ detail: `No proposal ${id}.` })
        yield* checkIfMatch(rule, ifMatch, proposalEtag(row))
        if (row.state !== "open") return yield* invalidTransition(row.state, `decided \`${body.decision}\``)
        const note = body.note === undefined || body.note === "" ? null : body.note
        if (body.decision === "decline") {
          return yield* proposalAnswer(
            yield* repo.close({ id: row.id, state: "declined", moderatorUid: uid, note, revisionId: null }),
            200
          )
        }
        if (located._tag !== "Live") {
          return yield* new InvalidStateTransition({
            detail: located._tag === "Merged"
              ? `The ${entityObject[row.entity_type]} was merged into ${located.currentId}; decline this proposal.`
              : `The ${entityObject[row.entity_type]} is no longer served; decline this proposal.`
          })
        }
        const revision = yield* merge(row, uid, located.id)
        return yield* proposalAnswer(
          yield* repo.close({ id: row.id, state: "merged", moderatorUid: uid, note, revisionId: revision.id }),
          200
        )
      })

    // -------------------------------------------------------------------------------------------
    // Reads
    // -------------------------------------------------------------------------------------------

    /** A page keyed by a numeric column, with the default page size. */
    const page = <Row, Item, E>(
      options: Omit<Parameters<typeof cursors.keyedPage<Row, Item, E>>[0], "defaultLimit">
    ) => cursors.keyedPage({ ...options, defaultLimit: DEFAULT_LIMIT })

    const list = (principal: PrincipalShape, params: ListProposalsParams) => {
      const filters = {
        "": "proposals",
        site: principal.site,
        state: params.state,
        entity_type: params.entity_type,
        entity_id: params.entity_id
      }
      return page({
        sort: "proposals",
        filters,
        params,
        key: (row: ProposalRow) => row.id,
        item: toProposal,
        fetch: (beforeId, limit) => {
          // An id beyond bigint names no entity: no proposal is on it.
          const entityId = params.entity_id === undefined ? undefined : bigintId(params.entity_id)
          return params.entity_id !== undefined && entityId === undefined
            ? Effect.succeed([])
            : repo.bySite({
              site: principal.site,
              nsfw: principal.contentLimit === "nsfw",
              state: params.state,
              entityType: params.entity_type,
              entityId,
              beforeId,
              limit
            })
        }
      })
    }

    const queue = (principal: PrincipalShape, params: ProposalQueueParams) => {
      const state = params.state ?? "open"
      return page({
        sort: "proposal_queue",
        filters: { "": "proposal_queue", state, entity_type: params.entity_type, site: params.site },
        params,
        key: (row: ProposalRow) => row.id,
        item: toProposal,
        fetch: (afterId, limit) =>
          repo.queue({
            state,
            nsfw: principal.contentLimit === "nsfw",
            entityType: params.entity_type,
            site: params.site,
            afterId,
            limit
          })
      })
    }

    /** One proposal with its ETag: the site's own, or any for a moderator route. */
    const get = (principal: PrincipalShape, id: string, face: "site" | "moderator") =>
      Effect.gen(function*() {
        const row = yield* repo.find(id, false, principal.contentLimit === "nsfw")
        if (row === undefined) return yield* new NotFound({ detail: `No proposal ${id}.` })
        if (face === "site") yield* checkTenant(principal, row.site)
        return { record: toProposal(row), etag: proposalEtag(row) }
      })

    const amendments = (principal: PrincipalShape, id: string, params: PagingParams) =>
      Effect.gen(function*() {
        const row = yield* repo.find(id, false, principal.contentLimit === "nsfw")
        if (row === undefined) return yield* new NotFound({ detail: `No proposal ${id}.` })
        yield* checkTenant(principal, row.site)
        return yield* page({
          sort: "amendments",
          filters: { "": "amendments", proposal: row.id },
          params,
          key: (a: AmendmentRow) => String(a.seq),
          item: toAmendment,
          fetch: (afterSeq, limit) =>
            repo.amendmentsOf({ id: row.id, afterSeq: afterSeq === undefined ? 0 : Number(afterSeq), limit })
        })
      })

    /** An entity's revisions (through its surviving id), newest first. */
    const revisions = (principal: PrincipalShape, collection: RevisionCollection, id: string, params: PagingParams) =>
      Effect.gen(function*() {
        const entityType = collectionTypes[collection]
        const entityId = yield* visible(principal, entityType, yield* fields.locate(entityType, id), id)
        return yield* page({
          sort: "revisions",
          filters: { "": "revisions", entity_type: entityType, id: entityId },
          params,
          key: (r: RevisionRow) => r.id,
          item: toRevision,
          fetch: (beforeId, limit) =>
            repo.revisionsOf({ entityType, object: entityObject[entityType], entityId, beforeId, limit })
        })
      })

    const revision = (principal: PrincipalShape, id: string) =>
      Effect.gen(function*() {
        const key = bigintId(id)
        const row = key === undefined ? undefined : yield* repo.revision(key)
        const hidden = row !== undefined && principal.contentLimit !== "nsfw" &&
          (yield* fields.nsfw(row.entity_type, row.entity_id))
        if (row === undefined || hidden) return yield* new NotFound({ detail: `No revision ${id}.` })
        return toRevision(row)
      })

    /** The current values of every field key of an entity (`GET /v2/moderation/snapshots/{object}/{id}`). */
    const snapshot = (principal: PrincipalShape, object: TargetObject, id: string) =>
      Effect.gen(function*() {
        const entityType = entityTypeOf(object)
        const located = entityType === undefined ? undefined : yield* fields.locate(entityType, id)
        if (entityType === undefined || located?._tag !== "Live" || gatedAway(principal, located)) {
          return yield* new NotFound({ detail: `No ${object} ${id}.` })
        }
        const values = yield* fields.snapshot(entityType, located.id)
        if (values === undefined) return yield* new NotFound({ detail: `No ${object} ${id}.` })
        return values
      })

    return {
      create,
      amend,
      withdraw,
      decide,
      list,
      queue,
      get,
      amendments,
      revisions,
      revision,
      snapshot
    } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make).pipe(
    Layer.provide([ProposalsRepo.layer, EntityFields.layer, Cursors.layer])
  )
}
