/**
 * Claims (docs/writing.md, "Claims"): creation and minting, the state machine, the bearer's faces,
 * the moderation queue, the event log and snapshots. Every write returns a `WriteAnswer` for the
 * write runner (src/catalog/writes/Writes.ts), which owns the transaction; each state change is one
 * claim event in it.
 *
 * The state machine. A claim on an existing work starts `pending` (a `creator` publishes it: `live`);
 * a minted work's claim starts `draft`. Submission: `draft` -> `pending` (creator: `live`), and
 * `declined` -> `pending` whoever submits (a decline is a moderator's: only a moderator lifts it).
 * Release: any claimed state but `hidden` -> `none`. Decisions: approve `pending` -> `live`, decline
 * `pending` -> `declined` (note required), ban any claimed state -> `hidden` remembering it, unban
 * `hidden` -> the remembered state. Anything else is 409 `INVALID_STATE_TRANSITION`.
 *
 * Reads see what docs/writing.md, "Who sees what" says, by one rule (`seesEvent` in ClaimsRepo.ts):
 * the faces, the queue and the event log all filter by it.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { ListClaimsParams, QueueParams } from "../../../schema/Api/ClaimsApi.js"
import type { PrincipalShape } from "../../../schema/Api/Security.js"
import { holdsRole, type RouteRule } from "../../../schema/Api/Writes.js"
import {
  ClaimDecisionRecord,
  type ClaimEvent,
  type ClaimRecord,
  ClaimRecord as ClaimRecordSchema,
  type ClaimState,
  type CreateClaimInputBody,
  type DecideClaimInputBody
} from "../../../schema/Catalog/Claim.js"
import { DEFAULT_LIMIT } from "../../../schema/Catalog/Query.js"
import {
  AlreadyExists,
  InvalidCursor,
  InvalidStateTransition,
  NotFound,
  UserIdentityRequired,
  ValidationFailed
} from "../../../schema/Problem.js"
import { UserStanding } from "../../platform/IdentityPort.js"
import { Cursors, filterDigest } from "../pagination/Cursor.js"
import { checkIfMatch, checkTenant, jsonAnswer } from "../writes/Writes.js"
import { type Appended, ClaimsRepo, type LockedClaim, type RecordRow, type Viewer } from "./ClaimsRepo.js"
import { decodeWorkFields, type MintFields } from "./WorkFields.js"

/**
 * The claim's strong ETag: it changes with every event on the work the reader sees. `workId` is the
 * canonical id (the database's), so `/v2/claims/002` and `/v2/claims/2` carry the same one.
 */
export const claimEtag = (workId: string, lastEventId: string | null) => `"claim-${workId}-${lastEventId ?? "0"}"`

const toRecord = (row: RecordRow, face: "bearer" | "queue"): ClaimRecord => ({
  object: "claim",
  id: row.work_id,
  state: row.state,
  display_name: row.display_name,
  site: row.site,
  product_work_id: row.product_work_id,
  ...(face === "bearer"
    ? {
      ...(row.last_event_id === null ? {} : {
        last_event: {
          object: "claim_event" as const,
          id: row.last_event_id,
          from_state: row.le_from,
          to_state: row.le_to!,
          reason: row.le_reason,
          actor_uid: row.le_actor!,
          created_at: row.le_created_at!
        }
      }),
      acted_count: row.acted_count ?? 0,
      first_acted_at: row.first_acted_at
    }
    : {})
})

const invalidTransition = (from: ClaimState, action: string) =>
  new InvalidStateTransition({ detail: `A claim in state \`${from}\` cannot be ${action}.` })

const userOf = (principal: PrincipalShape) =>
  Option.match(principal.user, {
    onNone: () => Effect.fail(new UserIdentityRequired({ detail: "This operation acts for a person." })),
    onSome: (user) => Effect.succeed(user)
  })

const isCreator = (principal: PrincipalShape) => Option.exists(principal.user, (user) => user.roles.includes("creator"))

/** The caller's site owns the claim; a caller without a site owns nothing. */
const owns = (principal: PrincipalShape, site: string) => principal.site !== "" && site === principal.site

/** The caller's content limit hides the work (docs/api-contract.md, the content limit). */
const gatedAway = (principal: PrincipalShape, nsfw: boolean) => nsfw && principal.contentLimit !== "nsfw"

/** Who reads, for the visibility rule; `moderator` from the user's current roles. */
const viewerOf = (principal: PrincipalShape, moderator: boolean): Viewer => ({
  site: principal.site,
  moderator,
  nsfw: principal.contentLimit === "nsfw"
})

/** A principal whose user's roles the middleware read for this request (every ruled route). */
const isModerator = (principal: PrincipalShape) =>
  Option.exists(principal.user, (user) => holdsRole(user.roles, "moderator"))

const validation = (errors: ValidationFailed["errors"], detail: string) => new ValidationFailed({ detail, errors })

export class Claims extends Context.Service<Claims>()("catalog/Claims", {
  make: Effect.gen(function*() {
    const repo = yield* ClaimsRepo
    const cursors = yield* Cursors
    const standing = yield* UserStanding

    /**
     * A moderator on a route without a rule (the event log, which a key without a user reads too):
     * the user's roles as they are now, not as the credential carried them; a banned user is none.
     */
    const moderatorNow = (principal: PrincipalShape) =>
      Option.match(principal.user, {
        onNone: () => Effect.succeed(false),
        onSome: (user) =>
          Effect.map(
            standing.of(user.id),
            Option.match({
              onNone: () => false,
              onSome: (now) => !now.banned && holdsRole(now.roles, "moderator")
            })
          )
      })

    /**
     * The bearer's face of a claim its write just changed, built from what the write knows (no read
     * inside the event lock): the new event is the newest, and the bearer's count is one more.
     */
    const answerFace = (
      face: {
        readonly workId: string
        readonly displayName: string
        readonly state: ClaimState
        readonly site: string
        readonly siteWorkId: string | null
        readonly event: { readonly from: ClaimState | null; readonly actorUid: string; readonly reason: string | null }
        readonly appended: Appended
        readonly before: { readonly acted_count: number; readonly first_acted_at: string | null }
      },
      status: number,
      extra: Record<string, string> = {}
    ) =>
      jsonAnswer(ClaimRecordSchema, {
        object: "claim",
        id: face.workId,
        state: face.state,
        display_name: face.displayName,
        site: face.state === "none" ? "" : face.site,
        product_work_id: face.state === "none" ? null : face.siteWorkId,
        last_event: {
          object: "claim_event",
          id: face.appended.id,
          from_state: face.event.from,
          to_state: face.state,
          reason: face.event.reason,
          actor_uid: face.event.actorUid,
          created_at: face.appended.created_at
        },
        acted_count: face.before.acted_count + 1,
        first_acted_at: face.before.first_acted_at ?? face.appended.created_at
      }, { status, headers: { etag: claimEtag(face.workId, face.appended.id), ...extra } })

    // -------------------------------------------------------------------------------------------
    // Creation
    // -------------------------------------------------------------------------------------------

    /** What a creation asks for: an existing work, or a work to mint. Checked before any statement. */
    const planCreation = (body: CreateClaimInputBody) =>
      Effect.gen(function*() {
        if (body.work_id !== undefined && body.field_values !== undefined) {
          return yield* validation([{
            reason: "INCONSISTENT_WITH",
            detail: "`/field_values` mints a work; it cannot be sent with `work_id`.",
            pointer: "/field_values"
          }], "`work_id` and `field_values` contradict each other.")
        }
        const fields = body.field_values === undefined ? {} : yield* decodeWorkFields(body.field_values)
        const displayName = body.display_name ?? (fields["catalog.work.display_name"] as string | undefined)
        const mint: MintFields | undefined = displayName === undefined ? undefined : {
          display_name: displayName,
          latin: (fields["catalog.work.latin"] as string | null | undefined) ?? null,
          olang: (fields["catalog.work.olang"] as string | null | undefined) ?? null,
          length_minutes: (fields["catalog.work.length_minutes"] as number | null | undefined) ?? null,
          development_status: (fields["catalog.work.development_status"] as MintFields["development_status"]) ??
            "finished"
        }
        if (
          body.work_id === undefined && body.refs === undefined && body.field_values === undefined &&
          body.site_work_id === undefined
        ) {
          return yield* validation([{
            reason: "REQUIRED",
            detail: "Give `work_id`, `refs`, `site_work_id` with `display_name`, or `field_values`.",
            pointer: "/work_id"
          }], "The body names no work to claim or mint.")
        }
        return { mint, refs: body.refs ?? [] }
      })

    const create = (principal: PrincipalShape, body: CreateClaimInputBody) =>
      Effect.gen(function*() {
        const user = yield* userOf(principal)
        const plan = yield* planCreation(body)
        const requireMint = (pointer: string) =>
          plan.mint === undefined
            ? Effect.fail(validation([{
              reason: "REQUIRED",
              detail: "`display_name` is required to mint a work.",
              pointer: "/display_name"
            }], `Nothing matched ${pointer}, so a work is minted, and minting needs a name.`))
            : Effect.succeed(plan.mint)

        let workId: string
        let displayName: string
        let minted = false
        if (body.work_id !== undefined) {
          const found = yield* repo.liveWork(body.work_id, principal.contentLimit === "nsfw")
          if (found === undefined) {
            return yield* validation([{
              reason: "UNKNOWN_REFERENCE",
              detail: "`/work_id` names no work in the catalog.",
              pointer: "/work_id"
            }], "The work does not exist or is not served.")
          }
          workId = found.id
          displayName = found.display_name
        } else {
          const matches = plan.refs.length === 0
            ? []
            : yield* repo.worksByRefs(plan.refs, principal.contentLimit === "nsfw")
          if (matches.length > 1) {
            return yield* validation([{
              reason: "INCONSISTENT_WITH",
              detail: "`/refs` name more than one work.",
              pointer: "/refs"
            }], "The refs match several works; claim one by `work_id`.")
          }
          if (matches.length === 1 && body.field_values === undefined) {
            workId = matches[0]!.id
            displayName = matches[0]!.display_name
          } else {
            const fields = yield* requireMint(plan.refs.length > 0 ? "`refs`" : "no `work_id`")
            workId = yield* repo.mintWork(fields, matches.length === 0 ? plan.refs : [])
            displayName = fields.display_name
            minted = true
          }
        }

        // The claim row before the event lock, as every other change takes them (no deadlock with a
        // decision on the same work); a held claim is refused without waiting for the event lock.
        const actorUid = String(user.id)
        const existing = minted ? undefined : yield* repo.lock(workId, actorUid)
        if (existing !== undefined && existing.state !== "none") {
          return yield* new AlreadyExists({ detail: `Work ${workId} already holds a claim.` })
        }
        const state: ClaimState = minted ? "draft" : isCreator(principal) ? "live" : "pending"
        const event = { workId, from: null, to: state, decision: null, reason: null, actorUid, site: principal.site }
        const siteWorkId = body.site_work_id ?? null
        const appended = yield* repo.appendCreation({ state, siteWorkId, minted }, event)
        if (appended === undefined) {
          return yield* new AlreadyExists({ detail: `Work ${workId} already holds a claim.` })
        }
        return yield* answerFace(
          {
            workId,
            displayName,
            state,
            site: principal.site,
            siteWorkId,
            event,
            appended,
            before: existing ?? { acted_count: 0, first_acted_at: null }
          },
          201,
          { location: `/v2/claims/${workId}` }
        )
      })

    // -------------------------------------------------------------------------------------------
    // Changes of state
    // -------------------------------------------------------------------------------------------

    /**
     * Locks the work's claim; 404 when the work was never claimed, or is not served and not the
     * caller's site's claim, or is gated away by the caller's content limit.
     */
    const locked = (workId: string, principal: PrincipalShape, actorUid: string) =>
      Effect.gen(function*() {
        const claim = yield* repo.lock(workId, actorUid)
        if (
          claim === undefined || (!claim.work_live && !owns(principal, claim.site)) ||
          gatedAway(principal, claim.nsfw)
        ) {
          return yield* new NotFound({ detail: `Work ${workId} has no claim.` })
        }
        return claim
      })

    /**
     * Moves a locked claim to `to`, as one event; answers the event. A minted work going live takes
     * its claim's refs first: 409 `ALREADY_EXISTS` when another served work holds one (the draft is a
     * duplicate of that work). A release gives the refs up.
     */
    const move = (
      claim: LockedClaim,
      to: ClaimState,
      event: {
        readonly actorUid: string
        readonly decision: DecideClaimInputBody["decision"] | null
        readonly reason: string | null
      }
    ) =>
      Effect.gen(function*() {
        const released = to === "none"
        if (claim.minted && to === "live") {
          const held = yield* repo.attachRefs(claim.work_id)
          if (held !== undefined) {
            return yield* new AlreadyExists({
              detail: `ref ${held.source}:${held.external_id} belongs to work ${held.holder}; release this draft or ` +
                "claim that work."
            })
          }
        }
        if (released) yield* repo.releaseRefs(claim.work_id)
        if (claim.minted && !released) yield* repo.setServed(claim.work_id, to === "live")
        return yield* repo.appendChange({ hiddenFrom: to === "hidden" ? claim.state : null, released }, {
          workId: claim.work_id,
          from: claim.state,
          to,
          decision: event.decision,
          reason: event.reason,
          actorUid: event.actorUid,
          site: claim.site
        })
      })

    /**
     * A change the claiming site makes to its own claim: locked, a claim of the caller's site (403),
     * current (`If-Match`, 412), in a state `next` accepts (409); one event; the bearer's new face.
     */
    const siteChange = (
      action: string,
      next: (state: ClaimState) => ClaimState | undefined,
      principal: PrincipalShape,
      rule: RouteRule,
      workId: string,
      ifMatch: string | undefined
    ) =>
      Effect.gen(function*() {
        const user = yield* userOf(principal)
        const actorUid = String(user.id)
        const claim = yield* locked(workId, principal, actorUid)
        if (claim.state === "none") return yield* invalidTransition("none", action)
        yield* checkTenant(principal, claim.site)
        yield* checkIfMatch(rule, ifMatch, claimEtag(claim.work_id, claim.last_event_id))
        const to = next(claim.state)
        if (to === undefined) return yield* invalidTransition(claim.state, action)
        const appended = yield* move(claim, to, { actorUid, decision: null, reason: null })
        return yield* answerFace({
          workId: claim.work_id,
          displayName: claim.display_name,
          state: to,
          site: claim.site,
          siteWorkId: claim.site_work_id,
          event: { from: claim.state, actorUid, reason: null },
          appended,
          before: claim
        }, 200)
      })

    /** `draft` -> `pending` (a creator publishes: `live`); `declined` -> `pending` for everyone. */
    const submit = (principal: PrincipalShape, rule: RouteRule, workId: string, ifMatch: string | undefined) =>
      siteChange(
        "submitted",
        (state) =>
          state === "draft"
            ? (isCreator(principal) ? "live" : "pending")
            : state === "declined"
            ? "pending"
            : undefined,
        principal,
        rule,
        workId,
        ifMatch
      )

    /** Any claimed state but `hidden` (a ban cannot be escaped by releasing) -> `none`. */
    const release = (principal: PrincipalShape, rule: RouteRule, workId: string, ifMatch: string | undefined) =>
      siteChange("released", (state) => state === "hidden" ? undefined : "none", principal, rule, workId, ifMatch).pipe(
        // Only a move to `live` takes refs, so a release never meets a held one.
        Effect.catchTag("AlreadyExists", Effect.die)
      )

    const decide = (
      principal: PrincipalShape,
      rule: RouteRule,
      workId: string,
      body: DecideClaimInputBody,
      ifMatch: string | undefined
    ) =>
      Effect.gen(function*() {
        if (body.decision === "decline" && (body.note === undefined || body.note.trim() === "")) {
          return yield* validation([{
            reason: "REQUIRED",
            detail: "`/note` is required to decline: it is the reason the site reads.",
            pointer: "/note"
          }], "A decline needs a note.")
        }
        const user = yield* userOf(principal)
        const claim = yield* repo.lock(workId, String(user.id))
        // A work the moderator's content limit hides is not there: 404 before If-Match is compared,
        // so neither `*` decides it nor a 412 tells its ETag.
        if (claim === undefined || gatedAway(principal, claim.nsfw)) {
          return yield* new NotFound({ detail: `Work ${workId} has no claim.` })
        }
        yield* checkIfMatch(rule, ifMatch, claimEtag(claim.work_id, claim.last_event_id))
        const from = claim.state
        const to: ClaimState | undefined = body.decision === "approve"
          ? (from === "pending" ? "live" : undefined)
          : body.decision === "decline"
          ? (from === "pending" ? "declined" : undefined)
          : body.decision === "ban"
          ? (from !== "none" && from !== "hidden" ? "hidden" : undefined)
          : (from === "hidden" ? claim.hidden_from ?? undefined : undefined)
        if (to === undefined) return yield* invalidTransition(from, `decided \`${body.decision}\``)
        const appended = yield* move(claim, to, {
          actorUid: String(user.id),
          decision: body.decision,
          reason: body.note === undefined || body.note === "" ? null : body.note
        })
        return yield* jsonAnswer(ClaimDecisionRecord, {
          object: "decision",
          id: appended.id,
          decision: body.decision,
          note: body.note ?? "",
          from_state: from,
          to_state: to
        }, { status: 201 })
      })

    // -------------------------------------------------------------------------------------------
    // Reads
    // -------------------------------------------------------------------------------------------

    /**
     * One claim as the bearer sees it, with the ETag of that face; 404 for a work the caller cannot
     * see (docs/writing.md, "Who sees what").
     */
    const get = (principal: PrincipalShape, workId: string) =>
      Effect.gen(function*() {
        const user = yield* userOf(principal)
        const row = yield* repo.record(workId, viewerOf(principal, isModerator(principal)), {
          uid: String(user.id),
          site: undefined
        })
        if (row === undefined) return yield* new NotFound({ detail: `No work ${workId}.` })
        return { record: toRecord(row, "bearer"), etag: claimEtag(row.work_id, row.last_event_id) }
      })

    /**
     * A page of claim records keyed by one id column (`key`): the cursor names the last row's key
     * and is bound to `filters`; `fetch` gets the key to start after and `limit + 1`.
     */
    const recordsPage = <E>(options: {
      readonly sort: string
      readonly filters: Record<string, unknown>
      readonly params: { readonly limit?: number | undefined; readonly cursor?: string | undefined }
      readonly key: (row: RecordRow) => string
      readonly face: "bearer" | "queue"
      readonly fetch: (after: string | undefined, rows: number) => Effect.Effect<ReadonlyArray<RecordRow>, E>
    }) =>
      cursors.keyedPage({
        ...options,
        defaultLimit: DEFAULT_LIMIT,
        item: (row: RecordRow) => toRecord(row, options.face)
      })

    const list = (
      principal: PrincipalShape,
      params: ListClaimsParams
    ) =>
      Effect.flatMap(userOf(principal), (user) =>
        recordsPage({
          sort: "claims",
          filters: { "": "claims", uid: user.id, site: params.site, state: params.state },
          params,
          key: (row) => row.work_id,
          face: "bearer",
          fetch: (afterId, limit) =>
            repo.actedOn({
              viewer: viewerOf(principal, isModerator(principal)),
              bearer: { uid: String(user.id), site: params.site },
              state: params.state,
              afterId,
              limit
            })
        }))

    const queue = (
      principal: PrincipalShape,
      params: QueueParams
    ) => {
      const state = params.state ?? "pending"
      return recordsPage({
        sort: "queue",
        filters: { "": "queue", site: params.site, state },
        params,
        key: (row) => row.last_event_id ?? "0",
        face: "queue",
        fetch: (afterEventId, limit) =>
          repo.queue({
            viewer: viewerOf(principal, isModerator(principal)),
            state,
            site: params.site,
            afterEventId,
            limit
          })
      })
    }

    /**
     * A page of the event log as the caller sees it (docs/writing.md, "Who sees what"). Like the change
     * feed, a page with items always carries a cursor (the log grows), and the page past the current
     * end carries none.
     */
    const events = (
      principal: PrincipalShape,
      params: {
        readonly after?: string | undefined
        readonly work_id?: string | undefined
        readonly limit?: number | undefined
        readonly cursor?: string | undefined
      }
    ) =>
      Effect.gen(function*() {
        const filters = { "": "claim_events", work_id: params.work_id }
        // A cursor is valid with the query it was issued for (docs/api-contract.md, "Cursors and
        // pages"): it carries the `after` of the listing's first request (its position's key), which
        // a later request may repeat or leave out; another `after` is INVALID_CURSOR.
        const position = params.cursor === undefined
          ? undefined
          : yield* cursors.decode(params.cursor, { sort: "claim_events", filters: filterDigest(filters) })
        if (position !== undefined && !/^[0-9]{1,20}$/.test(position.id)) {
          return yield* new InvalidCursor({ detail: "The cursor does not hold a position." })
        }
        const canonical = (after: string | undefined) => after === undefined ? null : BigInt(after).toString()
        const started = position === undefined ? canonical(params.after) : position.key[0] ?? null
        if (params.after !== undefined && canonical(params.after) !== started) {
          return yield* new InvalidCursor({
            detail: "The cursor was issued for another `after`; repeat the first request's `after` or leave it out.",
            errors: [{
              reason: "INCONSISTENT_WITH",
              detail: "`cursor` was issued with another `after`.",
              parameter: "cursor"
            }]
          })
        }
        const limit = params.limit ?? DEFAULT_LIMIT
        const rows = yield* repo.events({
          viewer: viewerOf(principal, yield* moderatorNow(principal)),
          after: position?.id ?? params.after,
          workId: params.work_id,
          limit
        })
        const last = rows[rows.length - 1]
        const items: Array<ClaimEvent> = rows.map((row) => ({ object: "claim_event", ...row }))
        return {
          object: "list" as const,
          items,
          ...(last === undefined
            ? {}
            : {
              next_cursor: cursors.encode({ sort: "claim_events", key: [started], id: last.id }, filterDigest(filters))
            })
        }
      })

    return { create, submit, release, decide, get, list, queue, events } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make).pipe(
    Layer.provide([ClaimsRepo.layer, Cursors.layer])
  )
}
