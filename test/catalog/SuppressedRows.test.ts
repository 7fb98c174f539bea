/**
 * Suppressed roster and credit rows (migrations/0026; docs/writing.md, "Field keys"): a row whose
 * `suppressed` is set is absent from every catalog read — the work's roster (embedded and paged),
 * its credits (paged and `include=credits`), a character's appearances (roster rows and the voice
 * credit path) with their voices, a name's credits and the content gate of credit names with the
 * siblings it filters — and unsetting it brings the row back with the same opaque `identity`
 * (schema/Catalog/Character.ts `RowIdentity`, schema/Catalog/Credit.ts `CreditEntry.identity`).
 * A character merge moves a suppressed row as a row, flag and identity kept.
 *
 * The flag is set in SQL the way a writer sets it: in a transaction that touches the work
 * (`catalog_touch`, migrations/0002 "Change feed"), so the read cache is emptied at commit
 * (docs/life-of-a-request.md, "Stored answers (the read cache)") and the reads after it are
 * awaited with `eventually`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { Merges } from "../../src/catalog/merge/Merges.js"
import { Catalog, one, problem, SeededCatalogLive, walk } from "../support/Catalog.js"
import { eventually } from "../support/Eventually.js"
import { serverLayerOptions } from "../support/TestServers.js"

/** Sets `suppressed` on the row `identity` of `workId` in `table`, touching the work in the same transaction. */
const setSuppressed = (
  table: "work_characters" | "credits",
  workId: string,
  identity: string,
  suppressed: boolean
) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql`
      UPDATE ${sql(table)} SET suppressed = ${suppressed}
      WHERE work_id = ${workId}::bigint AND identity = ${identity} RETURNING 1`.pipe(
      Effect.tap(() => sql`SELECT catalog_touch('work', ${workId}::bigint, false)`),
      sql.withTransaction
    )
    expect(rows).toHaveLength(1)
  })

const identities = (items: ReadonlyArray<{ readonly identity?: string }>) => items.map((item) => item.identity)

/** The identities of a work's credits, over every role group. */
const creditIdentities = (groups: ReadonlyArray<any>) =>
  groups.flatMap((group) => group.credits.map((credit: any) => credit.identity))

describe("suppressed roster and credit rows (docs/writing.md, \"Field keys\")", () => {
  const Env = Merges.layer.pipe(Layer.provideMerge(SeededCatalogLive({ works: 120, seed: 11 })))
  it.layer(Env, serverLayerOptions("180 seconds"))((it) => {
    it.effect("a suppressed roster row and a suppressed credit are absent from the roster, the credits, the appearances, the voices and the name's credits; unsuppressed, every read is as before", () =>
      Effect.gen(function*() {
        const c = yield* Catalog
        const sql = yield* SqlClient.SqlClient
        // A sfw work with a voice credit `credit` (name `name`, character `voiced`, who is on the
        // roster) that is its name's only credit on the work and the character's only voice there,
        // and another roster row (`rostered`) of a character not voiced in the work.
        const s = one(
          yield* sql<
            {
              work: string
              credit: string
              name: string
              voiced: string
              voicedRow: string
              rostered: string
              rosteredRow: string
            }
          >`
          SELECT w.id::text AS work, c.identity AS credit, c.credit_name_id::text AS name,
            v.character_id::text AS voiced, v.identity AS "voicedRow",
            x.character_id::text AS rostered, x.identity AS "rosteredRow"
          FROM works w
          JOIN credits c ON c.work_id = w.id AND c.character_id IS NOT NULL
          JOIN credit_names cn ON cn.id = c.credit_name_id AND cn.live
          JOIN work_characters v ON v.work_id = w.id AND v.character_id = c.character_id
          JOIN characters vc ON vc.id = v.character_id AND vc.live
          JOIN work_characters x ON x.work_id = w.id AND x.character_id <> v.character_id
          JOIN characters xc ON xc.id = x.character_id AND xc.live
          WHERE w.live AND NOT w.nsfw
            AND NOT EXISTS (SELECT 1 FROM credits o WHERE o.work_id = w.id AND o.identity <> c.identity
              AND (o.credit_name_id = c.credit_name_id OR o.character_id = c.character_id))
            AND NOT EXISTS (SELECT 1 FROM credits o WHERE o.work_id = w.id AND o.character_id = x.character_id)
          ORDER BY w.id, c.identity, x.character_id LIMIT 1`
        )
        const work = `/v2/catalog/works/${s.work}`
        const reads = Effect.all({
          detail: Effect.map(c.get(`${work}?include=credits`), (r) => r.body),
          batch: Effect.map(c.get(`/v2/catalog/works?ids=${s.work}&include=credits`), (r) => r.body.items[0]),
          roster: walk(`${work}/characters?limit=100`, "nsfw"),
          credits: walk(`${work}/credits?limit=100`, "nsfw"),
          rostered: walk(`/v2/catalog/characters/${s.rostered}/appearances?limit=100`, "nsfw"),
          voiced: walk(`/v2/catalog/characters/${s.voiced}/appearances?limit=100`, "nsfw"),
          nameCredits: walk(`/v2/catalog/credit-names/${s.name}/credits?limit=100`, "nsfw")
        })
        const inWork = (appearances: ReadonlyArray<any>) => appearances.filter((a) => a.work.id === s.work)

        const before = yield* reads
        expect(identities(before.detail.characters)).toContain(s.rosteredRow)
        expect(before.detail.characters).toEqual(before.roster)
        expect(identities(before.roster)).toContain(s.rosteredRow)
        expect(creditIdentities(before.credits)).toContain(s.credit)
        expect(before.detail.credits).toEqual(before.credits)
        expect(before.batch.credits).toEqual(before.credits)
        expect(inWork(before.rostered)).toMatchObject([{ identity: s.rosteredRow }])
        expect(inWork(before.voiced)).toMatchObject([{ identity: s.voicedRow }])
        expect(inWork(before.voiced)[0].voices.map((v: any) => v.id)).toEqual([s.name])
        expect(before.nameCredits.filter((n: any) => n.work.id === s.work)).toHaveLength(1)

        yield* setSuppressed("work_characters", s.work, s.rosteredRow, true)
        yield* setSuppressed("credits", s.work, s.credit, true)
        yield* eventually(Effect.gen(function*() {
          const after = yield* reads
          // The roster, embedded and paged: one row fewer, the rest as before.
          const roster = before.roster.filter((r: any) => r.identity !== s.rosteredRow)
          expect(after.roster).toEqual(roster)
          expect(after.detail.characters).toEqual(roster)
          // The credits, paged and included: one entry fewer (a group left empty is gone).
          const credits = before.credits
            .map((g: any) => ({ ...g, credits: g.credits.filter((e: any) => e.identity !== s.credit) }))
            .filter((g: any) => g.credits.length > 0)
          expect(after.credits).toEqual(credits)
          expect(after.detail.credits).toEqual(credits)
          expect(after.batch.credits).toEqual(credits)
          // No appearance in the work for the unvoiced character; no voice for the voiced one.
          expect(inWork(after.rostered)).toEqual([])
          expect(after.rostered).toEqual(before.rostered.filter((a: any) => a.work.id !== s.work))
          expect(inWork(after.voiced)).toMatchObject([{ identity: s.voicedRow, voices: [] }])
          // The name's credits no longer reach the work.
          expect(after.nameCredits).toEqual(before.nameCredits.filter((n: any) => n.work.id !== s.work))
        }))

        yield* setSuppressed("work_characters", s.work, s.rosteredRow, false)
        yield* setSuppressed("credits", s.work, s.credit, false)
        yield* eventually(Effect.map(reads, (after) => expect(after).toEqual(before)))
      }))

    it.effect("a suppressed roster row leaves the voice credit path; a suppressed voice credit leaves that path too (schema/Catalog/Appearance.ts)", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        // A character on the roster of a sfw work and voiced there by one credit only.
        const s = one(
          yield* sql<{ work: string; character: string; row: string; credit: string; name: string }>`
          SELECT w.id::text AS work, v.character_id::text AS character, v.identity AS row, c.identity AS credit,
            c.credit_name_id::text AS name
          FROM works w
          JOIN work_characters v ON v.work_id = w.id
          JOIN characters vc ON vc.id = v.character_id AND vc.live
          JOIN credits c ON c.work_id = w.id AND c.character_id = v.character_id
          JOIN credit_names cn ON cn.id = c.credit_name_id AND cn.live
          WHERE w.live AND NOT w.nsfw
            AND NOT EXISTS (SELECT 1 FROM credits o WHERE o.work_id = w.id AND o.character_id = v.character_id
              AND o.identity <> c.identity)
          ORDER BY w.id DESC, v.character_id LIMIT 1`
        )
        const appearances = walk(`/v2/catalog/characters/${s.character}/appearances?limit=100`, "nsfw")
        const inWork = Effect.map(appearances, (items) => items.filter((a: any) => a.work.id === s.work))
        const before = yield* appearances
        expect(yield* inWork).toMatchObject([{ identity: s.row, voices: [{ id: s.name }] }])

        // Without its roster row the work is reached through the voice credit: no identity,
        // role `unknown`, spoiler `none`.
        yield* setSuppressed("work_characters", s.work, s.row, true)
        yield* eventually(Effect.gen(function*() {
          const [appearance, ...rest] = yield* inWork
          expect(rest).toEqual([])
          expect(appearance).not.toHaveProperty("identity")
          expect(appearance).toMatchObject({ roster_role: "unknown", spoiler: "none" })
          expect(appearance.voices.map((v: any) => v.id)).toEqual([s.name])
        }))
        // Without the voice credit either, the work is not an appearance at all.
        yield* setSuppressed("credits", s.work, s.credit, true)
        yield* eventually(Effect.gen(function*() {
          expect(yield* appearances).toEqual(before.filter((a: any) => a.work.id !== s.work))
        }))

        yield* setSuppressed("credits", s.work, s.credit, false)
        yield* setSuppressed("work_characters", s.work, s.row, false)
        yield* eventually(Effect.map(appearances, (after) => expect(after).toEqual(before)))
      }))

    it.effect("the content gate of credit names counts unsuppressed credits only: a name left with credits on nsfw works alone is hidden from sfw and from its siblings, a name left with none is credited nowhere (docs/api-contract.md, \"Credentials, scopes and the content limit\")", () =>
      Effect.gen(function*() {
        const c = yield* Catalog
        const sql = yield* SqlClient.SqlClient
        const sfwWork = one(
          yield* sql<{ id: string }>`SELECT id::text AS id FROM works WHERE live AND NOT nsfw ORDER BY id LIMIT 1`
        )
        const nsfwWork = one(
          yield* sql<{ id: string }>`SELECT id::text AS id FROM works WHERE live AND nsfw ORDER BY id LIMIT 1`
        )
        // A public person with two names: `kept` credited on the sfw work, `gated` on both works.
        const { credits, gated, kept } = yield* Effect.gen(function*() {
          const person = one(
            yield* sql<{ id: string }>`INSERT INTO persons (display_name, lang) VALUES ('Suppression Person', 'en')
              RETURNING id::text AS id`
          )
          const names = yield* sql<{ id: string }>`
            INSERT INTO credit_names (person_id, display_name, lang)
            VALUES (${person.id}, 'Kept Name', 'en'), (${person.id}, 'Gated Name', 'en') RETURNING id::text AS id`
          const [kept, gated] = names.map((n) => n.id) as [string, string]
          const credits = yield* sql<{ work: string; name: string; identity: string }>`
            INSERT INTO credits (work_id, credit_name_id, role_key) VALUES
              (${sfwWork.id}, ${kept}, 'scenario'), (${sfwWork.id}, ${gated}, 'scenario'),
              (${nsfwWork.id}, ${gated}, 'scenario')
            RETURNING work_id::text AS work, credit_name_id::text AS name, identity`
          yield* sql`SELECT catalog_touch('work', id, false) FROM works
            WHERE id IN (${sfwWork.id}::bigint, ${nsfwWork.id}::bigint)`
          return { credits, gated, kept }
        }).pipe(sql.withTransaction)
        /** The credit of `gated` on `work`. */
        const gatedOn = (work: string) => one(credits.filter((r) => r.name === gated && r.work === work)).identity
        const siblings = (key: "sfw" | "nsfw") =>
          Effect.map(
            c.get(`/v2/catalog/credit-names/${kept}?include=siblings`, { key }),
            (r) => r.body.siblings.map((s: any) => s.id)
          )
        const workIds = (key: "sfw" | "nsfw") =>
          Effect.map(
            walk(`/v2/catalog/credit-names/${gated}/credits?limit=100`, key),
            (items) => items.map((n: any) => n.work.id).sort()
          )

        yield* eventually(Effect.gen(function*() {
          expect((yield* c.get(`/v2/catalog/credit-names/${gated}`, { key: "sfw" })).status).toBe(200)
          expect(yield* siblings("sfw")).toEqual([gated])
          expect(yield* workIds("nsfw")).toEqual([sfwWork.id, nsfwWork.id].sort())
        }))

        yield* setSuppressed("credits", sfwWork.id, gatedOn(sfwWork.id), true)
        yield* eventually(Effect.gen(function*() {
          yield* problem(`/v2/catalog/credit-names/${gated}`, "NOT_FOUND", "sfw")
          yield* problem(`/v2/catalog/credit-names/${gated}/credits`, "NOT_FOUND", "sfw")
          expect(yield* siblings("sfw")).toEqual([])
          expect(yield* siblings("nsfw")).toEqual([gated])
          expect(yield* workIds("nsfw")).toEqual([nsfwWork.id])
        }))

        // Its nsfw credit suppressed too, the name is credited nowhere, which every credential sees.
        yield* setSuppressed("credits", nsfwWork.id, gatedOn(nsfwWork.id), true)
        yield* eventually(Effect.gen(function*() {
          expect((yield* c.get(`/v2/catalog/credit-names/${gated}`, { key: "sfw" })).status).toBe(200)
          expect(yield* siblings("sfw")).toEqual([gated])
          expect(yield* workIds("nsfw")).toEqual([])
          expect(yield* workIds("sfw")).toEqual([])
        }))

        yield* setSuppressed("credits", sfwWork.id, gatedOn(sfwWork.id), false)
        yield* setSuppressed("credits", nsfwWork.id, gatedOn(nsfwWork.id), false)
        yield* eventually(Effect.gen(function*() {
          expect((yield* c.get(`/v2/catalog/credit-names/${gated}`, { key: "sfw" })).status).toBe(200)
          expect(yield* siblings("sfw")).toEqual([gated])
          expect(yield* workIds("nsfw")).toEqual([sfwWork.id, nsfwWork.id].sort())
        }))
      }))

    it.effect("a character merge moves a suppressed roster row with its flag and identity, and `characters.nsfw` counts unsuppressed rows only (docs/api-contract.md, \"Credentials, scopes and the content limit\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const merges = yield* Merges
        const sfwWork = one(
          yield* sql<{ id: string }>`SELECT id::text AS id FROM works WHERE live AND NOT nsfw ORDER BY id DESC LIMIT 1`
        )
        const nsfwWork = one(
          yield* sql<{ id: string }>`SELECT id::text AS id FROM works WHERE live AND nsfw ORDER BY id DESC LIMIT 1`
        )
        // The loser is on the sfw work's roster by a suppressed row; the survivor on the nsfw work's.
        const [loser, survivor] = (yield* sql<{ id: string }>`
          INSERT INTO characters (display_name, lang) VALUES ('Suppressed Loser', 'en'), ('Survivor', 'en')
          RETURNING id::text AS id`).map((r) => r.id) as [string, string]
        const row = one(
          yield* sql<{ identity: string }>`
            INSERT INTO work_characters (work_id, character_id, roster_role, suppressed)
            VALUES (${sfwWork.id}, ${loser}, 'appears', true) RETURNING identity`
        ).identity
        yield* sql`INSERT INTO work_characters (work_id, character_id, roster_role)
          VALUES (${nsfwWork.id}, ${survivor}, 'appears')`

        yield* merges.merge("character", loser, survivor)
        const moved = yield* sql<{ character: string; suppressed: boolean }>`
          SELECT character_id::text AS character, suppressed FROM work_characters
          WHERE work_id = ${sfwWork.id}::bigint AND identity = ${row}`
        expect(moved).toEqual([{ character: survivor, suppressed: true }])
        // The survivor appears (as the reads see it) in the nsfw work alone: nsfw-only.
        const [flag] = yield* sql<{ nsfw: boolean }>`SELECT nsfw FROM characters WHERE id = ${survivor}::bigint`
        expect(flag).toEqual({ nsfw: true })
        yield* eventually(Effect.gen(function*() {
          yield* problem(`/v2/catalog/characters/${survivor}`, "NOT_FOUND", "sfw")
          const appearances = yield* walk(`/v2/catalog/characters/${survivor}/appearances?limit=100`, "nsfw")
          expect(appearances.map((a: any) => a.work.id)).toEqual([nsfwWork.id])
        }))
      }))
  })
})
