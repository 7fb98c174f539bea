/**
 * The request body limit of both servers (RFC 9110 section 15.5.14, 413 Content Too Large): the
 * catalog's `MAX_JSON_BODY_BYTES`, the identity server's `IDENTITY_MAX_BODY_BYTES` (Config.ts).
 *
 * The platform's own limit (`HttpIncomingMessage.MaxBodySize`, enforced by @effect/platform-node's
 * body reader) is not enough on its own: it never looks at `Content-Length` and it buffers the body
 * until the limit is passed. Here:
 * - a declared `Content-Length` over the limit is refused before a byte of the body is read;
 * - a chunked body (no declared length) is read here, and cut off with a 413 the moment it passes
 *   the limit; a body that ends under the limit is handed to the application as read;
 * - the platform's limit stays set as a backstop;
 * - a JSON body may nest at most `MAX_JSON_DEPTH` levels deep, and a multipart body is refused,
 *   except on a declared upload route, whose handler parses it and whose limit is its own.
 * Each server answers the 413 in its own error style (`tooLarge`); the answer closes the
 * connection, so the rest of a refused body is never read (RFC 9110 section 15.5.14).
 */
import { NodeHttpServerRequest } from "@effect/platform-node"
import { ByteSize, Effect, Stream } from "effect"
import { HttpIncomingMessage, HttpMethod, HttpServerError, HttpServerRequest, HttpServerResponse } from "effect/http"
import { parseMediaType } from "./MediaType.js"

/**
 * A route that takes an upload: `multipart/form-data` is let through to it (its handler parses the
 * body, already read and bounded here) and its body may be up to `maxBytes`.
 */
export interface UploadRoute {
  readonly method: string
  /** The exact path, without the query. */
  readonly path: string
  readonly maxBytes: number
}

export interface BodyLimit<R> {
  readonly maxBytes: number
  readonly uploads?: ReadonlyArray<UploadRoute> | undefined
  /** The 413 in the server's own error style. */
  readonly tooLarge: (
    request: HttpServerRequest.HttpServerRequest
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse, never, R>
  /**
   * The 400 for a `multipart/form-data` body, which neither server accepts: the platform would parse
   * it on its own (spooling parts to temporary files) and answer a malformed one with a defect, a
   * 500; and it reads the socket itself, past a chunked body this module has already read.
   */
  readonly multipart: (
    request: HttpServerRequest.HttpServerRequest
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse, never, R>
}

/** Whether the request carries a body: a declared length above zero, or a chunked one. */
export const carriesBody = (request: HttpServerRequest.HttpServerRequest): boolean => {
  const length = request.headers["content-length"]
  return length !== undefined ? Number(length) > 0 : request.headers["transfer-encoding"] !== undefined
}

/** The platform reader's failure once a body passes `MaxBodySize` (the backstop). */
export const isBodyTooLarge = (error: unknown): boolean =>
  HttpServerError.isHttpServerError(error) && error.reason._tag === "RequestParseError" &&
  error.reason.reason === "BodyTooLarge"

type Buffered =
  | { readonly _tag: "Body"; readonly bytes: Buffer }
  | { readonly _tag: "TooLarge" }
  | { readonly _tag: "Aborted"; readonly cause: unknown }

/** Reads a body of undeclared length, stopping (without destroying anything) once it passes `limit`. */
const readChunked = (request: HttpServerRequest.HttpServerRequest, limit: number) =>
  Effect.callback<Buffered>((resume) => {
    const source = NodeHttpServerRequest.toIncomingMessage(request)
    const chunks: Array<Buffer> = []
    let size = 0
    let done = false
    const detach = () => {
      done = true
      source.off("data", onData)
      source.off("end", onEnd)
      source.off("error", onAbort)
      source.off("close", onClose)
    }
    const finish = (result: Buffered) => {
      if (done) return
      detach()
      resume(Effect.succeed(result))
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size > limit) {
        source.pause()
        return finish({ _tag: "TooLarge" })
      }
      chunks.push(chunk)
    }
    const onEnd = () => finish({ _tag: "Body", bytes: Buffer.concat(chunks) })
    const onAbort = (cause: unknown) => finish({ _tag: "Aborted", cause })
    const onClose = () => finish({ _tag: "Aborted", cause: new Error("the client closed the connection") })
    source.on("data", onData)
    source.once("end", onEnd)
    source.once("error", onAbort)
    source.once("close", onClose)
    return Effect.sync(detach)
  })

/**
 * Makes `bytes` the body of `request`. The platform's body accessors (`json`, `urlParamsBody`)
 * read through `text` and `arrayBuffer`, so defining `text`, `arrayBuffer` and `stream` on the
 * request object itself is enough; it is this very object, not a copy, because middleware that took the request before
 * (a problem mapper re-reading the body to report its errors) must see the same body.
 */
const setBody = (request: HttpServerRequest.HttpServerRequest, bytes: Buffer): void => {
  Object.defineProperties(request, {
    text: { value: Effect.succeed(bytes.toString("utf8")) },
    arrayBuffer: {
      value: Effect.succeed(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength))
    },
    stream: { value: Stream.succeed(new Uint8Array(bytes)) }
  })
}

/**
 * How deep a JSON body may nest. Our bodies are a level or two deep; a decode error
 * prints the rejected value recursively (effect's `Formatter.format`), so a document
 * nested thousands deep (40 KB of `[`) overflowed the stack and answered 500.
 */
export const MAX_JSON_DEPTH = 64

/** The nesting depth of a JSON text, counted without parsing it (brackets inside strings skipped). */
export const jsonDepth = (text: string): number => {
  let depth = 0
  let deepest = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c) i++ // backslash: skip the escaped character
      else if (c === 0x22) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x5b || c === 0x7b) deepest = Math.max(deepest, ++depth)
    else if (c === 0x5d || c === 0x7d) depth--
  }
  return deepest
}

/**
 * Whether the body of `request` may be read as JSON, so its depth is bounded: of no declared type,
 * of a JSON media type (`json` or a `+json` suffix, RFC 6839 section 3.1), or of a `Content-Type` that
 * is not a media type at all (MediaType.ts), which an endpoint refuses but which is bounded all the same.
 */
const isJsonBody = (request: HttpServerRequest.HttpServerRequest): boolean => {
  const contentType = request.headers["content-type"]
  if (contentType === undefined) return true
  const mediaType = parseMediaType(contentType)
  return mediaType === undefined || mediaType.subtype === "json" || mediaType.subtype.endsWith("+json")
}

/** Whether the body of `request` is declared a `multipart/*` one (RFC 2046 section 5.1). */
const isMultipartBody = (request: HttpServerRequest.HttpServerRequest): boolean => {
  const contentType = request.headers["content-type"]
  return contentType !== undefined && parseMediaType(contentType)?.type === "multipart"
}

/**
 * `request.json`, and `request.text` of a JSON body (HttpApi endpoints parse the text themselves),
 * refusing as a malformed body a document nested deeper than `MAX_JSON_DEPTH`: the platform's own
 * read error, `RequestParseError`, of reason `Parse`.
 */
const boundJsonDepth = (request: HttpServerRequest.HttpServerRequest): void => {
  const text = request.text
  const bounded = Effect.flatMap(text, (body) =>
    jsonDepth(body) > MAX_JSON_DEPTH
      ? Effect.fail(
        new HttpServerError.HttpServerError({
          reason: new HttpServerError.RequestParseError({
            request,
            reason: "Parse",
            cause: new Error(`JSON nested deeper than ${MAX_JSON_DEPTH} levels`)
          })
        })
      )
      : Effect.succeed(body))
  Object.defineProperties(request, {
    ...(isJsonBody(request) ? { text: { value: bounded } } : {}),
    json: {
      value: Effect.flatMap(bounded, (body) =>
        Effect.try({
          try: () => body === "" ? null : JSON.parse(body) as unknown,
          catch: (cause) =>
            new HttpServerError.HttpServerError({
              reason: new HttpServerError.RequestParseError({ request, reason: "Parse", cause })
            })
        }))
    }
  })
}

const closing = HttpServerResponse.setHeader("connection", "close")

/**
 * Runs `app` with its request body bounded by `limit.maxBytes`. A chunked body whose client went
 * away before its end gets a bare 400 that nobody reads; the application never sees half a body.
 */
export const limitBody = <R>(limit: BodyLimit<R>) =>
<E, R2>(
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R2>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | R2 | HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
    // A GET (HEAD, OPTIONS, ...) that declares no body, the common case: nothing to bound or read,
    // and no generator started for it (this runs on every request).
    !HttpMethod.hasBody(request.method) && request.headers["content-length"] === undefined &&
      request.headers["transfer-encoding"] === undefined
      ? app
      : withBoundedBody(limit, app, request))

const withBoundedBody = <R, E, R2>(
  limit: BodyLimit<R>,
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R2>,
  request: HttpServerRequest.HttpServerRequest
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | R2 | HttpServerRequest.HttpServerRequest> =>
  Effect.gen(function*() {
    const upload = limit.uploads?.find((route) =>
      route.method === request.method && route.path === request.url.split("?", 1)[0]
    )
    const maxBytes = upload?.maxBytes ?? limit.maxBytes
    const bounded = Effect.provideService(app, HttpIncomingMessage.MaxBodySize, ByteSize.bytes(maxBytes))
    if (isMultipartBody(request) && HttpMethod.hasBody(request.method) && upload === undefined) {
      return closing(yield* limit.multipart(request))
    }
    const declared = request.headers["content-length"]
    if (declared !== undefined) {
      if (Number(declared) > maxBytes) return closing(yield* limit.tooLarge(request))
    } else if (request.headers["transfer-encoding"] !== undefined) {
      const read = yield* readChunked(request, maxBytes)
      switch (read._tag) {
        case "TooLarge":
          return closing(yield* limit.tooLarge(request))
        case "Aborted":
          yield* Effect.logDebug("request body aborted by the client", read.cause)
          return closing(HttpServerResponse.empty({ status: 400 }))
        case "Body":
          setBody(request, read.bytes)
      }
    }
    boundJsonDepth(request)
    return yield* bounded
  })
