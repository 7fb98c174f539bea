/**
 * Tags.
 */
import { Schema } from "effect"
import { Count, DisplayString, ListOf, Localized, Spoiler, TagId } from "./Common.js"

export const TagCategory = Schema.Literal("content", "sexual", "technical").annotations({
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
export const TagBasic = Schema.Struct(tagBasicFields).annotations({
  identifier: "TagBasic",
  description: "A tag, without its description and counts."
})
export type TagBasic = typeof TagBasic.Type

export const Tag = Schema.Struct({
  ...tagBasicFields,
  parent_id: Schema.NullOr(TagId).annotations({ description: "The broader tag; null for a root tag." }),
  default_spoiler: Spoiler.annotations({ description: "Spoiler level the tag usually carries on a work." }),
  description: Schema.String.pipe(Schema.maxLength(8000)).annotations({ description: "Empty if unrecorded." }),
  aliases: Schema.Array(DisplayString).annotations({ description: "Other names of the tag; `[]` if none." }),
  work_count: Count.annotations({ description: "Works carrying this tag, under the caller's content gate." })
}).annotations({
  identifier: "Tag",
  description: "A descriptive tag that works carry (with a spoiler level and a relevance score per work)."
})
export type Tag = typeof Tag.Type

/** One entry of a work's `tags` include. */
export const WorkTag = Schema.Struct({
  tag: TagBasic,
  spoiler: Spoiler.annotations({ description: "How much knowing this tag spoils this work." }),
  score: Schema.Number.pipe(Schema.between(0, 3)).annotations({
    description: "How strongly the tag applies to this work: 0 (barely) to 3 (central)."
  })
}).annotations({ identifier: "WorkTag", description: "A tag applied to a work." })
export type WorkTag = typeof WorkTag.Type

export const ListTag = ListOf(Tag, "ListTag")
export type ListTag = typeof ListTag.Type
