/**
 * Creator applications (`POST /creator/applications`, `GET /creator/applications/me`, in the
 * envelope): a signed-in user asks for the `creator` role and an operator decides
 * (src/identity/creator/CreatorApplications.ts). The bounds below are those of the table
 * (migrations/0017_creator_applications.ts); a body outside them is 400 envelope 17004.
 */
import { Schema, SchemaTransformation } from "effect"
import { isStorable } from "../Text.js"
import { Envelope } from "./Envelope.js"
import { MaxLength } from "./Limits.js"

export const STATEMENT_MIN_LENGTH = 20
export const STATEMENT_MAX_LENGTH = 4000
export const PORTFOLIO_URL_MAX_LENGTH = MaxLength.uri
/** Days after a declined application's decision before the user may apply again. */
export const REAPPLY_AFTER_DAYS = 30

/**
 * Characters as PostgreSQL's `length` and JSON Schema's `minLength` count them (code points, not
 * UTF-16 units), so what passes here also passes the table's check.
 */
const characters = (value: string): number => {
  let count = 0
  for (const _ of value) count++
  return count
}

/**
 * The statement, trimmed, then 20 to 4000 characters the database can store (schema/Text.ts).
 * The checks run on the text as sent (counting what is left once it is trimmed) so that they sit on
 * the encoded side, the only side the OpenAPI document shows; the result is the trimmed text.
 */
export const Statement = Schema.String.annotate({
  description: `Why you want to publish as a creator: ${STATEMENT_MIN_LENGTH} to ${STATEMENT_MAX_LENGTH} ` +
    "characters once leading and trailing whitespace is removed."
}).check(
  isStorable,
  Schema.makeFilter(
    (value: string) => {
      const length = characters(value.trim())
      return length >= STATEMENT_MIN_LENGTH && length <= STATEMENT_MAX_LENGTH
    },
    {
      message: `${STATEMENT_MIN_LENGTH} to ${STATEMENT_MAX_LENGTH} characters once trimmed`,
      // JSON Schema cannot trim first: the bounds it states are those of the trimmed text.
      toJsonSchema: () => [{ minLength: STATEMENT_MIN_LENGTH, maxLength: STATEMENT_MAX_LENGTH }, true]
    }
  )
).pipe(Schema.decodeTo(Schema.Trimmed, SchemaTransformation.trim()))

/** RFC 3986 allows no whitespace or control character in a URI; `new URL` would silently drop some. */
const isHttpUrl = (value: string): boolean => {
  if (!/^https?:\/\/[^\s\u0000-\u001f\u007f]+$/i.test(value)) return false
  try {
    const url = new URL(value)
    return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== ""
  } catch {
    return false
  }
}

// Documented on the string itself: the URL filter has no JSON Schema form, so annotations on it
// would not reach the OpenAPI document.
export const PortfolioUrl = Schema.String.annotate({
  description: `Where your work can be seen: an http or https URL of at most ${PORTFOLIO_URL_MAX_LENGTH} characters.`,
  examples: ["https://portfolio.example/me"],
  format: "uri"
}).check(
  Schema.isMaxLength(PORTFOLIO_URL_MAX_LENGTH),
  isStorable,
  Schema.makeFilter(isHttpUrl, { message: "an http or https URL" })
)

// Each class's fields are a Struct carrying the identifier and description: the OpenAPI document
// shows the encoded Struct, which would otherwise be an undescribed `<Name>Encoded`; the class's
// own description is the one a response takes.

export class CreatorApplicationRequest extends Schema.Class<CreatorApplicationRequest>("CreatorApplicationRequest")(
  Schema.Struct({
    statement: Statement,
    portfolio_url: Schema.optionalKey(Schema.NullOr(PortfolioUrl))
  }).annotate({
    identifier: "CreatorApplicationRequest",
    description: "An application for the `creator` role; `portfolio_url` may be absent or null."
  }),
  { description: "An application for the `creator` role; `portfolio_url` may be absent or null." }
) {}

export const CreatorApplicationStatus = Schema.Literals(["pending", "approved", "declined"]).annotate({
  description: "`pending` until an operator decides; `approved` (the `creator` role was granted) or `declined`."
})
export type CreatorApplicationStatus = typeof CreatorApplicationStatus.Type

const UnixSeconds = Schema.Int.annotate({ description: "Unix timestamp (seconds)." })

export class CreatorApplication extends Schema.Class<CreatorApplication>("CreatorApplication")(
  Schema.Struct({
    id: Schema.String.check(Schema.isUUID()),
    status: CreatorApplicationStatus,
    statement: Schema.String.annotate({ description: "The statement, trimmed." }),
    portfolio_url: Schema.NullOr(Schema.String),
    created_at: UnixSeconds,
    decided_at: Schema.NullOr(UnixSeconds).annotate({ description: "When it was decided; null while pending." })
  }).annotate({ identifier: "CreatorApplication", description: "A creator application." }),
  { description: "A creator application." }
) {}

export const CreatorApplicationResponse = Envelope(CreatorApplication)

/** `GET /creator/applications/me`: the newest application, and no `data` at all for a user who never applied. */
export const MyCreatorApplicationResponse = Schema.Struct({
  code: Schema.Literal(0),
  message: Schema.String,
  // A key annotation, on the encoded side (as `Schema.annotateEncoded` does): the document shows the
  // encoded side of a class, where neither the class's annotations nor its own key annotations reach.
  data: Schema.optionalKey(
    Schema.flip(
      Schema.flip(CreatorApplication).annotateKey({
        description: "The user's newest application; absent when the user never applied."
      })
    )
  )
}).annotate({ identifier: "MyCreatorApplicationResponse" })
