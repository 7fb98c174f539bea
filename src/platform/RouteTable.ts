/**
 * The declared routes of an HttpApi, for the parts of request handling that happen outside the
 * router: 405 with `Allow` for a known path, re-decoding a failed request to report every field,
 * and the required scope of an endpoint.
 */
import { type Context, Layer } from "effect"
import { HttpRouter } from "effect/http"
import type { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { HttpApi } from "effect/http-api"

/**
 * The platform's router (find-my-way) collapses "//" in the whole request target before it splits
 * off the query, so a value RFC 3986 section 3.4 allows unencoded, `redirect_uri=https://rp.example/cb`,
 * reached handlers as `https:/rp.example/cb` (and `q=a//b` as `a/b`). Both servers turn that off:
 * query values arrive as sent, and a path with "//" is not one of ours (404).
 *
 * The router also matches no path parameter longer than 100 characters, so `/v2/claims/<1000 digits>`
 * was "not found" for its method while the route table knew the path: a 405 naming the very method
 * sent. The limit is lifted to the longest request line Node reads (16 KiB of headers): every path
 * parameter reaches its schema, which answers a too-long one as the bad parameter it is.
 */
export const ExactSlashes = Layer.succeed(HttpRouter.RouterConfig)({
  ignoreDuplicateSlashes: false,
  maxParamLength: 16_384
})

export interface RouteEntry {
  readonly method: string
  readonly path: string
  readonly pattern: RegExp
  readonly paramNames: ReadonlyArray<string>
  readonly endpoint: HttpApiEndpoint.Top
  readonly group: HttpApiGroup.Top
  readonly annotations: Context.Context<never>
}

export interface RouteMatch {
  readonly route: RouteEntry
  readonly params: Record<string, string>
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

const compile = (path: string) => {
  const paramNames: Array<string> = []
  const source = path
    .split("/")
    .map((segment) => {
      if (segment.startsWith(":")) {
        paramNames.push(segment.slice(1).replace(/\?$/, ""))
        return "([^/]+)"
      }
      return escape(segment)
    })
    .join("/")
  return { pattern: new RegExp(`^${source}/?$`), paramNames }
}

export class RouteTable {
  constructor(readonly routes: ReadonlyArray<RouteEntry>) {}

  static fromApi<Id extends string, Groups extends HttpApiGroup.Constraint>(
    api: HttpApi.HttpApi<Id, Groups>
  ): RouteTable {
    const routes: Array<RouteEntry> = []
    HttpApi.reflect(api, {
      onGroup() {},
      onEndpoint({ endpoint, group, mergedAnnotations }) {
        routes.push({
          method: endpoint.method,
          path: endpoint.path,
          ...compile(endpoint.path),
          endpoint,
          group,
          annotations: mergedAnnotations
        })
      }
    })
    return new RouteTable(routes)
  }

  match(method: string, pathname: string): RouteMatch | undefined {
    for (const route of this.routes) {
      if (route.method !== method && !(method === "HEAD" && route.method === "GET")) continue
      const m = route.pattern.exec(pathname)
      if (m) return { route, params: Object.fromEntries(route.paramNames.map((n, i) => [n, decodeParam(m[i + 1]!)])) }
    }
    return undefined
  }

  /** Methods declared for a path, for `Allow`. Empty when the path is unknown. */
  allowed(pathname: string): ReadonlyArray<string> {
    const methods = new Set<string>()
    for (const route of this.routes) if (route.pattern.test(pathname)) methods.add(route.method)
    if (methods.has("GET")) methods.add("HEAD")
    return [...methods].sort()
  }
}

const decodeParam = (raw: string): string => {
  try {
    return decodeURIComponent(raw)
  } catch {
    return raw
  }
}
