/**
 * The caller's address, for both servers: the key of every per-address limit (the identity
 * provider's sign-in, the token endpoint's failed client authentications, authorize, userinfo,
 * revocation; the catalog's unknown API keys) and what a session records.
 *
 * `X-Forwarded-For` is believed only from the proxies named in `TRUSTED_PROXIES` (comma-separated
 * addresses and CIDR blocks). Anyone else can write that header, so without the setting the socket's
 * peer is the client. Behind a reverse proxy that is the proxy for every request, so all users share
 * one bucket of each per-address limit: a deployment behind a proxy must name it.
 *
 * When the peer is a trusted proxy, the list is walked from the right (the entry the nearest proxy
 * appended) past every trusted proxy; the first address that is not one is the client (RFC 7239
 * section 7.4: only entries added by trusted proxies are reliable, the leftmost one least of all).
 * A malformed entry ends the walk at the last proxy that passed it on, so made-up text never becomes
 * a bucket key.
 */
import { Config, Effect, Option, Result, Schema, SchemaIssue } from "effect"
import type { HttpServerRequest } from "effect/http"
import * as Net from "node:net"

export interface TrustedProxies {
  /** The setting as given, normalised (for logs and tests). */
  readonly entries: ReadonlyArray<string>
  readonly contains: (address: string) => boolean
}

export const NO_TRUSTED_PROXIES: TrustedProxies = { entries: [], contains: () => false }

/** An IPv4-mapped IPv6 address (`::ffff:192.0.2.1`) is its IPv4 address; a zone index is dropped. */
const normalize = (address: string): string => {
  const unzoned = address.replace(/%.*$/, "")
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(unzoned)
  return (mapped === null ? unzoned : mapped[1]!).toLowerCase()
}

/**
 * Parses `TRUSTED_PROXIES`: `10.0.0.1, 10.1.0.0/16, fd00::/8`. A failure: what is wrong with it.
 */
export const parseTrustedProxies = (value: string): Result.Result<TrustedProxies, string> => {
  const list = new Net.BlockList()
  const entries: Array<string> = []
  for (const raw of value.split(",")) {
    const entry = raw.trim()
    if (entry === "") continue
    const [address = "", bits, ...rest] = entry.split("/")
    const ip = normalize(address)
    const family = Net.isIP(ip)
    if (family === 0 || rest.length > 0) return Result.fail(`TRUSTED_PROXIES: not an address or CIDR block: ${entry}`)
    const type = family === 4 ? "ipv4" : "ipv6"
    if (bits === undefined) {
      list.addAddress(ip, type)
      entries.push(ip)
      continue
    }
    const prefix = Number(bits)
    if (!/^\d{1,3}$/.test(bits) || prefix > (family === 4 ? 32 : 128)) {
      return Result.fail(`TRUSTED_PROXIES: bad prefix length in ${entry}`)
    }
    list.addSubnet(ip, prefix, type)
    entries.push(`${ip}/${prefix}`)
  }
  if (entries.length === 0) return Result.succeed(NO_TRUSTED_PROXIES)
  return Result.succeed({
    entries,
    contains: (address) => {
      const family = Net.isIP(address)
      return family !== 0 && list.check(address, family === 4 ? "ipv4" : "ipv6")
    }
  })
}

/**
 * `TRUSTED_PROXIES`, read by every server that keys a limit by address (the identity provider; the
 * catalog's failed-credential throttle); unset or empty: no proxy is believed.
 */
export const trustedProxiesConfig: Config.Config<TrustedProxies> = Config.String("TRUSTED_PROXIES").pipe(
  Config.withDefault(""),
  Config.mapEffect((value) =>
    parseTrustedProxies(value).pipe(
      Result.mapError((message) =>
        new Config.ConfigError(
          new Schema.SchemaError(
            new SchemaIssue.Pointer(["TRUSTED_PROXIES"], new SchemaIssue.InvalidValue({ message }))
          )
        )
      ),
      Effect.fromResult
    )
  )
)

/** One `X-Forwarded-For` entry as an address: `192.0.2.1`, `192.0.2.1:443`, `[2001:db8::1]:443`. */
const parseHop = (entry: string): string | undefined => {
  let text = entry.trim()
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(text)
  if (bracketed !== null) text = bracketed[1]!
  else if (/^\d{1,3}(?:\.\d{1,3}){3}:\d+$/.test(text)) text = text.slice(0, text.lastIndexOf(":"))
  const address = normalize(text)
  return Net.isIP(address) === 0 ? undefined : address
}

/** More entries than any real proxy chain has are not read (the header's size is the client's choice). */
const MAX_HOPS = 32

/** The client's address from the socket's peer and the `X-Forwarded-For` header (see the module comment). */
export const resolveClientAddress = (
  peer: string | undefined,
  forwardedFor: string | undefined,
  proxies: TrustedProxies
): string => {
  if (peer === undefined || peer === "") return "unknown"
  let nearest = normalize(peer)
  if (forwardedFor === undefined || !proxies.contains(nearest)) return nearest
  const hops = forwardedFor.split(",")
  for (let i = hops.length - 1; i >= Math.max(0, hops.length - MAX_HOPS); i--) {
    const hop = parseHop(hops[i]!)
    if (hop === undefined) return nearest
    if (!proxies.contains(hop)) return hop
    nearest = hop
  }
  return nearest
}

/** The one place a request's client address comes from. */
export const clientAddress = (request: HttpServerRequest.HttpServerRequest, proxies: TrustedProxies): string =>
  resolveClientAddress(Option.getOrUndefined(request.remoteAddress), request.headers["x-forwarded-for"], proxies)

/** The eight 16-bit groups of an IPv6 address, as numbers. */
const ipv6Groups = (address: string): Array<number> => {
  let text = address
  const v4 = /(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text)
  if (v4 !== null) {
    const [a, b, c, d] = v4.slice(1).map(Number) as [number, number, number, number]
    text = `${text.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head = "", tail] = text.split("::")
  const left = head === "" ? [] : head.split(":")
  const right = tail === undefined || tail === "" ? [] : tail.split(":")
  const fill = tail === undefined ? [] : Array.from({ length: 8 - left.length - right.length }, () => "0")
  return [...left, ...fill, ...right].map((group) => parseInt(group, 16))
}

/**
 * The key a per-address limit counts under: an IPv4 address itself, an IPv6 address its /64. One
 * IPv6 subscriber gets at least a /64 and can use any address in it, so counting single addresses
 * would hand each of them 2^64 fresh buckets.
 */
export const addressBucket = (address: string): string => {
  if (Net.isIPv6(address)) {
    return `${ipv6Groups(address).slice(0, 4).map((group) => group.toString(16)).join(":")}::/64`
  }
  return address
}
