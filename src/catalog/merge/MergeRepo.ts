/**
 * SQL of the merge write (Merges.ts). Every statement runs inside the merge's transaction.
 *
 * `SqlError` is not turned into a defect here (unlike other repositories): the service retries the
 * whole transaction on a deadlock or serialization failure and dies after that.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import type { TargetObject } from "../../../schema/Catalog/Change.js"
import { movePlaytimes } from "../playtimes/PlaytimeAggregates.js"

/**
 * `characters.nsfw`: the character appears in live works, all of them nsfw (through roster rows that
 * are not suppressed, as the reads see them). Merges and roster suppression both keep it.
 */
export const refreshCharacterNsfwSql = (sql: SqlClient.SqlClient, characterIds: ReadonlyArray<string>) =>
  sql`
    UPDATE characters c SET nsfw = x.nsfw, updated_at = now()
    FROM (
      SELECT c2.id, bool_and(w.nsfw) AS nsfw FROM characters c2
      JOIN work_characters wc ON wc.character_id = c2.id AND NOT wc.suppressed
      JOIN works w ON w.id = wc.work_id AND w.live
      WHERE c2.id = ANY(${characterIds}::bigint[]) GROUP BY c2.id
    ) x
    WHERE c.id = x.id AND c.nsfw IS DISTINCT FROM x.nsfw
    RETURNING c.id::text AS id`

export const entityTables: Readonly<Record<TargetObject, string>> = {
  work: "works",
  release: "releases",
  character: "characters",
  credit_name: "credit_names",
  person: "persons",
  company: "companies",
  tag: "tags",
  engine: "engines"
}

export const EntityState = Schema.Struct({
  id: Schema.String,
  merged_into: Schema.NullOr(Schema.String),
  withdrawn: Schema.Boolean
})
export type EntityState = typeof EntityState.Type

/**
 * Decodes the rows of a statement; a row that does not decode is a defect, while the statement's
 * `SqlError` stays a failure for the transaction's retry (statements are assembled from fragments,
 * so they are decoded after they run rather than through `SqlSchema`).
 */
const decoded = <S extends Schema.Decoder<unknown>>(row: S) => {
  const decode = Schema.decodeUnknownEffect(Schema.Array(row))
  return <E, R>(statement: Effect.Effect<ReadonlyArray<unknown>, E, R>) =>
    Effect.flatMap(statement, (rows) => Effect.orDie(decode(rows)))
}
const idRows = decoded(Schema.Struct({ id: Schema.String }))
const entityStates = decoded(EntityState)
const redirectRows = decoded(Schema.Struct({ current_id: Schema.String }))

type Ids = ReadonlyArray<string>
const ids = (rows: ReadonlyArray<{ readonly id: string }>): Ids => rows.map((r) => r.id)

export class MergeRepo extends Context.Service<MergeRepo>()("catalog/MergeRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const table = (object: TargetObject) => sql(entityTables[object])

    /** Locks both rows in id order (so two merges over the same pair cannot deadlock on them). */
    const lockPair = (object: TargetObject, fromId: string, intoId: string) =>
      entityStates(sql`
        SELECT id::text AS id, merged_into::text AS merged_into, withdrawn FROM ${table(object)}
        WHERE id IN (${fromId}::bigint, ${intoId}::bigint) ORDER BY id FOR UPDATE
      `)

    const currentIdOf = (object: TargetObject, id: string) =>
      Effect.map(
        redirectRows(sql`
          SELECT current_id::text AS current_id FROM catalog_redirects WHERE target_object = ${object} AND from_id = ${id}
        `),
        (rows) => rows[0]?.current_id
      )

    /** Marks the loser merged and stamps both rows. */
    const markMerged = (object: TargetObject, fromId: string, intoId: string) =>
      sql`
        UPDATE ${table(object)} SET merged_into = CASE WHEN id = ${fromId}::bigint THEN ${intoId}::bigint END,
          updated_at = now()
        WHERE id IN (${fromId}::bigint, ${intoId}::bigint)
      `

    /**
     * The merge map: the loser's entry, then every entry that led to the loser now leads to the
     * survivor (chains stay flattened). Each written row is re-stamped by the trigger.
     */
    const redirect = (object: TargetObject, fromId: string, intoId: string) =>
      Effect.gen(function*() {
        yield* sql`
          INSERT INTO catalog_redirects (target_object, from_id, into_id, current_id)
          VALUES (${object}, ${fromId}, ${intoId}, ${intoId})
          ON CONFLICT (target_object, from_id) DO UPDATE
            SET into_id = EXCLUDED.into_id, current_id = EXCLUDED.current_id, merged_at = now()
        `
        const repointed = yield* idRows(sql`
          UPDATE catalog_redirects SET current_id = ${intoId}
          WHERE target_object = ${object} AND current_id = ${fromId}
          RETURNING from_id::text AS id
        `)
        return repointed.length
      })

    /** Upstream anchors follow the survivor, so `refs=` lookups of the loser's refs find it. */
    const moveRefs = (object: TargetObject, fromId: string, intoId: string) =>
      Effect.map(
        sql`
          UPDATE entity_refs SET entity_id = ${intoId} WHERE entity_type = ${object} AND entity_id = ${fromId}
          RETURNING 1
        `,
        (rows) => rows.length
      )

    /**
     * Records a change of each entity in the feed; `gone` is the row's state after the write. The
     * rows are share-locked first (in id order): a merge touches entities it did not update itself,
     * and without the lock a concurrent withdrawal committing between our read of `live` and our
     * upsert of the change row would leave the feed saying the opposite of the catalog. After the
     * lock, the next statement's snapshot sees every committed change and no new one can commit.
     */
    const touch = (object: TargetObject, entityIds: Ids) => {
      const ids = [...new Set(entityIds)].sort((a, b) => Number(a) - Number(b))
      return ids.length === 0 ? Effect.succeed(0) : sql`
          SELECT x.id FROM ${table(object)} x WHERE x.id = ANY(${ids}::bigint[]) ORDER BY x.id FOR SHARE
        `.pipe(
        Effect.andThen(sql`
          SELECT catalog_touch(${object}, x.id, NOT x.live) FROM ${table(object)} x
          WHERE x.id = ANY(${ids}::bigint[])
        `),
        Effect.map((rows) => rows.length)
      )
    }

    // --- works: the loser's own rows move to the survivor unless they would duplicate one of its rows --

    const moveWorkRows = (fromId: string, intoId: string) =>
      Effect.gen(function*() {
        // A company both works name keeps the union of its roles on the survivor.
        yield* sql`
          UPDATE work_companies s SET developer = s.developer OR l.developer, publisher = s.publisher OR l.publisher
          FROM work_companies l WHERE l.work_id = ${fromId} AND s.work_id = ${intoId} AND s.company_id = l.company_id
        `
        const companies = yield* idRows(sql`
          UPDATE work_companies SET work_id = ${intoId}
          WHERE work_id = ${fromId}
            AND company_id NOT IN (SELECT company_id FROM work_companies WHERE work_id = ${intoId})
          RETURNING company_id::text AS id
        `)
        const tags = yield* idRows(sql`
          UPDATE work_tags SET work_id = ${intoId}
          WHERE work_id = ${fromId} AND tag_id NOT IN (SELECT tag_id FROM work_tags WHERE work_id = ${intoId})
          RETURNING tag_id::text AS id
        `)
        const covers = yield* idRows(sql`
          UPDATE covers SET work_id = ${intoId}
          WHERE work_id = ${fromId} AND image_hash NOT IN (SELECT image_hash FROM covers WHERE work_id = ${intoId})
          RETURNING id::text AS id
        `)
        const characters = yield* idRows(sql`
          UPDATE work_characters SET work_id = ${intoId}
          WHERE work_id = ${fromId}
            AND character_id NOT IN (SELECT character_id FROM work_characters WHERE work_id = ${intoId})
          RETURNING character_id::text AS id
        `)
        const credits = yield* idRows(sql`
          UPDATE credits l SET work_id = ${intoId}
          WHERE l.work_id = ${fromId} AND NOT EXISTS (
            SELECT 1 FROM credits s WHERE s.work_id = ${intoId} AND s.credit_name_id = l.credit_name_id
              AND s.role_key = l.role_key AND s.character_id IS NOT DISTINCT FROM l.character_id)
          RETURNING l.identity AS id
        `)
        // Ratings of sources the survivor has none from; then its denormalized rating columns.
        const ratings = yield* idRows(sql`
          INSERT INTO ratings (work_id, source, score, votes, updated_at)
          SELECT ${intoId}, source, score, votes, updated_at FROM ratings WHERE work_id = ${fromId}
          ON CONFLICT (work_id, source) DO NOTHING
          RETURNING source AS id
        `)
        if (ratings.length > 0) {
          yield* sql`
            UPDATE works w SET
              rating_vndb = (SELECT score FROM ratings WHERE work_id = w.id AND source = 'vndb'),
              rating_bangumi = (SELECT score FROM ratings WHERE work_id = w.id AND source = 'bangumi'),
              rating_egs = (SELECT score FROM ratings WHERE work_id = w.id AND source = 'egs'),
              rating_steam = (SELECT score FROM ratings WHERE work_id = w.id AND source = 'steam'),
              rating_dlsite = (SELECT score FROM ratings WHERE work_id = w.id AND source = 'dlsite')
            WHERE w.id = ${intoId}
          `
        }
        // Releases are entities of their own: they move (and change).
        const releases = yield* idRows(sql`
          UPDATE releases SET work_id = ${intoId}, updated_at = now() WHERE work_id = ${fromId}
          RETURNING id::text AS id
        `)
        yield* sql`
          UPDATE works s SET engine_id = l.engine_id FROM works l
          WHERE s.id = ${intoId} AND l.id = ${fromId} AND s.engine_id IS NULL AND l.engine_id IS NOT NULL
        `
        // Votes on a cover the survivor has too (the same image, so it stayed with the loser) count on
        // the survivor's: once per user.
        const [{ votes }] = yield* sql<{ readonly votes: number }>`
          WITH pairs AS (
            SELECT l.id AS from_cover, s.id AS into_cover FROM covers l
            JOIN covers s ON s.image_hash = l.image_hash AND s.work_id = ${intoId}
            WHERE l.work_id = ${fromId}
          ), moved AS (
            INSERT INTO cover_votes (cover_id, uid, created_at)
            SELECT p.into_cover, v.uid, v.created_at FROM cover_votes v JOIN pairs p ON p.from_cover = v.cover_id
            ON CONFLICT (cover_id, uid) DO NOTHING
            RETURNING cover_id
          ), counted AS (
            UPDATE covers c SET vote_count = c.vote_count + m.n
            FROM (SELECT cover_id, count(*)::int AS n FROM moved GROUP BY cover_id) m WHERE c.id = m.cover_id
            RETURNING m.n
          )
          SELECT coalesce(sum(n), 0)::int AS votes FROM counted`
        // News that named the loser names the survivor (once: an item that named both keeps its link
        // to the survivor and loses the other).
        const news = yield* idRows(sql`
          UPDATE news_item_works SET work_id = ${intoId}
          WHERE work_id = ${fromId}
            AND news_id NOT IN (SELECT news_id FROM news_item_works WHERE work_id = ${intoId})
          RETURNING news_id::text AS id
        `)
        yield* sql`DELETE FROM news_item_works WHERE work_id = ${fromId}`
        const playtimes = yield* movePlaytimes(sql, fromId, intoId)
        return {
          companies: ids(companies),
          tags: ids(tags),
          covers: covers.length,
          characters: ids(characters),
          credits: credits.length,
          ratings: ratings.length,
          releases: ids(releases),
          coverVotes: votes,
          news: news.length,
          playtimes
        }
      })

    /** Ids of the companies, tags and engine a work names (for the count refresh). */
    const workLinks = (workIds: Ids) =>
      Effect.all({
        companies: Effect.map(
          idRows(
            sql`SELECT DISTINCT company_id::text AS id FROM work_companies WHERE work_id = ANY(${workIds}::bigint[])`
          ),
          ids
        ),
        tags: Effect.map(
          idRows(sql`SELECT DISTINCT tag_id::text AS id FROM work_tags WHERE work_id = ANY(${workIds}::bigint[])`),
          ids
        ),
        engines: Effect.map(
          idRows(sql`
            SELECT DISTINCT engine_id::text AS id FROM works
            WHERE id = ANY(${workIds}::bigint[]) AND engine_id IS NOT NULL
          `),
          ids
        )
      })

    /** A work's release-derived columns (first release date, platforms, media), from its live releases. */
    const refreshWorkFromReleases = (workIds: Ids) =>
      sql`
        UPDATE works w SET
          platforms = coalesce((SELECT array_agg(DISTINCT p ORDER BY p) FROM releases r, unnest(r.platforms) p
            WHERE r.work_id = w.id AND r.live), '{}'),
          media = coalesce((SELECT array_agg(DISTINCT m ORDER BY m) FROM releases r, unnest(r.media) m
            WHERE r.work_id = w.id AND r.live), '{}'),
          -- No dated release: the sub-select yields no row and the date becomes null (undated).
          (released_year, released_month, released_day) = (
            SELECT r.released_year, r.released_month, r.released_day FROM releases r
            WHERE r.work_id = w.id AND r.live AND r.released_key IS NOT NULL
            ORDER BY r.released_key, r.id LIMIT 1),
          updated_at = now()
        WHERE w.id = ANY(${workIds}::bigint[]) AND EXISTS (SELECT 1 FROM releases r WHERE r.work_id = w.id AND r.live)
      `

    const refreshCharacterNsfw = (characterIds: Ids) => refreshCharacterNsfwSql(sql, characterIds)

    // --- references to the loser from other entities move to the survivor -----------------------

    const repointRelease = (fromId: string, intoId: string) =>
      Effect.gen(function*() {
        yield* sql`
          UPDATE release_companies s SET developer = s.developer OR l.developer, publisher = s.publisher OR l.publisher
          FROM release_companies l
          WHERE l.release_id = ${fromId} AND s.release_id = ${intoId} AND s.company_id = l.company_id
        `
        const moved = yield* sql`
          UPDATE release_companies SET release_id = ${intoId}
          WHERE release_id = ${fromId}
            AND company_id NOT IN (SELECT company_id FROM release_companies WHERE release_id = ${intoId})
          RETURNING 1
        `
        const works = yield* idRows(sql`
          SELECT DISTINCT work_id::text AS id FROM releases WHERE id IN (${fromId}::bigint, ${intoId}::bigint)
        `)
        return { releaseCompanies: moved.length, works: ids(works) }
      })

    const repointCharacter = (fromId: string, intoId: string) =>
      Effect.gen(function*() {
        // A work that lists both keeps the survivor's roster row.
        const dropped = yield* idRows(sql`
          DELETE FROM work_characters l USING work_characters s
          WHERE l.character_id = ${fromId} AND s.character_id = ${intoId} AND s.work_id = l.work_id
          RETURNING l.work_id::text AS id
        `)
        const roster = yield* idRows(sql`
          UPDATE work_characters SET character_id = ${intoId} WHERE character_id = ${fromId}
          RETURNING work_id::text AS id
        `)
        const voiced = yield* idRows(sql`
          UPDATE credits SET character_id = ${intoId} WHERE character_id = ${fromId} RETURNING work_id::text AS id
        `)
        const instances = yield* idRows(sql`
          UPDATE characters SET instance_of_id = CASE WHEN id = ${intoId}::bigint THEN NULL ELSE ${intoId}::bigint END,
            updated_at = now()
          WHERE instance_of_id = ${fromId}
          RETURNING id::text AS id
        `)
        return {
          works: [...ids(dropped), ...ids(roster), ...ids(voiced)],
          roster: roster.length,
          credits: voiced.length,
          instances: ids(instances)
        }
      })

    const repointCreditName = (fromId: string, intoId: string) =>
      Effect.gen(function*() {
        const dropped = yield* idRows(sql`
          DELETE FROM credits l USING credits s
          WHERE l.credit_name_id = ${fromId} AND s.credit_name_id = ${intoId} AND s.work_id = l.work_id
            AND s.role_key = l.role_key AND s.character_id IS NOT DISTINCT FROM l.character_id
          RETURNING l.work_id::text AS id
        `)
        const moved = yield* idRows(sql`
          UPDATE credits SET credit_name_id = ${intoId} WHERE credit_name_id = ${fromId} RETURNING work_id::text AS id
        `)
        return { works: [...ids(dropped), ...ids(moved)], credits: moved.length }
      })

    const repointPerson = (fromId: string, intoId: string) =>
      Effect.map(
        idRows(sql`
          UPDATE credit_names SET person_id = ${intoId}, updated_at = now() WHERE person_id = ${fromId}
          RETURNING id::text AS id
        `),
        (rows) => ({ creditNames: ids(rows) })
      )

    const repointCompany = (fromId: string, intoId: string) =>
      Effect.gen(function*() {
        yield* sql`
          UPDATE work_companies s SET developer = s.developer OR l.developer, publisher = s.publisher OR l.publisher
          FROM work_companies l WHERE l.company_id = ${fromId} AND s.company_id = ${intoId} AND s.work_id = l.work_id
        `
        const droppedWorks = yield* idRows(sql`
          DELETE FROM work_companies l USING work_companies s
          WHERE l.company_id = ${fromId} AND s.company_id = ${intoId} AND s.work_id = l.work_id
          RETURNING l.work_id::text AS id
        `)
        const works = yield* idRows(sql`
          UPDATE work_companies SET company_id = ${intoId} WHERE company_id = ${fromId} RETURNING work_id::text AS id
        `)
        yield* sql`
          UPDATE release_companies s SET developer = s.developer OR l.developer, publisher = s.publisher OR l.publisher
          FROM release_companies l
          WHERE l.company_id = ${fromId} AND s.company_id = ${intoId} AND s.release_id = l.release_id
        `
        const droppedReleases = yield* idRows(sql`
          DELETE FROM release_companies l USING release_companies s
          WHERE l.company_id = ${fromId} AND s.company_id = ${intoId} AND s.release_id = l.release_id
          RETURNING l.release_id::text AS id
        `)
        const releases = yield* idRows(sql`
          UPDATE release_companies SET company_id = ${intoId} WHERE company_id = ${fromId}
          RETURNING release_id::text AS id
        `)
        // Edges of the loser: those that would become self-loops or duplicates go, the rest move.
        const droppedEdges = yield* idRows(sql`
          DELETE FROM company_relations e
          WHERE (e.from_id = ${fromId} OR e.to_id = ${fromId}) AND (
            (CASE WHEN e.from_id = ${fromId}::bigint THEN ${intoId}::bigint ELSE e.from_id END) =
              (CASE WHEN e.to_id = ${fromId}::bigint THEN ${intoId}::bigint ELSE e.to_id END)
            OR EXISTS (SELECT 1 FROM company_relations d
              WHERE d.from_id = CASE WHEN e.from_id = ${fromId}::bigint THEN ${intoId}::bigint ELSE e.from_id END
                AND d.relation = e.relation
                AND d.to_id = CASE WHEN e.to_id = ${fromId}::bigint THEN ${intoId}::bigint ELSE e.to_id END))
          RETURNING (CASE WHEN e.from_id = ${fromId}::bigint THEN e.to_id ELSE e.from_id END)::text AS id
        `)
        const edges = yield* idRows(sql`
          UPDATE company_relations SET
            from_id = CASE WHEN from_id = ${fromId}::bigint THEN ${intoId}::bigint ELSE from_id END,
            to_id = CASE WHEN to_id = ${fromId}::bigint THEN ${intoId}::bigint ELSE to_id END
          WHERE from_id = ${fromId} OR to_id = ${fromId}
          RETURNING (CASE WHEN from_id = ${intoId}::bigint THEN to_id ELSE from_id END)::text AS id
        `)
        return {
          works: [...ids(droppedWorks), ...ids(works)],
          releases: [...ids(droppedReleases), ...ids(releases)],
          companies: [...ids(droppedEdges), ...ids(edges)].filter((id) => id !== intoId),
          workCompanies: works.length,
          releaseCompanies: releases.length,
          relations: edges.length
        }
      })

    const repointTag = (fromId: string, intoId: string) =>
      Effect.gen(function*() {
        // A work tagged with both keeps the survivor's vote.
        const dropped = yield* idRows(sql`
          DELETE FROM work_tags l USING work_tags s
          WHERE l.tag_id = ${fromId} AND s.tag_id = ${intoId} AND s.work_id = l.work_id
          RETURNING l.work_id::text AS id
        `)
        const works = yield* idRows(sql`
          UPDATE work_tags SET tag_id = ${intoId} WHERE tag_id = ${fromId} RETURNING work_id::text AS id
        `)
        const children = yield* idRows(sql`
          UPDATE tags SET parent_id = CASE WHEN id = ${intoId}::bigint THEN NULL ELSE ${intoId}::bigint END,
            updated_at = now()
          WHERE parent_id = ${fromId}
          RETURNING id::text AS id
        `)
        return { works: [...ids(dropped), ...ids(works)], workTags: works.length, children: ids(children) }
      })

    const repointEngine = (fromId: string, intoId: string) =>
      Effect.gen(function*() {
        const works = yield* idRows(sql`
          UPDATE works SET engine_id = ${intoId}, updated_at = now() WHERE engine_id = ${fromId}
          RETURNING id::text AS id
        `)
        const releases = yield* idRows(sql`
          UPDATE releases SET engine_id = ${intoId}, updated_at = now() WHERE engine_id = ${fromId}
          RETURNING id::text AS id
        `)
        return { works: ids(works), releases: ids(releases) }
      })

    /**
     * The gated work counts of the given companies, tags and engines (the targeted form of
     * `catalog_refresh_work_counts()`); returns the rows whose counts changed, by object.
     */
    const refreshCounts = (links: { readonly companies: Ids; readonly tags: Ids; readonly engines: Ids }) =>
      Effect.all({
        company: Effect.map(
          idRows(sql`
            UPDATE companies c SET work_count = x.n, work_count_sfw = x.s
            FROM (
              SELECT c2.id, count(w.id)::int AS n, (count(w.id) FILTER (WHERE NOT w.nsfw))::int AS s
              FROM companies c2
              LEFT JOIN work_companies wc ON wc.company_id = c2.id
              LEFT JOIN works w ON w.id = wc.work_id AND w.live
              WHERE c2.id = ANY(${links.companies}::bigint[]) GROUP BY c2.id
            ) x
            WHERE c.id = x.id AND (c.work_count, c.work_count_sfw) IS DISTINCT FROM (x.n, x.s)
            RETURNING c.id::text AS id
          `),
          ids
        ),
        tag: Effect.map(
          idRows(sql`
            UPDATE tags t SET work_count = x.n, work_count_sfw = x.s
            FROM (
              SELECT t2.id, count(w.id)::int AS n, (count(w.id) FILTER (WHERE NOT w.nsfw))::int AS s
              FROM tags t2
              LEFT JOIN work_tags wt ON wt.tag_id = t2.id
              LEFT JOIN works w ON w.id = wt.work_id AND w.live
              WHERE t2.id = ANY(${links.tags}::bigint[]) GROUP BY t2.id
            ) x
            WHERE t.id = x.id AND (t.work_count, t.work_count_sfw) IS DISTINCT FROM (x.n, x.s)
            RETURNING t.id::text AS id
          `),
          ids
        ),
        engine: Effect.map(
          idRows(sql`
            UPDATE engines e SET work_count = x.n, work_count_sfw = x.s
            FROM (
              SELECT e2.id, count(w.id)::int AS n, (count(w.id) FILTER (WHERE NOT w.nsfw))::int AS s
              FROM engines e2
              LEFT JOIN works w ON w.engine_id = e2.id AND w.live
              WHERE e2.id = ANY(${links.engines}::bigint[]) GROUP BY e2.id
            ) x
            WHERE e.id = x.id AND (e.work_count, e.work_count_sfw) IS DISTINCT FROM (x.n, x.s)
            RETURNING e.id::text AS id
          `),
          ids
        )
      })

    return {
      lockPair,
      currentIdOf,
      markMerged,
      redirect,
      moveRefs,
      touch,
      moveWorkRows,
      workLinks,
      refreshWorkFromReleases,
      refreshCharacterNsfw,
      repointRelease,
      repointCharacter,
      repointCreditName,
      repointPerson,
      repointCompany,
      repointTag,
      repointEngine,
      refreshCounts
    } as const satisfies Record<string, (...args: ReadonlyArray<any>) => Effect.Effect<any, SqlError>>
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
