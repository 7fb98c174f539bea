/**
 * A write credential always has a tenant (docs/writing.md, "Who may write"): a catalog write acts
 * for a site, so an API key or an OAuth client that may write is registered for one. The catalog
 * scopes that write are all of them but `catalog:read`; the OpenID Connect scopes are not catalog
 * scopes.
 */
import { Effect, Option } from "effect"
import { Scopes } from "../../schema/Annotations.js"
import { fail } from "./Output.js"

const catalogWriteScopes: ReadonlyArray<string> = Scopes.filter((scope) => scope !== "catalog:read")

/** The write scopes among `scopes`, in their order, each once. */
export const writeScopesOf = (scopes: ReadonlyArray<string>): ReadonlyArray<string> => [
  ...new Set(scopes.filter((scope) => catalogWriteScopes.includes(scope)))
]

/**
 * Fails with a message naming the write scopes when `scopes` hold one and `site` is absent or blank:
 * such a credential could write with no site to answer for it.
 */
export const requireSiteForWrites = (
  what: string,
  scopes: ReadonlyArray<string>,
  site: Option.Option<string> | string | null
) => {
  const writes = writeScopesOf(scopes)
  const named = typeof site === "string" ? site : site === null ? "" : Option.getOrElse(site, () => "")
  return writes.length > 0 && named.trim() === ""
    ? fail(
      `${what} with a write scope (${writes.join(", ")}) needs a site: give --site <site>. ` +
        "A catalog write acts for a site, so a credential that may write always belongs to one."
    )
    : Effect.void
}
