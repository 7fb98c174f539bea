/**
 * Catalog statistics.
 */
import { Schema } from "effect"
import { Count } from "./Common.js"

export const CatalogStats = Schema.Struct({
  object: Schema.Literal("catalog_stats"),
  works: Count.annotate({ description: "Live works visible under the caller's content gate." }),
  companies: Count.annotate({ description: "Live company registry rows." }),
  characters: Count.annotate({ description: "Live characters." }),
  credit_names: Count.annotate({ description: "Live credit names." }),
  persons: Count.annotate({ description: "Live persons." })
}).annotate({ identifier: "CatalogStats", description: "Counts of live catalog rows." })
export type CatalogStats = typeof CatalogStats.Type
