import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { CatalogApi } from "../../../schema/Api/CatalogApi.js"
import { Principal } from "../../../schema/Api/Security.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import { Calendar } from "./Calendar.js"

export const HttpCalendarLive = HttpApiBuilder.group(
  CatalogApi,
  "calendar",
  (handlers) =>
    Effect.gen(function*() {
      const calendar = yield* Calendar
      return handlers.handle("listCalendar", ({ query }) =>
        Effect.flatMap(Principal, (p) => calendar.list(query, p.contentLimit)), runToCompletion)
    })
).pipe(Layer.provide(Calendar.layer))
