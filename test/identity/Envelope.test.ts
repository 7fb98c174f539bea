import { describe, expect, it } from "@effect/vitest"
import { Effect, Result, Schema } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import {
  Envelope,
  EnvelopeCodes,
  EnvelopeFailure,
  envelopeFailure,
  envelopeOk
} from "../../schema/Identity/Envelope.js"
import { LoginResponse } from "../../schema/Identity/Login.js"

const codes = Object.values(EnvelopeCodes).map((entry) => entry.code)

describe("Envelope codes (README, \"Envelope codes\")", () => {
  it("registers each code once", () => {
    expect(new Set(codes).size).toBe(codes.length)
  })

  it("maps 10001/10002/10003 to token missing/invalid/expired, all HTTP 401 (docs/api-contract.md, \"Errors: identity (OAuth errors and the envelope)\")", () => {
    expect(EnvelopeCodes.TOKEN_MISSING).toMatchObject({ code: 10001, status: 401 })
    expect(EnvelopeCodes.TOKEN_INVALID).toMatchObject({ code: 10002, status: 401 })
    expect(EnvelopeCodes.TOKEN_EXPIRED).toMatchObject({ code: 10003, status: 401 })
  })

  it("gives a banned account HTTP 403 (README, \"Self-service accounts\")", () => {
    expect(EnvelopeCodes.ACCOUNT_BANNED.status).toBe(403)
  })

  it("defines every code of the 15001..15011 and 17001..17005 ranges (docs/api-contract.md, \"Errors: identity (OAuth errors and the envelope)\")", () => {
    for (let code = 15001; code <= 15011; code++) expect(codes).toContain(code)
    for (let code = 17001; code <= 17005; code++) expect(codes).toContain(code)
    for (const code of [10004, 10006, 10010, 10011, 10012, 10013, 10016]) expect(codes).toContain(code)
  })

  it.effect("encodes success as {code: 0, message, data} and failure with data null (docs/api-contract.md, \"Errors: identity (OAuth errors and the envelope)\")", () =>
    Effect.gen(function*() {
      const ok = yield* Schema.decodeUnknownEffect(LoginResponse)(
        envelopeOk({ access_token: "a.b.c", token_type: "Bearer", expires_in: 900 })
      )
      expect(ok.code).toBe(0)
      expect(ok.data.expires_in).toBe(900)
      const { body, status } = envelopeFailure("WRONG_PASSWORD")
      expect(status).toBe(401)
      expect(yield* Schema.encodeEffect(EnvelopeFailure)(body)).toEqual({
        code: 10011,
        message: "Wrong password",
        data: null
      })
      const notOk = yield* Effect.result(
        Schema.decodeUnknownEffect(Envelope(Schema.Null))({ code: 10001, message: "", data: null })
      )
      expect(Result.isFailure(notOk)).toBe(true)
    }))

  it("the README's identity section lists every code with its status and message (docs/api-contract.md, \"Errors: identity (OAuth errors and the envelope)\")", () => {
    const readme = Fs.readFileSync(Path.resolve(import.meta.dirname, "../../README.md"), "utf8")
    const section = readme.slice(readme.indexOf("## Identity provider"), readme.indexOf("## Operator CLI"))
    for (const entry of Object.values(EnvelopeCodes)) {
      expect(section).toContain(`| ${entry.code} | ${entry.status} | ${entry.message} |`)
    }
  })
})
