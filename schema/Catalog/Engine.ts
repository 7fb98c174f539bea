/**
 * Game engines.
 */
import { Schema } from "effect"
import { Count, DisplayString, EngineId, ListOf } from "./Common.js"

export const Engine = Schema.Struct({
  object: Schema.Literal("engine"),
  id: EngineId,
  display_name: DisplayString,
  work_count: Count.annotate({ description: "Works using this engine, under the caller's content gate." }),
  description: Schema.String.check(Schema.isMaxLength(8000)).annotate({ description: "Empty if unrecorded." }),
  aliases: Schema.Array(DisplayString).annotate({ description: "Other names; `[]` if none." })
}).annotate({ identifier: "Engine", description: "A game engine that works are built with." })
export type Engine = typeof Engine.Type

/** The engine of a work or release, by name. */
export const EngineRef = Schema.Struct({ id: EngineId, display_name: DisplayString }).annotate({
  identifier: "EngineRef",
  description: "The engine a work or release uses (read the full record at the engine endpoint)."
})
export type EngineRef = typeof EngineRef.Type

export const ListEngine = ListOf(Engine, "ListEngine")
export type ListEngine = typeof ListEngine.Type
