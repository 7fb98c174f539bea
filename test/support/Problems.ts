/**
 * Member-by-member validation of a problem document response (RFC 9457; docs/api-contract.md,
 * "Errors: catalog problem documents").
 */
import { expect } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { FieldError, ProblemCodes, problemSlug } from "../../schema/Problem.js"
import type { ProblemCode } from "../../schema/Problem.js"

export const REQUEST_ID = /^req_[0-9A-HJKMNP-TV-Z]{26}$/

export interface ProblemBody {
  readonly type: string
  readonly title: string
  readonly status: number
  readonly code: string
  readonly detail: string
  readonly instance: string
  readonly request_id: string
  readonly errors: ReadonlyArray<Record<string, any>>
  readonly [key: string]: unknown
}

/** Asserts every required member and returns the body for further checks. */
export const expectProblem = async (
  response: Response,
  code: ProblemCode,
  instance: string
): Promise<ProblemBody> => {
  const text = await response.text()
  const { status, title } = ProblemCodes[code]
  expect(response.status, text).toBe(status)
  expect(response.headers.get("content-type")).toBe("application/problem+json")
  const body = JSON.parse(text) as ProblemBody
  expect(body.code).toBe(code)
  expect(body.status).toBe(status)
  expect(body.title).toBe(title)
  expect(body.type).toMatch(new RegExp(`/problems/${problemSlug(code)}$`))
  expect(typeof body.detail).toBe("string")
  expect(body.instance).toBe(instance)
  expect(body.request_id).toMatch(REQUEST_ID)
  expect(response.headers.get("x-request-id")).toBe(body.request_id)
  expect(Array.isArray(body.errors)).toBe(true)
  for (const error of body.errors) expect(Schema.is(FieldError)(error), JSON.stringify(error)).toBe(true)
  return body
}

/** Real-time wait: `it.effect` runs on the TestClock, where `Effect.sleep` never elapses. */
export const sleepReal = (ms: number) => Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, ms)))
