/**
 * The field keys a claim may mint a work from (docs/writing.md, "Claims"): the work's name, its
 * romanization, its original language, its length and its development status, each checked against
 * the field registry's own schema (schema/Catalog/Fields.ts). Other keys of works are set by edit
 * proposals once the work is served.
 */
import { Effect } from "effect"
import type { FieldError } from "../../../schema/Problem.js"
import { ValidationFailed } from "../../../schema/Problem.js"
import { decodeFields, pointerToken } from "../fields/EntityFields.js"

/** The keys minting writes, in the order the document lists them. */
export const mintKeys = [
  "catalog.work.display_name",
  "catalog.work.latin",
  "catalog.work.olang",
  "catalog.work.length_minutes",
  "catalog.work.development_status"
] as const
export type MintKey = (typeof mintKeys)[number]

/** The values of a minted work, every key decoded. */
export interface MintFields {
  readonly display_name: string
  readonly latin: string | null
  readonly olang: string | null
  readonly length_minutes: number | null
  readonly development_status: "finished" | "in_development" | "cancelled"
}

/**
 * Checks `field_values` key by key: a key minting does not write is `UNKNOWN_VALUE` (with the keys it
 * does write), a bad value the reason its schema fails with, each at `/field_values/<key>`. Answers
 * the decoded values by key.
 */
export const decodeWorkFields = (values: Readonly<Record<string, unknown>>) =>
  Effect.gen(function*() {
    const errors: Array<FieldError> = []
    const mintable: Record<string, unknown> = {}
    for (const [key, value] of Object.entries(values)) {
      if ((mintKeys as ReadonlyArray<string>).includes(key)) {
        mintable[key] = value
        continue
      }
      const pointer = `/field_values/${pointerToken(key)}`
      errors.push({
        reason: "UNKNOWN_VALUE",
        detail: `\`${pointer}\` is not a field key a work is minted from; propose it once the work is served.`,
        pointer,
        params: { allowed: [...mintKeys] }
      } as FieldError)
    }
    const decoded = decodeFields("catalog.work", mintable, "field_values")
    errors.push(...decoded.errors)
    if (errors.length > 0) {
      return yield* new ValidationFailed({ detail: "`field_values` has invalid entries.", errors })
    }
    return Object.fromEntries([...decoded.values].map(([field, value]) => [`catalog.work.${field}`, value])) as Partial<
      Record<MintKey, unknown>
    >
  })
