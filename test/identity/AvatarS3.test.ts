/**
 * Avatars kept in an S3-compatible bucket (README, "Self-service accounts"; docs/writing.md, "Editor
 * images": where the bytes are kept): the identity server started with `SHIORI_MEDIA_STORE=s3` stores
 * an avatar as the object `avatars/<hash>` and serves it back; with the store gone, an upload and a
 * read are 503 `SERVICE_UNAVAILABLE` with `Retry-After` (the identity envelope), and the account keeps
 * its picture.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import sharp from "sharp"
import { postAvatar } from "../support/Avatars.js"
import { createUser, IdentityServers, IdentityTestEnv, login, serverLayerOptions } from "../support/IdentityServers.js"
import { sha256 } from "../support/Media.js"
import { S3Store, S3StoreLive } from "../support/S3Store.js"

const png = (background: string) =>
  Effect.promise(() =>
    sharp({ create: { width: 24, height: 24, channels: 3, background } }).png().toBuffer().then((b) =>
      new Uint8Array(b)
    )
  )
const Env = Layer.unwrap(Effect.map(S3Store, (s3) => IdentityTestEnv({ ...s3.settings }))).pipe(
  Layer.provideMerge(S3StoreLive)
)

describe("avatars in an S3-compatible bucket", () => {
  it.layer(Env, serverLayerOptions)((it) => {
    it.effect("an avatar is the object avatars/<hash>; with the store gone, upload and read are 503", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const s3 = yield* S3Store
        const user = yield* createUser()
        const { accessToken } = yield* Effect.promise(() => login(identity, user))

        const stored = yield* postAvatar(identity, accessToken, yield* png("#2a6f3c"))
        expect(stored.status, JSON.stringify(stored.body)).toBe(200)
        const picture = (stored.body as { data: { picture: string } }).data.picture
        const hash = /([0-9a-f]{64})\.webp$/u.exec(picture)![1]!
        expect(yield* s3.keys("avatars/")).toEqual([`avatars/${hash}`])
        const object = yield* s3.object(`avatars/${hash}`)
        expect(Option.map(object, (o) => [sha256(o.bytes), o.contentType])).toEqual(Option.some([hash, "image/webp"]))
        const served = yield* Effect.promise(async () => {
          const res = await fetch(picture)
          return { status: res.status, bytes: new Uint8Array(await res.arrayBuffer()) }
        })
        expect(served.status).toBe(200)
        expect(sha256(served.bytes)).toBe(hash)

        yield* s3.stop
        const refused = yield* postAvatar(identity, accessToken, yield* png("#8a1f5c"))
        expect(refused.status).toBe(503)
        expect(refused.headers.get("retry-after")).toBe("5")
        expect(refused.body).toMatchObject({ code: 50301 })
        const read = yield* Effect.promise(() => fetch(picture))
        expect(read.status).toBe(503)
        const me = yield* Effect.promise(async () => {
          const res = await fetch(`${identity}/api/v1/auth/me`, { headers: { authorization: `Bearer ${accessToken}` } })
          return (await res.json()) as { data: { picture: string } }
        })
        expect(me.data.picture).toBe(picture)
      }))
  })
})
