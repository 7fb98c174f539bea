/**
 * Companies and their family graph.
 */
import { Schema } from "effect"
import {
  CompanyId,
  Count,
  DisplayString,
  EntityName,
  Image,
  Intro,
  LangTag,
  ListOf,
  Localized,
  WorkLink
} from "./Common.js"

export const CompanyKind = Schema.Literals([
  "game_brand",
  "bunko",
  "publisher",
  "anime_studio",
  "doujin_circle",
  "group"
]).annotate({
  description: "Kind of company (closed): `game_brand`, `bunko` (light-novel label), `publisher`, " +
    "`anime_studio`, `doujin_circle`, `group` (corporate group)."
})
export type CompanyKind = typeof CompanyKind.Type

export const CompanyRelation = Schema.Literals(["parent", "imprint", "spawned", "succeeded_by"]).annotate({
  description: "`to_id` is this relation of `from_id`: its `parent` company, an `imprint` of it, a company it " +
    "`spawned`, or the company it was `succeeded_by`."
})
export type CompanyRelation = typeof CompanyRelation.Type

const workCount = Count.annotate({
  description: "Number of works of this company visible under the caller's content gate."
})

const companyBasicFields = {
  object: Schema.Literal("company"),
  id: CompanyId,
  display_name: DisplayString,
  latin: Schema.NullOr(DisplayString).annotate({ description: "Romanization of display_name; null if none." }),
  lang: Schema.NullOr(LangTag).annotate({ description: "Language of display_name; null if unknown." }),
  localized: Localized,
  company_kind: CompanyKind,
  work_count: workCount
}

/** A company without its optional includes (as nested in works and releases). */
export const CompanyBasic = Schema.Struct(companyBasicFields).annotate({
  identifier: "CompanyBasic",
  description: "A company (developer brand, publisher, circle, label or group) without includes."
})
export type CompanyBasic = typeof CompanyBasic.Type

export const Company = Schema.Struct({
  ...companyBasicFields,
  aliases: Schema.optionalKey(Schema.Array(EntityName).annotate({ description: "include=aliases." })),
  intros: Schema.optionalKey(
    Schema.Array(Intro).annotate({ description: "include=intros; detail and batch lanes only." })
  ),
  links: Schema.optionalKey(
    Schema.Array(WorkLink).annotate({ description: "include=links; detail and batch lanes only." })
  ),
  logo: Schema.optionalKey(Image.annotate({ identifier: undefined, description: "include=logo, when a logo exists." }))
}).annotate({
  identifier: "Company",
  description: "A company: developer brand, publisher, doujin circle, light-novel label, anime studio or group."
})
export type Company = typeof Company.Type

export const CompanyGraphNode = Schema.Struct({
  object: Schema.Literal("company"),
  id: CompanyId,
  display_name: DisplayString,
  localized: Localized,
  work_count: workCount,
  logo: Schema.optionalKey(Image)
}).annotate({ identifier: "CompanyGraphNode", description: "A company in a company graph." })
export type CompanyGraphNode = typeof CompanyGraphNode.Type

export const CompanyGraphEdge = Schema.Struct({
  from_id: CompanyId,
  to_id: CompanyId,
  relation: CompanyRelation
}).annotate({
  identifier: "CompanyGraphEdge",
  description: "A directed relation: `to_id` is `relation` of `from_id`. Inverse edges are not emitted."
})
export type CompanyGraphEdge = typeof CompanyGraphEdge.Type

export const CompanyGraph = Schema.Struct({
  object: Schema.Literal("company_graph"),
  nodes: Schema.Array(CompanyGraphNode),
  edges: Schema.Array(CompanyGraphEdge),
  truncated: Schema.Boolean.annotate({
    description: "True when the family continues beyond `nodes` (the walk stops at 60 nodes and 4 hops)."
  })
}).annotate({
  identifier: "CompanyGraph",
  description: "The family of a company: parents, imprints, spawned and successor companies, up to 60 nodes " +
    "within 4 hops of the requested company."
})
export type CompanyGraph = typeof CompanyGraph.Type

export const ListCompany = ListOf(Company, "ListCompany")
export type ListCompany = typeof ListCompany.Type
