/**
 * Avatars' bytes are kept in the MediaStore (README, "Self-service accounts"; src/identity/account/Avatars.ts):
 * an upload's file lies under `SHIORI_DATA_DIR/media/avatars` and its `avatars` row holds only the
 * metadata; the cleanup job (src/identity/cleanup/Cleanup.ts) removes the file of an avatar it
 * sweeps, but not one an upload of the same bytes records again meanwhile; migrations/0030 moves
 * the bytes of a database of the earlier schema into the store and drops the column.
 */
import { PgClient } from "@effect/sql-pg"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Context, Deferred, Effect, Fiber, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import sharp from "sharp"
import { lockAvatarFile } from "../../src/identity/account/Avatars.js"
import { IdentityCleanup } from "../../src/identity/cleanup/Cleanup.js"
import { IdentityConfig } from "../../src/identity/shared/IdentityConfig.js"
import { DatabaseUrl } from "../../src/platform/Database.js"
import { ImagePresets, processImage } from "../../src/platform/Images.js"
import { MediaStore } from "../../src/platform/MediaStore.js"
import { postAvatar } from "../support/Avatars.js"
import { eventually } from "../support/Eventually.js"
import { createUser, IdentityServers, IdentityTestEnv, login, serverLayerOptions } from "../support/IdentityServers.js"
import { sha256 } from "../support/Media.js"
import { migrateUpTo, newTestDatabase, temporaryDirectory } from "../support/TestDatabase.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

/** Where the file store of the data directory `dataDir` keeps the avatar `hash`. */
const avatarFile = (dataDir: string, hash: string) =>
  Path.join(dataDir, "media", "avatars", hash.slice(0, 2), `${hash}.webp`)

const readFile = (file: string) =>
  promise(() => Fs.promises.readFile(file).then((bytes) => new Uint8Array(bytes), () => undefined))

/** A 32x32 PNG of one colour: each colour is another avatar. */
const picture = (background: string) =>
  promise(() => sharp({ create: { width: 32, height: 32, channels: 3, background } }).png().toBuffer())

const uploadAvatar = (identity: string, token: string, bytes: Uint8Array) =>
  Effect.map(postAvatar(identity, token, bytes), (res) => {
    expect(res.status).toBe(200)
    const picture = (res.body as { data: { picture: string } }).data.picture
    return { picture, hash: /([0-9a-f]{64})\.webp$/u.exec(picture)![1]! }
  })

const fetchBytes = (url: string) =>
  promise(async () => {
    const res = await fetch(url)
    return { res, bytes: new Uint8Array(await res.arrayBuffer()) }
  })

const avatarColumns = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.map(
    sql<{ column_name: string }>`
      SELECT column_name FROM information_schema.columns WHERE table_name = 'avatars' ORDER BY column_name
    `,
    (rows) => rows.map((row) => row.column_name)
  ))

const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "shiori-avatars-"))
afterAll(() => Fs.rmSync(dataDir, { recursive: true, force: true }))

/** The servers, their cleanup job not running by itself, and one to run here. */
const Env = IdentityCleanup.layerWithoutDependencies.pipe(
  Layer.provide(IdentityConfig.layer),
  Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: { IDENTITY_CLEANUP_INTERVAL_SECONDS: "0" } }))),
  Layer.provideMerge(IdentityTestEnv({ SHIORI_DATA_DIR: dataDir, IDENTITY_CLEANUP_INTERVAL_SECONDS: "0" }))
)

/** Makes the avatar `hash` two days old: the sweep takes it once no account shows it. */
const age = (hash: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`UPDATE avatars SET created_at = now() - interval '2 days' WHERE sha256 = ${hash}`
  )

describe("avatars in the MediaStore", () => {
  it.layer(Env, serverLayerOptions)((it) => {
    it.effect("an upload's file is under SHIORI_DATA_DIR/media/avatars, named by its SHA-256; the row holds no bytes", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const user = yield* createUser()
        const { accessToken } = yield* promise(() => login(identity, user))
        const { picture: url, hash } = yield* uploadAvatar(identity, accessToken, yield* picture("#123456"))

        const file = yield* readFile(avatarFile(dataDir, hash))
        expect(file).toBeDefined()
        expect(sha256(file!)).toBe(hash)
        const served = yield* fetchBytes(url)
        expect(served.res.status).toBe(200)
        expect(served.res.headers.get("content-type")).toBe("image/webp")
        expect(Buffer.from(served.bytes).equals(Buffer.from(file!))).toBe(true)

        expect(yield* avatarColumns).toEqual(["content_type", "created_at", "height", "sha256", "size_bytes", "width"])
        const sql = yield* SqlClient.SqlClient
        const [row] = yield* sql<{ content_type: string; size_bytes: number; width: number; height: number }>`
          SELECT content_type, size_bytes, width, height FROM avatars WHERE sha256 = ${hash}
        `
        expect(row).toEqual({ content_type: "image/webp", size_bytes: file!.length, width: 256, height: 256 })
      }))

    it.effect("the sweep removes the file of an avatar no account shows, and keeps the one in use", () =>
      Effect.gen(function*() {
        const { identity, issuer } = yield* IdentityServers
        const user = yield* createUser()
        const { accessToken } = yield* promise(() => login(identity, user))
        const old = yield* uploadAvatar(identity, accessToken, yield* picture("#aa0000"))
        const current = yield* uploadAvatar(identity, accessToken, yield* picture("#00aa00"))
        yield* age(old.hash)
        yield* age(current.hash)

        expect((yield* (yield* IdentityCleanup).run()).avatars).toBe(1)
        expect(yield* readFile(avatarFile(dataDir, old.hash))).toBeUndefined()
        expect((yield* fetchBytes(`${issuer}/avatars/${old.hash}.webp`)).res.status).toBe(404)
        expect(yield* readFile(avatarFile(dataDir, current.hash))).toBeDefined()
        expect((yield* fetchBytes(current.picture)).res.status).toBe(200)
      }))

    it.effect("an upload of the same bytes that records the swept avatar again before its file is removed keeps the file", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const sql = yield* SqlClient.SqlClient
        const media = yield* MediaStore
        const user = yield* createUser()
        const { accessToken } = yield* promise(() => login(identity, user))
        const swept = yield* uploadAvatar(identity, accessToken, yield* picture("#0000aa"))
        yield* uploadAvatar(identity, accessToken, yield* picture("#aaaa00"))
        yield* age(swept.hash)
        const bytes = (yield* readFile(avatarFile(dataDir, swept.hash)))!

        // An upload of the swept avatar's bytes, the way Avatars.ts writes one, paused under the
        // avatar's lock until the sweep has deleted the row and waits for that lock.
        const locked = yield* Deferred.make<void>()
        const resume = yield* Deferred.make<void>()
        const upload = yield* Effect.gen(function*() {
          yield* lockAvatarFile(sql, swept.hash)
          yield* Deferred.succeed(locked, undefined)
          yield* Deferred.await(resume)
          yield* media.put("avatars", swept.hash, bytes, "image/webp")
          yield* sql`
            INSERT INTO avatars (sha256, content_type, size_bytes, width, height)
            VALUES (${swept.hash}, 'image/webp', ${bytes.length}, 256, 256)
            ON CONFLICT (sha256) DO UPDATE SET created_at = now()
          `
          yield* sql`UPDATE users SET avatar_sha256 = ${swept.hash} WHERE id = ${user.id}`
        }).pipe(sql.withTransaction, Effect.forkChild)
        yield* Deferred.await(locked)
        const sweep = yield* (yield* IdentityCleanup).run().pipe(Effect.forkChild)
        yield* eventually(
          Effect.gen(function*() {
            const rows = yield* sql`SELECT 1 FROM avatars WHERE sha256 = ${swept.hash}`
            expect(rows).toEqual([])
            const waiting = yield* sql`
            SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = 7 AND objsubid = 2 AND NOT granted
          `
            expect(waiting.length).toBe(1)
          }),
          { timeoutMs: 30_000 }
        )
        yield* Deferred.succeed(resume, undefined)
        yield* Fiber.join(upload)
        expect((yield* Fiber.join(sweep)).avatars).toBe(1)

        expect(yield* readFile(avatarFile(dataDir, swept.hash))).toEqual(bytes)
        const served = yield* fetchBytes(swept.picture)
        expect(served.res.status).toBe(200)
        expect(served.bytes).toEqual(bytes)
      }))
  })
})

describe("migrations/0030 over avatars of the earlier schema", () => {
  it.live(
    "every avatar's bytes move into the store byte for byte, in batches; the column is dropped; they are served as before",
    () =>
      Effect.gen(function*() {
        const directory = yield* temporaryDirectory("shiori-avatars-migration-")
        const url = yield* newTestDatabase()
        const database = yield* Layer.build(
          Layer.mergeAll(PgClient.layer({ url }), MediaStore.files(Path.join(directory, "media")))
        )
        const sql = Context.get(database, SqlClient.SqlClient)
        yield* migrateUpTo(29).pipe(Effect.provide(database))
        expect(yield* avatarColumns.pipe(Effect.provide(database))).toContain("bytes")

        // Three avatars the pipeline made, and more rows than two batches of the migration hold.
        const avatars: Array<{ readonly hash: string; readonly bytes: Uint8Array }> = []
        for (const background of ["#102030", "#405060", "#708090"]) {
          const image = yield* processImage(yield* picture(background), ImagePresets.avatar)
          avatars.push({ hash: image.sha256, bytes: new Uint8Array(image.bytes) })
        }
        for (let i = 0; i < 230; i++) {
          const bytes = new Uint8Array(Crypto.randomBytes(40 + (i % 50)))
          avatars.push({ hash: sha256(bytes), bytes })
        }
        for (const { hash, bytes } of avatars) {
          yield* sql`
            INSERT INTO avatars (sha256, content_type, bytes, width, height)
            VALUES (${hash}, 'image/webp', ${bytes}, 256, 256)
          `
        }
        const shown = avatars[0]!
        yield* sql`
          INSERT INTO users (sub, email, password_hash, avatar_sha256)
          VALUES (gen_random_uuid(), 'avatar-migration@example.com', 'x', ${shown.hash})
        `

        const applied = yield* migrateUpTo(Number.MAX_SAFE_INTEGER).pipe(Effect.provide(database))
        expect(applied.map(([id]) => id)).toContain(30)
        expect(yield* avatarColumns.pipe(Effect.provide(database))).not.toContain("bytes")
        for (const { hash, bytes } of avatars) {
          const file = yield* readFile(avatarFile(directory, hash))
          expect(file).toEqual(bytes)
          expect(sha256(file!)).toBe(hash)
        }
        const sizes = yield* sql<{ sha256: string; size_bytes: number }>`SELECT sha256, size_bytes FROM avatars`
        expect(sizes.length).toBe(avatars.length)
        const sizeOf = new Map(sizes.map((row) => [row.sha256, row.size_bytes]))
        expect(avatars.every(({ hash, bytes }) => sizeOf.get(hash) === bytes.length)).toBe(true)
        const [user] = yield* sql<{ avatar_sha256: string }>`
          SELECT avatar_sha256 FROM users WHERE email = 'avatar-migration@example.com'
        `
        expect(user!.avatar_sha256).toBe(shown.hash)

        // The servers over the migrated database and this data directory serve them as before.
        const servers = yield* Layer.build(
          IdentityTestEnv({ SHIORI_DATA_DIR: directory, IDENTITY_CLEANUP_INTERVAL_SECONDS: "0" }, {
            database: Layer.succeed(DatabaseUrl, url)
          })
        )
        const { issuer } = Context.get(servers, IdentityServers)
        for (const { hash, bytes } of [shown, avatars[1]!, avatars[2]!, avatars[200]!]) {
          const served = yield* fetchBytes(`${issuer}/avatars/${hash}.webp`)
          expect(served.res.status).toBe(200)
          expect(served.res.headers.get("content-type")).toBe("image/webp")
          expect(served.res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable")
          expect(served.bytes).toEqual(bytes)
        }
      }).pipe(Effect.orDie),
    { timeout: 180_000 }
  )
})
