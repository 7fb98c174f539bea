/**
 * A request an identity service refuses: the envelope code (schema/Identity/Envelope.ts) and the
 * headers that go with it (`Retry-After`, `WWW-Authenticate`). Services fail with it; the envelope
 * handlers answer it with `refusal` (src/identity/http/Responses.ts).
 */
import { Data } from "effect"
import type { EnvelopeCodeName } from "../../../schema/Identity/Envelope.js"

export class Refused extends Data.TaggedError("Refused")<{
  readonly code: EnvelopeCodeName
  readonly headers: Readonly<Record<string, string>>
}> {}

export const refused = (code: EnvelopeCodeName, headers: Readonly<Record<string, string>> = {}) =>
  new Refused({ code, headers })

/** `Retry-After` in whole seconds, at least 1 (RFC 9110 section 10.2.3). */
export const retryAfter = (seconds: number): Readonly<Record<string, string>> => ({
  "retry-after": String(Math.max(1, Math.ceil(seconds)))
})
