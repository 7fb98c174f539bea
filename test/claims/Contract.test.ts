/**
 * One contract on every catalog route, through real HTTP (docs/api-contract.md): bodies are
 * `application/json` only ("Errors: catalog problem documents"), a body member the schema does not
 * name is refused at its pointer, unknown query parameters are ignored on every route ("Records and
 * lists"), and a cursor is valid with the query it was issued for ("Cursors and pages").
 *
 * Bodies go through `node:http`, which sends exactly the headers given (fetch adds a `Content-Type`
 * of its own to a string body).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as Http from "node:http"
import { ClaimRecord, ListClaimEvent, ListClaimRecord } from "../../schema/Catalog/Claim.js"
import { FieldError, type ProblemCode, ProblemCodes } from "../../schema/Problem.js"
import { mintKeys } from "../../src/catalog/claims/WorkFields.js"
import { ClaimsFixture, ClaimsFixtureLive, type ClaimsFixtureShape } from "../support/Claims.js"
import { serverLayerOptions } from "../support/TestServers.js"

interface Reply {
  readonly status: number
  readonly body: any
  readonly contentType: string | undefined
}

/** A request with exactly `headers` (and `Content-Length` when there is a body). */
const send = (url: string, method: string, headers: Record<string, string>, body?: string) =>
  Effect.promise(() =>
    new Promise<Reply>((resolve, reject) => {
      const all = body === undefined ? headers : { ...headers, "content-length": String(Buffer.byteLength(body)) }
      const req = Http.request(url, { method, headers: all }, (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (chunk: Buffer) => chunks.push(chunk))
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8")
          resolve({
            status: res.statusCode!,
            body: text === "" ? null : JSON.parse(text),
            contentType: res.headers["content-type"]
          })
        })
      })
      req.on("error", reject)
      req.end(body)
    })
  )

type Called = Effect.Success<ReturnType<ClaimsFixtureShape["call"]>>

const expectProblem = (reply: Reply | Called, code: ProblemCode) => {
  const res: Reply = "contentType" in reply
    ? reply
    : { status: reply.status, body: reply.body, contentType: reply.headers.get("content-type") ?? undefined }
  expect(res.status, JSON.stringify(res.body)).toBe(ProblemCodes[code].status)
  expect(res.contentType).toBe("application/problem+json")
  expect(res.body.code).toBe(code)
  for (const error of res.body.errors) expect(Schema.is(FieldError)(error), JSON.stringify(error)).toBe(true)
  return res.body
}

// Tests run in order against one fixture: each takes works nobody used before.
let used = 0
const freshWork = (f: ClaimsFixtureShape) => {
  const work = f.works[used++]
  if (work === undefined) throw new Error("the fixture ran out of works")
  return work
}

const stateOf = (f: ClaimsFixtureShape, work: string) =>
  Effect.map(f.call("GET", `/v2/claims/${work}`, { key: f.siteUser.key }), (res) => {
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    return Schema.decodeUnknownSync(ClaimRecord)(res.body).state
  })

const createClaim = (f: ClaimsFixtureShape, headers: Record<string, string>, body: string) =>
  send(`${f.base}/v2/claims`, "POST", { authorization: `Bearer ${f.siteUser.key}`, ...headers }, body)

describe("one contract on every route (docs/api-contract.md)", () => {
  it.layer(ClaimsFixtureLive({ works: 20 }), serverLayerOptions())((it) => {
    it.effect("a body not sent as application/json is 400 INVALID_PARAMETER on Content-Type, and nothing is written", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const work = freshWork(f)
        const json = JSON.stringify({ work_id: work })
        const cases: ReadonlyArray<readonly [string, Record<string, string>, string, string]> = [
          ["a form body", { "content-type": "application/x-www-form-urlencoded" }, `work_id=${work}`, "UNKNOWN_VALUE"],
          ["no Content-Type", {}, json, "REQUIRED"],
          ["text/plain", { "content-type": "text/plain" }, json, "UNKNOWN_VALUE"],
          ["charset=latin1", { "content-type": "application/json; charset=latin1" }, json, "UNKNOWN_VALUE"],
          ["another parameter", { "content-type": "application/json; version=2" }, json, "UNKNOWN_VALUE"],
          ["not a media type", { "content-type": "json" }, json, "INVALID_FORMAT"]
        ]
        for (const [label, headers, body, reason] of cases) {
          const problem = expectProblem(yield* createClaim(f, headers, body), "INVALID_PARAMETER")
          expect(problem.errors, label).toEqual([
            expect.objectContaining({
              reason,
              header: "Content-Type",
              ...(reason === "UNKNOWN_VALUE" ? { params: { allowed: ["application/json"] } } : {})
            })
          ])
        }
        expect(yield* stateOf(f, work)).toBe("none")
        // The credential is still checked first.
        const anonymous = yield* send(`${f.base}/v2/claims`, "POST", { "content-type": "text/plain" }, json)
        expectProblem(anonymous, "MISSING_CREDENTIAL")
        // The decision route too.
        const decision = yield* send(
          `${f.base}/v2/moderation/claims/${work}/decisions`,
          "POST",
          { authorization: `Bearer ${f.moderator.key}`, "if-match": "*" },
          JSON.stringify({ decision: "approve" })
        )
        expect(expectProblem(decision, "INVALID_PARAMETER").errors[0].header).toBe("Content-Type")
      }))

    it.effect("application/json in any case, with charset=utf-8 or none, is taken", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        for (
          const type of ["Application/JSON", "application/json; charset=UTF-8", "application/json;charset=\"utf-8\""]
        ) {
          const work = freshWork(f)
          const res = yield* createClaim(f, { "content-type": type }, JSON.stringify({ work_id: work }))
          expect(res.status, `${type}: ${JSON.stringify(res.body)}`).toBe(201)
        }
        // A write route without a body needs no Content-Type.
        const work = freshWork(f)
        expect(
          (yield* createClaim(f, { "content-type": "application/json" }, JSON.stringify({ work_id: work }))).status
        )
          .toBe(201)
        const release = yield* send(`${f.base}/v2/claims/${work}`, "DELETE", {
          authorization: `Bearer ${f.siteUser.key}`
        })
        expect(release.status, JSON.stringify(release.body)).toBe(200)
      }))

    it.effect("a body member the schema does not name is 422 UNKNOWN_VALUE at its pointer, and nothing is created", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const work = freshWork(f)
        const typo = yield* f.call("POST", "/v2/claims", {
          key: f.siteUser.key,
          body: { work_id: work, site_work_idd: "9001" }
        })
        expect(expectProblem(typo, "VALIDATION_FAILED").errors).toEqual([
          expect.objectContaining({
            reason: "UNKNOWN_VALUE",
            pointer: "/site_work_idd",
            params: { allowed: ["work_id", "refs", "site_work_id", "display_name", "field_values"] }
          })
        ])
        expect(yield* stateOf(f, work)).toBe("none")
        // Nested objects, and every unknown member at once.
        const nested = yield* f.call("POST", "/v2/claims", {
          key: f.siteUser.key,
          body: { refs: [{ source: "vndb", external_id: "v1", extra: 1 }], display_name: "X", colour: "blue" }
        })
        const errors = expectProblem(nested, "VALIDATION_FAILED").errors
        expect(errors).toContainEqual(expect.objectContaining({
          reason: "UNKNOWN_VALUE",
          pointer: "/refs/0/extra",
          params: { allowed: ["source", "external_id"] }
        }))
        expect(errors).toContainEqual(expect.objectContaining({ reason: "UNKNOWN_VALUE", pointer: "/colour" }))
        // A decision body too.
        const decision = yield* f.call("POST", `/v2/moderation/claims/${work}/decisions`, {
          key: f.moderator.key,
          body: { decision: "ban", notes: "typo" },
          headers: { "if-match": "*" }
        })
        expect(expectProblem(decision, "VALIDATION_FAILED").errors).toEqual([
          expect.objectContaining({
            reason: "UNKNOWN_VALUE",
            pointer: "/notes",
            params: { allowed: ["decision", "note"] }
          })
        ])
        expect(yield* stateOf(f, work)).toBe("none")
      }))

    it.effect("a misspelt field_values key is 422 UNKNOWN_VALUE at its pointer with the field keys", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const res = yield* f.call("POST", "/v2/claims", {
          key: f.siteUser.key,
          body: { site_work_id: "77", field_values: { "catalog.work.display_nam": "Typo" } }
        })
        expect(expectProblem(res, "VALIDATION_FAILED").errors).toEqual([
          expect.objectContaining({
            reason: "UNKNOWN_VALUE",
            pointer: "/field_values/catalog.work.display_nam",
            params: { allowed: [...mintKeys] }
          })
        ])
        const mine = yield* f.call("GET", "/v2/claims?limit=100", { key: f.siteUser.key })
        expect(Schema.decodeUnknownSync(ListClaimRecord)(mine.body).items.some((c) => c.display_name === "Typo"))
          .toBe(false)
      }))

    it.effect("unknown query parameters are ignored on reads and writes alike", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        for (
          const path of [
            "/v2/claims?utm_source=mirror&_=1",
            "/v2/catalog/works?limit=2&nonsense=1",
            "/v2/catalog/claim-events?cachebust=123"
          ]
        ) {
          const res = yield* f.call("GET", path, { key: f.siteUser.key })
          expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBe(200)
        }
        const queue = yield* f.call("GET", "/v2/moderation/claims?foo=bar", { key: f.moderator.key })
        expect(queue.status, JSON.stringify(queue.body)).toBe(200)
        const work = freshWork(f)
        const created = yield* f.call("POST", `/v2/claims?trace=abc`, { key: f.siteUser.key, body: { work_id: work } })
        expect(created.status, JSON.stringify(created.body)).toBe(201)
        // A known parameter with a bad value is still refused.
        expect(
          expectProblem(
            yield* f.call("GET", "/v2/claims?state=nope&x=1", { key: f.siteUser.key }),
            "INVALID_PARAMETER"
          ).errors.map((e: any) => e.parameter)
        ).toEqual(["state"])
      }))

    it.effect("claim events: a cursor may be sent with its first request's after, or without; another after is INVALID_CURSOR", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        for (let i = 0; i < 3; i++) {
          const res = yield* f.call("POST", "/v2/claims", { key: f.siteUser.key, body: { work_id: freshWork(f) } })
          expect(res.status, JSON.stringify(res.body)).toBe(201)
        }
        const events = (query: string) =>
          Effect.map(f.call("GET", `/v2/catalog/claim-events?${query}`, { key: f.siteUser.key }), (res) => res)
        const all = Schema.decodeUnknownSync(ListClaimEvent)((yield* events("limit=100")).body).items.map((e) => e.id)
        expect(all.length).toBeGreaterThanOrEqual(3)
        const after = all[0]!
        const first = yield* events(`after=${after}&limit=1`)
        expect(first.status, JSON.stringify(first.body)).toBe(200)
        const firstPage = Schema.decodeUnknownSync(ListClaimEvent)(first.body)
        expect(firstPage.items.map((e) => e.id)).toEqual([all[1]])
        const cursor = encodeURIComponent(firstPage.next_cursor!)
        // The same after, or none: the same next page.
        const repeated = yield* events(`after=${after}&limit=1&cursor=${cursor}`)
        expect(repeated.status, JSON.stringify(repeated.body)).toBe(200)
        const omitted = yield* events(`limit=1&cursor=${cursor}`)
        expect(omitted.status, JSON.stringify(omitted.body)).toBe(200)
        const next = Schema.decodeUnknownSync(ListClaimEvent)(repeated.body)
        expect(next.items.map((e) => e.id)).toEqual([all[2]])
        expect(Schema.decodeUnknownSync(ListClaimEvent)(omitted.body).items.map((e) => e.id)).toEqual([all[2]])
        // The cursor of that page still remembers the first request's after.
        const third = yield* events(`after=${after}&limit=1&cursor=${encodeURIComponent(next.next_cursor!)}`)
        expect(third.status, JSON.stringify(third.body)).toBe(200)
        // Another after, or one where the first request had none, is refused.
        const other = yield* events(`after=${all[1]}&limit=1&cursor=${cursor}`)
        expect(expectProblem(other, "INVALID_CURSOR"))
          .toBeDefined()
        const plain = Schema.decodeUnknownSync(ListClaimEvent)((yield* events("limit=1")).body)
        const added = yield* events(`after=0&limit=1&cursor=${encodeURIComponent(plain.next_cursor!)}`)
        expect(expectProblem(added, "INVALID_CURSOR"))
          .toBeDefined()
      }))

    it.effect("a path parameter of any length reaches its schema: too long is 400 INVALID_PARAMETER, never 405", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const long = "1".repeat(1000)
        for (
          const [method, path] of [
            ["GET", `/v2/claims/${long}`],
            ["DELETE", `/v2/claims/${long}`],
            ["POST", `/v2/claims/${long}/submission`],
            ["GET", `/v2/catalog/works/${long}`]
          ] as const
        ) {
          const res = yield* send(`${f.base}${path}`, method, { authorization: `Bearer ${f.siteUser.key}` })
          const body = expectProblem(res, "INVALID_PARAMETER")
          expect(body.errors, `${method} ${path.slice(0, 20)}`).toContainEqual(
            expect.objectContaining({ parameter: expect.stringMatching(/id$/), reason: "TOO_LONG" })
          )
        }
      }))
  })
})
