/**
 * Handlers of the news groups (schema/Api/NewsApi.ts). The post goes through the write runner with
 * the rule its route declares.
 */
import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { CatalogApi } from "../../../schema/Api/CatalogApi.js"
import { newsRules } from "../../../schema/Api/NewsApi.js"
import { Principal } from "../../../schema/Api/Security.js"
import { conditional } from "../../platform/Conditional.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import { Writes } from "../writes/Writes.js"
import { News } from "./News.js"

export const HttpNewsWriteLive = HttpApiBuilder.group(
  CatalogApi,
  "newsWrite",
  (handlers) =>
    Effect.gen(function*() {
      const news = yield* News
      const writes = yield* Writes
      return handlers.handle("createNews", ({ headers, payload }) =>
        Effect.flatMap(Principal, (principal) =>
          writes.run({
            principal,
            rule: newsRules.createNews,
            idempotencyKey: headers["idempotency-key"],
            payload,
            write: news.create(principal, payload)
          })), runToCompletion)
    })
)

export const HttpNewsReadLive = HttpApiBuilder.group(
  CatalogApi,
  "news",
  (handlers) =>
    Effect.gen(function*() {
      const news = yield* News
      return handlers
        .handle("listNews", ({ query }) => Effect.flatMap(Principal, (p) => news.list(p, query)))
        .handle("getNews", ({ params }) =>
          Effect.flatMap(Principal, (p) =>
            Effect.flatMap(news.get(p, params.id), (body) => conditional(body))))
        .handle("listWorkNews", ({ params, query }) =>
          Effect.flatMap(Principal, (p) =>
            news.workNews(p, params.id, query)))
    })
)

export const HttpNewsGroupsLive = Layer.mergeAll(HttpNewsWriteLive, HttpNewsReadLive).pipe(
  Layer.provide(News.layer)
)
