/**
 * What a page makes of a form before and after the flow's service sees it. The endpoint's schema
 * (schema/Identity/Pages.ts and its neighbours) has decoded every field as an optional bounded
 * string, so that a page answers a missing field itself; `decode` then checks the fields a step
 * needs with a schema whose checks carry what the page says next to each field, and `refusal`
 * turns a service's refusal into the same field errors (src/identity/pages/shared/RefusalMessages.ts).
 * `returnTo` follows `return_to` only when it is a path on this server under the issuer's path, so
 * no page can be used as an open redirect.
 */
import { Context, Effect, Layer, Option, Schema, SchemaIssue } from "effect"
import { isEmailAddress } from "../../../../schema/Identity/User.js"
import { IdentityConfig } from "../../shared/IdentityConfig.js"
import type { Refused } from "../../shared/Refused.js"
import type { FieldErrors } from "../shared/FormFields.js"
import { messageOf, refusedStatus } from "../shared/RefusalMessages.js"

/** The field a check's message is shown next to when it is not the key's own (`form`: the whole form). */
const SHOWN_AT = "shiori/pages/shownAt"

/** A key whose check speaks to another field of the page, or to the whole form. */
export const shownAt = (field: string) => <S extends Schema.Top>(self: S) =>
  self.pipe(Schema.annotateKey({ [SHOWN_AT]: field }))

/** Sent and not empty: `message` otherwise. */
export const nonEmpty = (message: string) =>
  Schema.String.check(Schema.makeFilter((value: string) => value !== "" || message)).pipe(
    Schema.annotateKey({ messageMissingKey: message })
  )

/** Sent and not blank, as sent: `message` otherwise. */
export const notBlank = (message: string) =>
  Schema.String.check(Schema.makeFilter((value: string) => value.trim() !== "" || message)).pipe(
    Schema.annotateKey({ messageMissingKey: message })
  )

/** Sent and not blank, trimmed: `message` otherwise. */
export const filled = (message: string) =>
  Schema.Trim.check(Schema.makeFilter((value: string) => value !== "" || message)).pipe(
    Schema.annotateKey({ messageMissingKey: message })
  )

/** The 6-digit code of a mail, spaces around it ignored: `message` otherwise. */
export const mailedCode = (message: string) =>
  Schema.Trim.check(Schema.isPattern(/^[0-9]{6}$/, { message })).pipe(
    Schema.annotateKey({ messageMissingKey: message })
  )

/** An email address, spaces around it ignored: `message` otherwise. */
export const emailAddress = (message: string) =>
  Schema.Trim.check(Schema.makeFilter((value: string) => isEmailAddress(value) || message)).pipe(
    Schema.annotateKey({ messageMissingKey: message })
  )

const format = SchemaIssue.makeFormatterStandardSchemaV1()

export class FormValidation extends Context.Service<FormValidation>()("identity/FormValidation", {
  make: Effect.gen(function*() {
    const config = yield* IdentityConfig

    /**
     * The fields of `schema` from a form, or what the page says about each wrong one (every one,
     * not only the first; the first check of a field that fails is the one shown).
     */
    const decode = <Fields extends Schema.Struct.Fields>(
      schema: Schema.Struct<Fields>,
      form: object
    ): Effect.Effect<Schema.Struct<Fields>["Type"], FieldErrors> =>
      Schema.decodeUnknownEffect(schema)(form, { errors: "all" }).pipe(
        Effect.mapError((error) => {
          const errors: Record<string, string> = {}
          for (const issue of format(error.issue).issues) {
            const key = String(issue.path?.[0] ?? "form")
            const shown = schema.fields[key]?.ast.context?.annotations?.[SHOWN_AT]
            const field = typeof shown === "string" ? shown : key
            errors[field] ??= issue.message
          }
          return errors
        })
      ) as Effect.Effect<Schema.Struct<Fields>["Type"], FieldErrors>

    /** A service's refusal on a page: the error next to its field (or `field`), the status and headers. */
    const refusal = (refused: Refused, field?: string) => ({
      errors: messageOf(refused, field),
      ...refusedStatus(refused)
    })

    /** A same-origin path under the issuer's path, or none. */
    const returnTo = (value: string | undefined): Option.Option<string> => {
      if (value === undefined || !value.startsWith(`${config.basePath}/`) || /[\\\s]/.test(value)) {
        return Option.none()
      }
      try {
        const url = new URL(value, config.origin)
        return url.origin === config.origin && url.pathname.startsWith(`${config.basePath}/`)
          ? Option.some(`${url.pathname}${url.search}`)
          : Option.none()
      } catch {
        return Option.none()
      }
    }

    return { decode, refusal, returnTo } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
