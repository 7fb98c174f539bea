/**
 * `POST /api/v1/auth/me/avatar` for tests (README, "Self-service accounts"): a `multipart/form-data`
 * body with one `file` part.
 */
import { Effect } from "effect"

/** Uploads `bytes` (a PNG) as the avatar of the bearer of `token`; the answer's status, headers and JSON body. */
export const postAvatar = (identity: string, token: string, bytes: Uint8Array) =>
  Effect.promise(async () => {
    const form = new FormData()
    form.append("file", new Blob([Buffer.from(bytes)], { type: "image/png" }), "me.png")
    const res = await fetch(`${identity}/api/v1/auth/me/avatar`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
      body: form
    })
    const text = await res.text()
    return { status: res.status, headers: res.headers, body: text === "" ? null : JSON.parse(text) as unknown }
  })
