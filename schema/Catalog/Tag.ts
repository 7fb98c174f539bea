/**
 * Tags.
 */
import { Schema } from "effect"
import { Count, DisplayString, ListOf, Localized, Spoiler, TagId } from "./Common.js"

export const TagCategory = Schema.Literals(["content", "sexual", "technical"]).annotate({
  description: "Tag category (closed): `content` (story, setting, characters), `sexual` (sexual content; " +
    "such tags only apply to nsfw works), `technical` (gameplay and presentation)."
})
export type TagCategory = typeof TagCategory.Type

const tagBasicFields = {
  object: Schema.Literal("tag"),
  id: TagId,
  display_name: DisplayString,
  localized: Localized,
  category: TagCategory
}

/** A tag as nested in a work's `tags` include. */
export const TagBasic = Schema.Struct(tagBasicFields).annotate({
  identifier: "TagBasic",
  description: "A tag, without its description and counts."
})
export type TagBasic = typeof TagBasic.Type

export const Tag = Schema.Struct({
  ...tagBasicFields,
  parent_id: Schema.NullOr(TagId).annotate({ description: "The broader tag; null for a root tag." }),
  default_spoiler: Spoiler.annotate({ description: "Spoiler level the tag usually carries on a work." }),
  description: Schema.String.check(Schema.isMaxLength(8000)).annotate({ description: "Empty if unrecorded." }),
  aliases: Schema.Array(DisplayString).annotate({ description: "Other names of the tag; `[]` if none." }),
  work_count: Count.annotate({ description: "Works carrying this tag, under the caller's content gate." })
}).annotate({
  identifier: "Tag",
  description: "A descriptive tag that works carry (with a spoiler level and a relevance score per work)."
})
export type Tag = typeof Tag.Type

/** One entry of a work's `tags` include. */
export const WorkTag = Schema.Struct({
  tag: TagBasic,
  spoiler: Spoiler.annotate({ description: "How much knowing this tag spoils this work." }),
  // `Finite`: the range already rules out NaN and the infinities, and a finite number is documented
  // as a plain JSON number with its bounds (a `Number` is documented with its non-finite spellings).
  score: Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 3 })).annotate({
    description: "How strongly the tag applies to this work: 0 (barely) to 3 (central)."
  })
}).annotate({ identifier: "WorkTag", description: "A tag applied to a work." })
export type WorkTag = typeof WorkTag.Type

export const ListTag = ListOf(Tag, "ListTag")
export type ListTag = typeof ListTag.Type
