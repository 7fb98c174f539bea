/**
 * News (docs/writing.md, "News"): a site posts news items under the news sources bound to it, and
 * every reader lists them. The post declares its rule (schema/Api/Writes.ts); the reads need
 * `catalog:read` and pass the content gate.
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { NotModified, RequiredScope } from "../Annotations.js"
import { Id } from "../Catalog/Common.js"
import { CreateNewsInputBody, ListNewsItem, NewsItem, NewsLane, NewsSourceName } from "../Catalog/News.js"
import { AlreadyExists, EntityMerged, InvalidCursor, LimitTooLarge, NotFound, problem } from "../Problem.js"
import { Authorization, SiteWriteAuthorization } from "./Security.js"
import { declare, lenientQuery, paging, type RouteRule, strictBody, strictParams } from "./Writes.js"

export const NewsPath = Schema.Struct({ id: Id.annotate({ description: "The news item id." }) })
export const WorkNewsPath = Schema.Struct({ id: Id.annotate({ description: "The catalog work id." }) })

export const WorkNewsParams = Schema.Struct({
  ...paging,
  lane: Schema.optional(NewsLane.annotate({ description: "Only items of this lane." }))
})
export type WorkNewsParams = typeof WorkNewsParams.Type

export const ListNewsParams = Schema.Struct({
  ...paging,
  lane: Schema.optional(NewsLane.annotate({ description: "Only items of this lane." })),
  source: Schema.optional(NewsSourceName.annotate({ description: "Only items of this news source." })),
  work_id: Schema.optional(Id.annotate({ description: "Only items linking this work." }))
})
export type ListNewsParams = typeof ListNewsParams.Type

/** The rule of the news post (the matrix test reads it from the route table). */
export const newsRules = {
  createNews: { user: false, tenant: false, idempotent: true, quota: "news" }
} as const satisfies Record<string, RouteRule>

export class NewsWriteApi extends HttpApiGroup.make("newsWrite")
  .add(
    declare(
      "news:write",
      newsRules.createNews,
      ({ headers, problems }) =>
        HttpApiEndpoint.post("createNews", "/v2/news", {
          headers,
          payload: CreateNewsInputBody,
          // Written inline, as the document always had its 201s (see `Image` in Common.ts).
          success: NewsItem.annotate({ identifier: undefined }).pipe(HttpApiSchema.status(201)),
          error: [problem(AlreadyExists), ...problems]
        })
          .annotate(OpenApi.Summary, "Post a news item")
          .annotate(
            OpenApi.Description,
            "Posts under `source`, a news source an operator bound to the credential's site and has not disabled " +
              "(otherwise 422 `NOT_PERMITTED` at `/source`). A site's API key without a user may post. The summary " +
              "holds at most 200 Unicode code points. One item per `source_url`: 409 `ALREADY_EXISTS`. `work_ids` " +
              "must name works the credential sees (422 `UNKNOWN_REFERENCE`). Answers 201 with `Location`."
          )
    )
  )
  .middleware(SiteWriteAuthorization)
  .annotate(HttpApi.PayloadParseOptions, strictBody)
  .annotate(OpenApi.Title, "News (posting)")
  .annotate(OpenApi.Description, "A site's bot or a user of the site posts news under the site's news sources.")
{}

export class NewsApi extends HttpApiGroup.make("news")
  .add(
    HttpApiEndpoint.get("listNews", "/v2/news", {
      query: ListNewsParams,
      success: ListNewsItem,
      error: [problem(LimitTooLarge), problem(InvalidCursor)]
    })
      .annotate(OpenApi.Summary, "News")
      .annotate(
        OpenApi.Description,
        "News items, newest `published_at` first (then newest id). `lane=`, `source=` and `work_id=` filter. An " +
          "`sfw` credential is not shown links to nsfw works (they are left out of `work_ids`), and `work_id=` of an " +
          "nsfw work lists nothing for it."
      )
  )
  .add(
    HttpApiEndpoint.get("getNews", "/v2/news/:id", {
      params: NewsPath,
      success: [NewsItem, NotModified.pipe(HttpApiSchema.status(304))],
      error: [problem(NotFound)]
    })
      .annotate(OpenApi.Summary, "One news item")
      .annotate(OpenApi.Description, "With a strong `ETag`; `If-None-Match` naming it is 304.")
  )
  .add(
    HttpApiEndpoint.get("listWorkNews", "/v2/catalog/works/:id/news", {
      params: WorkNewsPath,
      query: WorkNewsParams,
      success: ListNewsItem,
      error: [problem(NotFound), problem(EntityMerged), problem(LimitTooLarge), problem(InvalidCursor)]
    })
      .annotate(OpenApi.Summary, "A work's news")
      .annotate(
        OpenApi.Description,
        "The news items linking the work, newest `published_at` first. A work not served, or nsfw for an `sfw` " +
          "credential, is 404; a merged-away id is 404 `ENTITY_MERGED` (read the news at `current_id`)."
      )
  )
  .middleware(Authorization)
  .annotate(HttpApi.ParamsParseOptions, strictParams)
  .annotate(HttpApi.QueryParseOptions, lenientQuery)
  .annotate(RequiredScope, "catalog:read")
  .annotate(OpenApi.Title, "News")
{}
