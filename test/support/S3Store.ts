/**
 * An S3-compatible store for tests: s3rver (an S3 server in Node, https://github.com/jamhall/s3rver)
 * in this process, on 127.0.0.1 and a free port, over a temporary directory, with one bucket. It
 * gives the settings of the `s3` media store (src/platform/MediaStore.ts) that keep media in the
 * bucket, and a client of its own to look into the bucket.
 */
import { GetObjectCommand, ListObjectsV2Command, NoSuchKey, S3Client, type S3ClientConfig } from "@aws-sdk/client-s3"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import S3rver from "s3rver"
import type { S3MediaStoreOptions } from "../../src/platform/MediaStore.js"

/** s3rver's one pair of credentials: a request signed with others is refused. */
const accessKeyId = "S3RVER"
const secretAccessKey = "S3RVER"

export interface S3Object {
  readonly bytes: Uint8Array
  readonly contentType: string | undefined
}

export interface S3StoreShape {
  readonly endpoint: string
  readonly bucket: string
  /** Options of `MediaStore.s3` for the bucket, with `prefix`. */
  readonly options: (prefix?: string) => S3MediaStoreOptions
  /** The `SHIORI_MEDIA_*` settings of a server keeping its media in the bucket. */
  readonly settings: Readonly<Record<string, string>>
  /** The keys in the bucket that start with `prefix`, in order. */
  readonly keys: (prefix?: string) => Effect.Effect<ReadonlyArray<string>>
  /** The object under `key`, if any. */
  readonly object: (key: string) => Effect.Effect<Option.Option<S3Object>>
  /** Stops the server now (a request to it then finds nothing listening). */
  readonly stop: Effect.Effect<void>
}

export class S3Store extends Context.Service<S3Store, S3StoreShape>()("test/S3Store") {}

export const S3StoreLive = Layer.effect(
  S3Store,
  Effect.gen(function*() {
    const bucket = "shiori-media"
    const directory = yield* Effect.acquireRelease(
      Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "shiori-s3rver-"))),
      (directory) => Effect.sync(() => Fs.rmSync(directory, { recursive: true, force: true }))
    )
    const server = new S3rver({
      address: "127.0.0.1",
      port: 0,
      directory,
      silent: true,
      configureBuckets: [{ name: bucket, configs: [] }]
    })
    let running = false
    const stop = Effect.promise(async () => {
      if (!running) return
      running = false
      await server.close()
    })
    const { port } = yield* Effect.acquireRelease(
      Effect.promise(async () => {
        const address = await server.run()
        running = true
        return address
      }),
      () => stop
    )
    const endpoint = `http://127.0.0.1:${port}`
    const config: S3ClientConfig = {
      endpoint,
      region: "us-east-1",
      forcePathStyle: true,
      credentials: { accessKeyId, secretAccessKey }
    }
    const client = yield* Effect.acquireRelease(
      Effect.sync(() => new S3Client(config)),
      (client) => Effect.sync(() => client.destroy())
    )
    return {
      endpoint,
      bucket,
      options: (prefix = "") => ({
        bucket,
        region: "us-east-1",
        endpoint,
        credentials: { accessKeyId, secretAccessKey: Redacted.make(secretAccessKey) },
        prefix,
        forcePathStyle: true
      }),
      settings: {
        SHIORI_MEDIA_STORE: "s3",
        SHIORI_MEDIA_S3_ENDPOINT: endpoint,
        SHIORI_MEDIA_S3_BUCKET: bucket,
        SHIORI_MEDIA_S3_ACCESS_KEY_ID: accessKeyId,
        SHIORI_MEDIA_S3_SECRET_ACCESS_KEY: secretAccessKey
      },
      keys: (prefix = "") =>
        Effect.promise(async () => {
          const listed = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix }))
          return (listed.Contents ?? []).map((object) => object.Key!).sort()
        }),
      object: (key) =>
        Effect.promise(async () => {
          try {
            const object = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }))
            const bytes = await object.Body!.transformToByteArray()
            return Option.some({ bytes, contentType: object.ContentType })
          } catch (error) {
            if (error instanceof NoSuchKey) return Option.none()
            throw error
          }
        }),
      stop
    }
  })
)
