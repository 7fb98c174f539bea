import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { CatalogApi } from "../../../schema/Api/CatalogApi.js"
import { NotFound, problemCodeList, ProblemCodes, problemSlug, reasonList, Reasons } from "../../../schema/Problem.js"
import type { ProblemCode } from "../../../schema/Problem.js"
import { runToCompletion } from "../../platform/HttpListener.js"

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" })[c]!)

const reasonItems = reasonList.map((reason) => ({
  object: "reason" as const,
  reason,
  param_names: [...Reasons[reason].params],
  description: Reasons[reason].description
}))

const bySlug = new Map<string, ProblemCode>(problemCodeList.map((code) => [problemSlug(code), code]))

const page = (code: ProblemCode) => {
  const { description, status, title } = ProblemCodes[code]
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)} — shiori problem</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><main>
<h1>${escapeHtml(title)}</h1>
<dl><dt>code</dt><dd><code>${code}</code></dd><dt>HTTP status</dt><dd>${status}</dd></dl>
<p>${escapeHtml(description).replace(/`([^`]+)`/g, "<code>$1</code>")}</p>
<p>Branch on the HTTP status, then on <code>code</code>; never on <code>detail</code> or <code>title</code>.
Field-level reasons are listed at <a href="/v2/problems/reasons">/v2/problems/reasons</a>.</p>
</main></body></html>`
}

export const HttpProblemsLive = HttpApiBuilder.group(CatalogApi, "problems", (handlers) =>
  handlers
    .handle("listReasons", () => Effect.succeed({ object: "list", items: reasonItems } as const), runToCompletion)
    .handle("problemType", ({ params }) => {
      const code = bySlug.get(`${params.domain}/${params.slug}`)
      return code === undefined
        ? Effect.fail(new NotFound({ detail: "No problem type with this name." }))
        : Effect.succeed(page(code))
    }, runToCompletion))
