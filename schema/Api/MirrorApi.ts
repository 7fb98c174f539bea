/**
 * The mirroring interfaces (docs/change-feed.md): the change feed and the merge map, both paged
 * incrementally from a stored cursor.
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { RequiredScope } from "../Annotations.js"
import { ListChange, ListRedirect } from "../Catalog/Change.js"
import { CursorParam, Limit } from "../Catalog/Query.js"
import { InvalidCursor, LimitTooLarge, problem } from "../Problem.js"
import { Authorization } from "./Security.js"

/** `limit` and `cursor`, the only parameters of both feeds. */
export const FeedParams = Schema.Struct({
  limit: Schema.optional(Limit),
  cursor: Schema.optional(CursorParam)
})
export type FeedParams = typeof FeedParams.Type

const paging = "Paging: pass `next_cursor` back unchanged as `cursor`. A page with items always carries a " +
  "`next_cursor` (the feed grows while writers commit); the page past the current end is empty and has none. " +
  "A mirror therefore pages until a page has no `next_cursor`, keeps the last cursor it was given, and later " +
  "polls with it: each poll returns only what was committed since. Without a cursor the feed starts from the " +
  "beginning (a cold start)."

const contentGate = "Content gate: for an `sfw` credential, nsfw works, releases and characters " +
  "are listed with `gone: true` (\"no longer served\" to this credential, indistinguishable from a withdrawn " +
  "row), so a row that turns nsfw also leaves an sfw mirror."

/** Every failing parameter is reported, not only the first (parse options of the query). */
const strict = { errors: "all" } as const

export class MirrorApi extends HttpApiGroup.make("mirror")
  .add(
    HttpApiEndpoint.get("listChanges", "/v2/catalog/changes", {
      query: FeedParams,
      success: ListChange,
      error: [
        problem(LimitTooLarge),
        problem(InvalidCursor)
      ]
    })
      .annotate(OpenApi.Summary, "Change feed (mirror)")
      .annotate(
        OpenApi.Description,
        "Every work, release, character, credit name, person, company, tag and engine, listed once at its latest " +
          "change, in commit order. A cold start pages through the whole population once; later polls " +
          "return only increments. A transaction that commits late never lands behind a cursor already handed " +
          "out, so a mirror that keeps polling while writers commit ends up identical to the catalog. " +
          "`updated_at` is when the change was committed and never decreases along the feed; it is not the " +
          "sort key. `gone: true` (never `false`) means the id left the population " +
          "(merged away or withdrawn): drop the row; `GET /v2/catalog/redirects` names the replacement of a " +
          "merged id. A row can come back (a later change without `gone`). " +
          `${paging} ${contentGate}`
      )
  )
  .add(
    HttpApiEndpoint.get("listRedirects", "/v2/catalog/redirects", {
      query: FeedParams,
      success: ListRedirect,
      error: [
        problem(LimitTooLarge),
        problem(InvalidCursor)
      ]
    })
      .annotate(OpenApi.Summary, "Merge map (redirects)")
      .annotate(
        OpenApi.Description,
        "Maps each merged-away id to the live id that replaced it, chains already followed: when X was merged " +
          "into Y and Y later into Z, X's `current_id` becomes Z and X's entry is listed again. " +
          "Same commit-order paging as the change feed: a mirror keeps one cursor per feed and " +
          `applies entries as upserts keyed by (\`target_object\`, \`from_id\`). ${paging} Content gate: ` +
          "an `sfw` credential is not shown redirects from or to an nsfw work, release or character."
      )
  )
  .middleware(Authorization)
  .annotate(HttpApi.QueryParseOptions, strict)
  .annotate(RequiredScope, "catalog:read")
  .annotate(OpenApi.Title, "Mirroring")
  .annotate(
    OpenApi.Description,
    "Pull-based interfaces for keeping a full copy of the catalog: the change feed and the merge map."
  )
{}
