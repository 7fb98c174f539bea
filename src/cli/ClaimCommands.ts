/**
 * Operator commands for claims (src/catalog/claims/Claims.ts): the moderation queue
 * (`claims list [--state <s>] [--site <s>]`) and a decision (`claim decide <work_id> --decision
 * approve|decline|ban|unban [--note <text>]`). The operator acts as user 0 with the top management
 * role, so a decision needs no `If-Match` and its event's `actor_uid` is `"0"`; it is one
 * transaction, and running servers hear of it through the notification the claims tables send.
 * Decisions from the CLI count against no site's quota.
 */
import { Effect, Option, Schema } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { SqlClient } from "effect/sql"
import { claimRules } from "../../schema/Api/ClaimsApi.js"
import type { PrincipalShape } from "../../schema/Api/Security.js"
import type { RouteRule } from "../../schema/Api/Writes.js"
import {
  ClaimDecision,
  ClaimDecisionRecord,
  type ClaimRecord,
  ClaimRecord as ClaimRecordSchema,
  ClaimState,
  Note,
  Site
} from "../../schema/Catalog/Claim.js"
import { Claims } from "../catalog/claims/Claims.js"
import { bigintId } from "../catalog/shared/Lanes.js"
import { emit, fail } from "./Output.js"

const json = Flag.Boolean("json").pipe(Flag.withDescription("Print one JSON object on stdout"), Flag.withDefault(false))

/** The operator: user 0 with every role and scope a decision needs, seeing every work. */
const operator: PrincipalShape = {
  credential: "api_key",
  credentialId: "cli",
  owner: "cli",
  site: "",
  scopes: new Set(["moderation"]),
  contentLimit: "nsfw",
  user: Option.some({ id: 0, sub: "", roles: ["ren"], siteRoles: [] })
}

/** Operators decide without `If-Match`; one sent is still honoured. */
const operatorRule: RouteRule = { ...claimRules.decideClaim, ifMatch: "optional" }

/** Queue pages the CLI reads at a time (the API's largest). */
const PAGE = 100

/** A catalog work id in its canonical form: digits that fit a PostgreSQL bigint. */
const workIdOf = (id: string) => /^[0-9]{1,20}$/.test(id) ? bigintId(id) : undefined

const encodeRecord = Schema.encodeEffect(ClaimRecordSchema)

const recordLine = (record: ClaimRecord) =>
  [
    record.id.padStart(6),
    record.state.padEnd(8),
    (record.site === "" ? "-" : record.site).padEnd(12),
    (record.product_work_id ?? "-").padEnd(10),
    record.display_name
  ].join("  ")

const claimsList = Command.make("list", {
  state: Flag.Literals("state", ClaimState.literals).pipe(
    Flag.withDefault("pending"),
    Flag.withDescription("Claims in this state (default: pending)")
  ),
  site: Flag.String("site").pipe(Flag.optional, Flag.withDescription("Only this site's claims")),
  json
}, (args) =>
  Effect.gen(function*() {
    const site = Option.getOrUndefined(args.site)
    if (site !== undefined && !Schema.is(Site)(site)) {
      return yield* fail(`not a site name: ${site} (lower-case letters, digits and _, starting with a letter)`)
    }
    const claims = yield* Claims
    const items: Array<ClaimRecord> = []
    let cursor: string | undefined
    do {
      const page = yield* claims.queue(operator, { state: args.state, site, limit: PAGE, cursor })
      items.push(...page.items)
      cursor = page.next_cursor
    } while (cursor !== undefined)
    const encoded = yield* Effect.forEach(items, (item) => encodeRecord(item))
    yield* emit(
      args.json,
      { items: encoded },
      items.length === 0
        ? `No ${args.state} claims${site === undefined ? "" : ` of ${site}`}.`
        : [`${"work".padStart(6)}  ${"state".padEnd(8)}  ${"site".padEnd(12)}  ${"site id".padEnd(10)}  name`]
          .concat(items.map(recordLine)).join("\n")
    )
  }).pipe(
    Effect.catchTag("InvalidCursor", (e) => fail(e.detail)),
    Effect.catchTag("SchemaError", (e) => Effect.die(e)),
    Effect.provide(Claims.layer)
  )).pipe(
    Command.withDescription("List claims in a state (default pending), longest waiting first")
  )

const decisionVerb: Record<ClaimDecision, string> = {
  approve: "Approved",
  decline: "Declined",
  ban: "Banned",
  unban: "Unbanned"
}

const claimDecide = Command.make("decide", {
  workId: Argument.String("work_id").pipe(Argument.withDescription("The claimed work's catalog id")),
  decision: Flag.Literals("decision", ClaimDecision.literals).pipe(
    Flag.withDescription("approve or decline a pending claim; ban any claim; unban a banned one")
  ),
  note: Flag.String("note").pipe(
    Flag.optional,
    Flag.withDescription("The reason the site reads (required to decline; at most 2000 characters)")
  ),
  json
}, (args) =>
  Effect.gen(function*() {
    const workId = workIdOf(args.workId)
    if (workId === undefined) return yield* fail(`not a work id: ${args.workId}`)
    const note = Option.getOrUndefined(args.note)
    if (note !== undefined && !Schema.is(Note)(note)) return yield* fail("the note is longer than 2000 characters")
    const claims = yield* Claims
    const sql = yield* SqlClient.SqlClient
    const answer = yield* claims.decide(
      operator,
      operatorRule,
      workId,
      { decision: args.decision, ...(note === undefined ? {} : { note }) },
      undefined
    ).pipe(
      sql.withTransaction,
      Effect.catchTags({
        NotFound: () => fail(`no claim on work ${workId}`),
        InvalidStateTransition: (e) => fail(`${e.detail} Nothing changed.`),
        AlreadyExists: (e) => fail(`${e.detail} Nothing changed.`),
        ValidationFailed: (e) => fail(e.errors.length === 0 ? e.detail : e.errors.map((x) => x.detail).join(" ")),
        UserIdentityRequired: (e) => fail(e.detail),
        PreconditionFailed: (e) => fail(e.detail),
        PreconditionRequired: (e) => fail(e.detail),
        SqlError: (e) => Effect.die(e)
      })
    )
    const record = yield* Schema.decodeUnknownEffect(Schema.fromJsonString(ClaimDecisionRecord))(answer.body).pipe(
      Effect.orDie
    )
    yield* emit(
      args.json,
      JSON.parse(answer.body),
      `${decisionVerb[record.decision]} the claim on work ${workId}: ${record.from_state ?? "none"} -> ` +
        `${record.to_state} (event ${record.id}).`
    )
  }).pipe(Effect.provide(Claims.layer))).pipe(
    Command.withDescription("Decide a claim as the operator (no If-Match needed; the event's actor_uid is 0)")
  )

export const claimsCommand = Command.make("claims").pipe(
  Command.withDescription("The claims moderation queue"),
  Command.withSubcommands([claimsList])
)

export const claimCommand = Command.make("claim").pipe(
  Command.withDescription("Decide claims"),
  Command.withSubcommands([claimDecide])
)
