/**
 * Cursors are opaque, authenticated and bound to their filters (docs/api-contract.md, "Cursors and pages").
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer } from "effect"
import { Cursors, filterDigest, pageOf } from "../../src/catalog/pagination/Cursor.js"
import { testConfig } from "../support/TestServers.js"

const Env = Cursors.layer.pipe(Layer.provide(testConfig()))

describe("cursors (docs/api-contract.md, \"Cursors and pages\")", () => {
  it.layer(Env)((it) => {
    it.effect("round trip: the position comes back; the cursor matches the pattern and length of docs/api-contract.md, \"Cursors and pages\"", () =>
      Effect.gen(function*() {
        const cursors = yield* Cursors
        const filters = filterDigest({ site: "x", q: "sakura" })
        const cursor = cursors.encode({ sort: "popularity", key: [1234.5], id: "42" }, filters)
        expect(cursor).toMatch(/^cur_[A-Za-z0-9._~-]+$/)
        expect(cursor.length).toBeLessThanOrEqual(512)
        const position = yield* cursors.decode(cursor, { sort: "popularity", filters })
        expect(position).toEqual({ sort: "popularity", key: [1234.5], id: "42" })
      }))

    it.effect("forged, truncated, altered or foreign-filter cursors are INVALID_CURSOR", () =>
      Effect.gen(function*() {
        const cursors = yield* Cursors
        const filters = filterDigest({ site: "x" })
        const cursor = cursors.encode({ sort: "id", key: [], id: "42" }, filters)
        const payload = cursor.slice(4, cursor.indexOf("."))
        const forgedPayload = Buffer.from(JSON.stringify([1, "id", [], "1", filters])).toString("base64url")
        const attempts = [
          cursor.slice(0, -3),
          cursor.replace(payload, forgedPayload),
          `cur_${forgedPayload}.AAAAAAAAAAAAAAAAAAAAAA`,
          "cur_garbage",
          cursor + "x"
        ]
        for (const attempt of attempts) {
          const exit = yield* Effect.exit(cursors.decode(attempt, { sort: "id", filters }))
          expect(Exit.isFailure(exit), attempt).toBe(true)
          if (Exit.isFailure(exit)) expect(JSON.stringify(exit.cause)).toContain("INVALID_CURSOR")
        }
        const otherFilters = yield* Effect.exit(cursors.decode(cursor, { sort: "id", filters: filterDigest({}) }))
        expect(Exit.isFailure(otherFilters)).toBe(true)
        const otherSort = yield* Effect.exit(cursors.decode(cursor, { sort: "updated", filters }))
        expect(Exit.isFailure(otherSort)).toBe(true)
      }))
  })

  it.effect("a cursor issued under SHIORI_SECRET is accepted after a rotation while that secret is in SHIORI_SECRET_PREVIOUS, and refused without it (docs/deploying.md, \"Rotating SHIORI_SECRET\")", () =>
    Effect.gen(function*() {
      const s1 = "cursor-rotation-secret-one-0123456789"
      const s2 = "cursor-rotation-secret-two-0123456789"
      const cursorsWith = (settings: Record<string, string>) =>
        Effect.map(
          Layer.build(Layer.fresh(Cursors.layer.pipe(Layer.provide(testConfig(settings))))),
          Context.get(Cursors)
        )
      const before = yield* cursorsWith({ SHIORI_SECRET: s1 })
      const rotated = yield* cursorsWith({
        SHIORI_SECRET: s2,
        SHIORI_SECRET_PREVIOUS: `unrelated-secret-0123456789abcdef, ${s1}`
      })
      const alone = yield* cursorsWith({ SHIORI_SECRET: s2 })
      const filters = filterDigest({ site: "x" })
      const expected = { sort: "id", filters }
      const issued = before.encode({ sort: "id", key: [], id: "42" }, filters)
      expect(yield* rotated.decode(issued, expected)).toEqual({ sort: "id", key: [], id: "42" })
      const refused = yield* Effect.flip(alone.decode(issued, expected))
      expect(refused._tag).toBe("InvalidCursor")
      expect(refused.detail).toBe("The cursor was not issued by this server or was altered.")
      // The rotated service signs with the new secret only.
      const next = rotated.encode({ sort: "id", key: [], id: "43" }, filters)
      expect((yield* alone.decode(next, expected)).id).toBe("43")
      expect((yield* Effect.flip(before.decode(next, expected)))._tag).toBe("InvalidCursor")
    }).pipe(Effect.scoped))

  it("filter digests ignore key order and undefined values", () => {
    expect(filterDigest({ a: 1, b: "x", c: undefined })).toBe(filterDigest({ b: "x", a: 1 }))
    expect(filterDigest({ a: 1 })).not.toBe(filterDigest({ a: 2 }))
  })

  it("pageOf: limit+1 rows give a next cursor; limit rows or fewer do not (rule 8)", () => {
    const rows = [1, 2, 3].map((n) => ({ id: String(n) }))
    const encode = (p: { id: string }) => `cur_${p.id}`
    const positionOf = (r: { id: string }) => ({ sort: "id", key: [], id: r.id })
    expect(pageOf(rows, 2, positionOf, encode)).toEqual({ items: rows.slice(0, 2), next_cursor: "cur_2" })
    expect(pageOf(rows, 3, positionOf, encode)).toEqual({ items: rows })
  })
})
