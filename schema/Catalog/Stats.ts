/**
 * Catalog statistics.
 */
import { Schema } from "effect"
import { Count } from "./Common.js"

export const CatalogStats = Schema.Struct({
  object: Schema.Literal("catalog_stats"),
  works: Count.annotations({ description: "Live works visible under the caller's content gate." }),
  companies: Count.annotations({ description: "Live company registry rows." }),
  characters: Count.annotations({ description: "Live characters." }),
  credit_names: Count.annotations({ description: "Live credit names." }),
  persons: Count.annotations({ description: "Live persons." })
}).annotations({ identifier: "CatalogStats", description: "Counts of live catalog rows." })
export type CatalogStats = typeof CatalogStats.Type
