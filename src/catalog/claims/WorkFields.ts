/**
 * Field keys of works (docs/writing.md, "Field keys"): `catalog.work.<field>`, named as in the work
 * record, each with the schema of its value. One registry for both directions: minting a work
 * from `field_values` checks against it, and a snapshot reads the same keys back.
 */
import { Effect, Result, Schema } from "effect"
import { LangTag, NameInput } from "../../../schema/Catalog/Common.js"
import { DevelopmentStatus } from "../../../schema/Catalog/Work.js"
import type { FieldError } from "../../../schema/Problem.js"
import { ValidationFailed } from "../../../schema/Problem.js"
import { StorableText } from "../../../schema/Text.js"
import { type Collected, collectFieldErrors } from "../../platform/FieldErrors.js"

export const WorkFieldSchemas = {
  "catalog.work.display_name": NameInput,
  "catalog.work.latin": Schema.NullOr(StorableText.check(Schema.isMinLength(1), Schema.isMaxLength(512))),
  "catalog.work.olang": Schema.NullOr(LangTag),
  "catalog.work.length_minutes": Schema.NullOr(
    Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 1_000_000 }))
  ),
  "catalog.work.development_status": DevelopmentStatus
} as const

export type WorkFieldKey = keyof typeof WorkFieldSchemas
export const workFieldKeys = Object.keys(WorkFieldSchemas) as ReadonlyArray<WorkFieldKey>

/** The values of a minted work, every key decoded. */
export interface MintFields {
  readonly display_name: string
  readonly latin: string | null
  readonly olang: string | null
  readonly length_minutes: number | null
  readonly development_status: "finished" | "in_development" | "cancelled"
}

/**
 * Checks `field_values` key by key: an unknown key is `UNKNOWN_VALUE`, a bad value the schema's
 * reason, each at `/field_values/<key>`. Answers the decoded values by key.
 */
export const decodeWorkFields = (values: Readonly<Record<string, unknown>>) =>
  Effect.gen(function*() {
    const out: Partial<Record<WorkFieldKey, unknown>> = {}
    const collected: Collected = { errors: [], code: undefined }
    for (const [key, value] of Object.entries(values)) {
      if (!Object.hasOwn(WorkFieldSchemas, key)) {
        const pointer = `/field_values/${key.replaceAll("~", "~0").replaceAll("/", "~1")}`
        collected.errors.push({
          reason: "UNKNOWN_VALUE",
          detail: `\`${pointer}\` is not a field key of works.`,
          pointer,
          params: { allowed: [...workFieldKeys] }
        } as FieldError)
        continue
      }
      const schema: Schema.Decoder<unknown> = WorkFieldSchemas[key as WorkFieldKey]
      const decoded = Schema.decodeUnknownResult(schema)(value)
      if (Result.isFailure(decoded)) {
        collectFieldErrors(decoded.failure.issue, "pointer", collected, ["field_values", key])
      } else {
        out[key as WorkFieldKey] = decoded.success
      }
    }
    if (collected.errors.length > 0) {
      return yield* new ValidationFailed({ detail: "`field_values` has invalid entries.", errors: collected.errors })
    }
    return out
  })
