/**
 * The request schemas several catalog repositories' `SqlSchema` queries share: every repository
 * decodes the rows it reads (`SqlSchema.findAll` and friends), and a query's request is encoded
 * before it runs. Ids are decimal strings (int8 on the wire, src/platform/Database.ts).
 */
import { Schema } from "effect"

/** The served rows among `ids`, under the caller's content gate. */
export const IdsRequest = Schema.Struct({ ids: Schema.Array(Schema.String), nsfw: Schema.Boolean })

/** A page in id order after `afterId` (exclusive), `take` rows at most, under the caller's content gate. */
export const PageRequest = Schema.Struct({
  afterId: Schema.NullOr(Schema.String),
  take: Schema.Int,
  nsfw: Schema.Boolean
})

/** A count of one row, `count(*)::int`. */
export const CountRow = Schema.Struct({ n: Schema.Int })
