/**
 * The application directory (`GET /oauth/client-info`, `GET /oauth/ecosystem`) and the
 * service-to-service user lookup (`GET /users/batch`, `GET /users/search`) through real HTTP
 * (src/identity/directory/Directory.ts).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import { Clients } from "../../src/identity/clients/Clients.js"
import { Users } from "../../src/identity/users/Users.js"
import { DatabaseUrl } from "../../src/platform/Database.js"
import { runCli } from "../support/Cli.js"
import type { TestClient } from "../support/IdentityServers.js"
import {
  createClient,
  createUser,
  IdentityServers,
  IdentityTestEnv,
  serverLayerOptions
} from "../support/IdentityServers.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const getJson = (url: string, headers: Record<string, string> = {}) =>
  promise(async () => {
    const res = await fetch(url, { headers })
    return { status: res.status, headers: res.headers, body: await res.json() as any }
  })

/** RFC 6749 section 2.3.1: id and secret form-urlencoded, then RFC 7617 Basic. */
const basic = (id: string, secret: string) => ({
  authorization: `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString("base64")}`
})

const as = (client: TestClient) => basic(client.clientId, client.secret!)

const suffix = () => Math.random().toString(36).slice(2, 8)

describe("application directory and user lookup", () => {
  it.layer(IdentityTestEnv(), serverLayerOptions)((it) => {
    it.effect("client-info answers a known client's listing (cacheable, RFC 9111) and 404 envelope 15001 otherwise", () =>
      Effect.gen(function*() {
        const { issuer } = yield* IdentityServers
        const clients = yield* Clients
        const client = yield* createClient({ name: "Portal", logoUrl: "https://portal.example/logo.png" })
        yield* clients.update(client.clientId, {
          listing: { tagline: "Read visual novels", homepageUrl: "https://portal.example/" }
        })
        const known = yield* getJson(`${issuer}/oauth/client-info?client_id=${client.clientId}`)
        expect(known.status).toBe(200)
        expect(known.headers.get("cache-control")).toBe("public, max-age=60")
        expect(known.body).toEqual({
          code: 0,
          message: "ok",
          data: {
            client_id: client.clientId,
            name: "Portal",
            logo_url: "https://portal.example/logo.png",
            tagline: "Read visual novels",
            homepage_url: "https://portal.example/"
          }
        })
        const unknown = yield* getJson(`${issuer}/oauth/client-info?client_id=no-such-client`)
        expect(unknown.status).toBe(404)
        expect(unknown.body).toMatchObject({ code: 15001, data: null })
        // A malformed request under /oauth/ is still the envelope, not RFC 6749 JSON.
        const missing = yield* getJson(`${issuer}/oauth/client-info`)
        expect(missing.status).toBe(400)
        expect(missing.body).toMatchObject({ code: 40001 })
        // Listing fields are https (or loopback http) URLs of bounded length.
        const refused = yield* Effect.flip(
          clients.update(client.clientId, { listing: { homepageUrl: "http://a.example/" } })
        )
        expect(refused._tag).toBe("ClientInputError")
        expect((yield* Effect.flip(clients.update(client.clientId, { listing: { tagline: "x".repeat(201) } })))._tag)
          .toBe("ClientInputError")
      }))

    it.effect("ecosystem lists only listed clients, by display_order then client_id", () =>
      Effect.gen(function*() {
        const { issuer } = yield* IdentityServers
        const clients = yield* Clients
        const [a, b, c, hidden] = yield* Effect.all([createClient(), createClient(), createClient(), createClient()])
        yield* clients.update(a!.clientId, { listing: { listed: true, displayOrder: 20 } })
        yield* clients.update(b!.clientId, { listing: { listed: true, displayOrder: 10 } })
        yield* clients.update(c!.clientId, { listing: { listed: true, displayOrder: 20 } })
        yield* clients.update(hidden!.clientId, { listing: { listed: false, displayOrder: 0 } })
        const res = yield* getJson(`${issuer}/oauth/ecosystem`)
        expect(res.status).toBe(200)
        expect(res.headers.get("cache-control")).toBe("public, max-age=60")
        const ids = (res.body.data.items as Array<any>).map((item) => item.client_id)
        const mine = [a!, b!, c!].map((x) => x.clientId)
        const sameOrder = [...mine.slice(0, 1), ...mine.slice(2)].sort()
        expect(ids.filter((id) => mine.includes(id))).toEqual([b!.clientId, ...sameOrder])
        expect(ids).not.toContain(hidden!.clientId)
        expect(Object.keys(res.body.data.items[0]).sort()).toEqual(
          ["client_id", "homepage_url", "logo_url", "name", "tagline"]
        )
      }))

    it.effect("users/batch with client Basic credentials (RFC 6749 2.3.1) answers site_roles of the client's site, no email, missing[] in request order", () =>
      Effect.gen(function*() {
        const { issuer } = yield* IdentityServers
        const users = yield* Users
        const site = `site_${suffix()}`
        const client = yield* createClient({ site })
        const siteless = yield* createClient()
        const [alice, bob] = yield* Effect.all([createUser({ name: "Alice", roles: ["creator"] }), createUser()])
        yield* users.grantRole(alice.id, "editor", Option.some(site))
        yield* users.grantRole(alice.id, "judge", Option.some("another_site"))
        yield* users.setBanned(bob.id, true)
        const unknown = 9_000_000_000
        const res = yield* getJson(`${issuer}/users/batch?ids=${bob.id},${unknown},${alice.id},${bob.id}`, as(client))
        expect(res.status).toBe(200)
        expect(res.headers.get("cache-control")).toBe("no-store")
        expect(res.body.code).toBe(0)
        expect(res.body.data.missing).toEqual([unknown])
        // Banned users are still answered: a site keeps showing who wrote what.
        expect(res.body.data.items.map((u: any) => u.id)).toEqual([bob.id, alice.id])
        expect(res.body.data.items[1]).toEqual({
          id: alice.id,
          sub: alice.sub,
          name: "Alice",
          picture: "",
          roles: ["creator"],
          site_roles: ["editor"]
        })
        expect(JSON.stringify(res.body)).not.toContain("@example.com")
        // A client without a site sees no site roles.
        const plain = yield* getJson(`${issuer}/users/batch?ids=${alice.id}`, as(siteless))
        expect(plain.body.data.items[0].site_roles).toEqual([])
        // At most 100 ids: 101 is a 400 envelope.
        const many = Array.from({ length: 101 }, (_, i) => i + 1).join(",")
        const tooMany = yield* getJson(`${issuer}/users/batch?ids=${many}`, as(client))
        expect(tooMany.status).toBe(400)
        expect(tooMany.body).toMatchObject({ code: 40001 })
        const hundred = yield* getJson(
          `${issuer}/users/batch?ids=${Array.from({ length: 100 }, (_, i) => i + 1).join(",")}`,
          as(client)
        )
        expect(hundred.status).toBe(200)
      }))

    it.effect("a wrong or missing secret is 401 envelope 15008 with WWW-Authenticate: Basic (RFC 7617 section 2); a public client is 403 15011", () =>
      Effect.gen(function*() {
        const { issuer } = yield* IdentityServers
        const client = yield* createClient()
        const spa = yield* createClient({ public: true })
        const user = yield* createUser()
        const url = `${issuer}/users/batch?ids=${user.id}`
        for (
          const headers of [
            basic(client.clientId, `${client.secret}x`),
            basic("no-such-client", "whatever-secret-of-length"),
            {},
            { authorization: "Basic !!!" },
            { authorization: `Bearer ${client.secret}` }
          ]
        ) {
          const res = yield* getJson(url, headers)
          expect(res.status).toBe(401)
          expect(res.body).toMatchObject({ code: 15008, data: null })
          expect(res.headers.get("www-authenticate")).toMatch(/^Basic realm="shiori"/)
        }
        for (const headers of [basic(spa.clientId, ""), basic(spa.clientId, "anything")]) {
          const res = yield* getJson(url, headers)
          expect(res.status).toBe(403)
          expect(res.body).toMatchObject({ code: 15011, data: null })
        }
        const search = yield* getJson(`${issuer}/users/search?q=a`, basic(client.clientId, "wrong"))
        expect(search.status).toBe(401)
        expect(search.body.code).toBe(15008)
      }))

    it.effect("users/search finds by name prefix (case-insensitive, LIKE characters literal) and by exact email, never answering the email", () =>
      Effect.gen(function*() {
        const { issuer } = yield* IdentityServers
        const client = yield* createClient()
        const prefix = `Zq${suffix()}`
        const [first, second, other, byEmail] = yield* Effect.all([
          createUser({ name: `${prefix} Beta` }),
          createUser({ name: `${prefix} Alpha` }),
          createUser({ name: `${prefix}_x` }),
          createUser({ name: "Somebody Else" })
        ])
        const byName = yield* getJson(
          `${issuer}/users/search?q=${encodeURIComponent(prefix.toLowerCase())}`,
          as(client)
        )
        expect(byName.status).toBe(200)
        expect(byName.body.data.items.map((u: any) => u.id)).toEqual([second.id, first.id, other.id])
        expect(JSON.stringify(byName.body)).not.toContain("@")
        const limited = yield* getJson(`${issuer}/users/search?q=${prefix}&limit=1`, as(client))
        expect(limited.body.data.items.map((u: any) => u.id)).toEqual([second.id])
        // "_" matches itself only, not any character.
        const literal = yield* getJson(`${issuer}/users/search?q=${prefix}_`, as(client))
        expect(literal.body.data.items.map((u: any) => u.id)).toEqual([other.id])
        const exact = yield* getJson(
          `${issuer}/users/search?q=${encodeURIComponent(byEmail.email.toUpperCase())}`,
          as(client)
        )
        expect(exact.body.data.items).toEqual([
          { id: byEmail.id, sub: byEmail.sub, name: "Somebody Else", picture: "", roles: [], site_roles: [] }
        ])
        // A part of an email is no match.
        const partial = yield* getJson(
          `${issuer}/users/search?q=${encodeURIComponent(byEmail.email.slice(0, 8))}`,
          as(client)
        )
        expect(partial.body.data.items).toEqual([])
        for (const query of ["", "x".repeat(257)]) {
          const bad = yield* getJson(`${issuer}/users/search?q=${query}`, as(client))
          expect(bad.status).toBe(400)
          expect(bad.body.code).toBe(40001)
        }
        const badLimit = yield* getJson(`${issuer}/users/search?q=a&limit=101`, as(client))
        expect(badLimit.status).toBe(400)
      }))

    it.effect(
      "client create|update set the listing: --tagline, --homepage-url, --display-order, --listed/--unlisted; URLs must be https or loopback http",
      () =>
        Effect.gen(function*() {
          const url = Redacted.value(yield* DatabaseUrl)
          const cli = (args: ReadonlyArray<string>) => promise(() => runCli(args, { DATABASE_URL: url }))
          const id = `cli-dir-${suffix()}`
          const created = yield* cli([
            ...["client", "create", "--client-id", id, "--public", "--redirect-uri", "https://a.example/cb"],
            ...["--name", "Dir App", "--logo-url", "http://127.0.0.1:5173/logo.png", "--tagline", "Hello"],
            ...["--homepage-url", "https://a.example/", "--display-order", "7", "--listed", "--json"]
          ])
          expect(created.code, created.stderr).toBe(0)
          expect(JSON.parse(created.stdout)).toMatchObject({
            client_id: id,
            name: "Dir App",
            logo_url: "http://127.0.0.1:5173/logo.png",
            tagline: "Hello",
            homepage_url: "https://a.example/",
            display_order: 7,
            listed: true
          })
          const updated = yield* cli(["client", "update", "--client-id", id, "--unlisted", "--tagline", "", "--json"])
          expect(updated.code, updated.stderr).toBe(0)
          expect(JSON.parse(updated.stdout)).toMatchObject({ listed: false, tagline: "", display_order: 7 })
          for (
            const args of [
              ["--homepage-url", "http://a.example/"],
              ["--logo-url", "javascript:alert(1)"],
              ["--tagline", "x".repeat(201)],
              ["--listed", "--unlisted"]
            ]
          ) {
            const refused = yield* cli(["client", "update", "--client-id", id, ...args])
            expect(refused.code).not.toBe(0)
            expect(refused.stderr).toMatch(/^error: /m)
          }
        }),
      { timeout: 120_000 }
    )

    it.effect("the directory endpoints are in the identity OpenAPI document", () =>
      Effect.gen(function*() {
        const { issuer } = yield* IdentityServers
        const doc = yield* getJson(`${issuer}/openapi.json`)
        for (
          const path of [
            "/api/v1/oauth/client-info",
            "/api/v1/oauth/ecosystem",
            "/api/v1/users/batch",
            "/api/v1/users/search"
          ]
        ) {
          expect(Object.keys(doc.body.paths)).toContain(path)
        }
      }))
  })
})
