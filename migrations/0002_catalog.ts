/**
 * The catalog (why: docs/decisions.md, "Catalog reads", "Search and facets" and "Mirroring").
 *
 * Conventions
 * - Ids are `bigint` identities per table (decimal strings on the wire). `live` is a stored generated
 *   column (not merged away, not withdrawn); every read index is partial on it.
 * - Names: `display_name`, `latin` (romanization or null), `lang`, `localized` (jsonb, BCP-47 ->
 *   {value, latin}: the wire shape, denormalized so a list page needs no join). For works, `localized`
 *   and `display_name`/`latin` are derived from `work_titles` by the writer in the same transaction.
 * - Aliases, intros, refs, links and images of every entity type live in `entity_*` tables keyed by
 *   (`entity_id`, `entity_type`), where `entity_type` is the wire `object` name. Composite keys lead
 *   with their most selective column (ids, external ids): lookups use every column anyway, and a
 *   selective first column makes the bulk index builds of a large seed several times faster.
 * - Partial dates: `released_year/month/day` plus the generated `released_key` = YYYYMMDD with 00 for an
 *   unknown month or day (null when undated), so `2024` sorts before `2024-01-05`.
 * - Content gate (docs/api-contract.md, "Credentials, scopes and the content limit"): `works.nsfw`;
 *   `releases.nsfw`; `characters.nsfw` = appears only in nsfw works; `work_count` / `work_count_sfw` on
 *   companies, tags and engines (see catalog_refresh_work_counts).
 * - Keyset sorts (docs/api-contract.md, "Cursors and pages"): every sort index is (key, id) with one
 *   direction, so a descending sort is `ORDER BY key DESC, id DESC` on a backward scan. Keys whose
 *   missing values sort last use these exact expressions (the query must repeat them for the index to
 *   apply):
 *     released_asc   coalesce(released_key, 2147483647) ASC,  id ASC
 *     released_desc  coalesce(released_key, -1)         DESC, id DESC
 *     rating_<src>   coalesce(rating_<src>, -1)         DESC, id DESC   (unrated last)
 *     popularity     popularity DESC, id DESC;   updated  updated_at, id (either direction)
 * - Search (docs/decisions.md, "Search and facets"): `work_search` holds one row per work with every
 *   title and alias. `norm` is the NFKC-folded, lower-cased text (names separated by newlines); `key`
 *   re-spells it for pg_trgm so that CJK works under any database locale: ASCII words stay as they are
 *   and every other character becomes its own 3-4 character token. Built by `searchKey` in
 *   src/catalog/search/SearchKey.ts; the query is `key LIKE $pattern AND strpos(norm, $needle) > 0` (GIN
 *   trigram index on `key`).
 *
 * Change feed, as first built (migrations/0010_feed_positions.ts replaced this ordering with commit-order
 * positions; docs/change-feed.md): `catalog_changes` holds one row per entity (primary key id,
 * target_object); every write upserts it through `catalog_touch(...)` in the writer's transaction. A
 * trigger stamps each inserted or updated row with the writing transaction's id (`txid` =
 * pg_current_xact_id()) and a fresh `seq`. The feed is ordered by (txid, seq) and serves only rows with
 *   txid < pg_snapshot_xmin(pg_current_snapshot())
 * i.e. rows whose transaction, and every transaction with a smaller id, has finished. A transaction that
 * commits later always has txid >= that watermark, so it sorts after any cursor already handed out:
 * the feed never skips a row, however writers interleave. A long-running writer only delays the feed.
 *   SELECT ... FROM catalog_changes
 *   WHERE (txid, seq) > ($txid::xid8, $seq) AND txid < pg_snapshot_xmin(pg_current_snapshot())
 *   ORDER BY txid, seq LIMIT $n
 * `catalog_redirects` (merge map) is stamped the same way so it can be paged incrementally too; its
 * `current_id` is kept flattened (a merge into X re-points every redirect whose current_id was X).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const entityTypes = "'work', 'release', 'character', 'credit_name', 'person', 'company', 'tag', 'engine', 'trait'"
const targetObjects = "'work', 'release', 'character', 'credit_name', 'person', 'company', 'tag', 'engine'"
const spoiler = "('none', 'minor', 'major')"
const nameColumns = `
  display_name text NOT NULL CHECK (length(display_name) BETWEEN 1 AND 512),
  latin text CHECK (length(latin) <= 512),
  lang text CHECK (length(lang) <= 32),
  localized jsonb NOT NULL DEFAULT '{}'`
const lifecycleColumns = (table: string) => `
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  merged_into bigint REFERENCES ${table} (id),
  withdrawn boolean NOT NULL DEFAULT false,
  live boolean GENERATED ALWAYS AS (merged_into IS NULL AND NOT withdrawn) STORED,
  CHECK (merged_into IS NULL OR merged_into <> id)`
const releasedColumns = `
  released_year smallint CHECK (released_year BETWEEN 1900 AND 2200),
  released_month smallint CHECK (released_month BETWEEN 1 AND 12),
  released_day smallint CHECK (released_day BETWEEN 1 AND 31),
  released_key integer GENERATED ALWAYS AS
    (released_year * 10000 + coalesce(released_month, 0) * 100 + coalesce(released_day, 0)) STORED,
  CHECK (released_month IS NULL OR released_year IS NOT NULL),
  CHECK (released_day IS NULL OR released_month IS NOT NULL)`

const statements: ReadonlyArray<string> = [
  `CREATE EXTENSION IF NOT EXISTS pg_trgm`,

  // --- Registries (small, static; display names for facets and credit groups) ---------------------
  `CREATE TABLE catalog_languages (
    tag text PRIMARY KEY CHECK (tag ~ '^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$' AND length(tag) <= 32),
    display_name text NOT NULL
  )`,
  `CREATE TABLE catalog_platforms (
    code text PRIMARY KEY CHECK (code ~ '^[a-z0-9]{2,16}$'),
    display_name text NOT NULL
  )`,
  `CREATE TABLE catalog_media (
    code text PRIMARY KEY CHECK (code ~ '^[a-z0-9]{2,16}$'),
    display_name text NOT NULL
  )`,
  `CREATE TABLE credit_roles (
    role_key text PRIMARY KEY CHECK (role_key ~ '^[a-z][a-z0-9_]*$' AND length(role_key) <= 64),
    role_name text NOT NULL CHECK (length(role_name) <= 512),
    position smallint NOT NULL
  )`,
  `INSERT INTO catalog_languages (tag, display_name) VALUES
    ('ja', 'Japanese'), ('en', 'English'), ('zh-Hans', 'Chinese (Simplified)'),
    ('zh-Hant', 'Chinese (Traditional)'), ('ko', 'Korean'), ('ru', 'Russian'), ('es', 'Spanish'),
    ('de', 'German'), ('fr', 'French'), ('it', 'Italian'), ('pt-BR', 'Portuguese (Brazil)'),
    ('vi', 'Vietnamese'), ('th', 'Thai'), ('id', 'Indonesian'), ('pl', 'Polish'), ('uk', 'Ukrainian')`,
  `INSERT INTO catalog_platforms (code, display_name) VALUES
    ('win', 'Windows'), ('mac', 'macOS'), ('lin', 'Linux'), ('ios', 'iOS'), ('and', 'Android'),
    ('web', 'Web browser'), ('swi', 'Nintendo Switch'), ('ps4', 'PlayStation 4'), ('ps5', 'PlayStation 5'),
    ('psv', 'PlayStation Vita'), ('psp', 'PlayStation Portable'), ('ps3', 'PlayStation 3'),
    ('ps2', 'PlayStation 2'), ('xbo', 'Xbox One'), ('xxs', 'Xbox Series X/S'), ('nds', 'Nintendo DS'),
    ('n3d', 'Nintendo 3DS'), ('dvd', 'DVD player'), ('dos', 'MS-DOS'), ('p98', 'PC-98')`,
  `INSERT INTO catalog_media (code, display_name) VALUES
    ('dl', 'Download'), ('cd', 'CD'), ('dvd', 'DVD'), ('bd', 'Blu-ray'), ('cart', 'Cartridge'),
    ('fd', 'Floppy disk'), ('mem', 'Memory card'), ('web', 'Web')`,
  `INSERT INTO credit_roles (role_key, role_name, position) VALUES
    ('director', 'Director', 1), ('scenario', 'Scenario', 2), ('chardesign', 'Character design', 3),
    ('art', 'Artist', 4), ('music', 'Composer', 5), ('songs', 'Vocals', 6), ('translator', 'Translator', 7),
    ('staff', 'Staff', 8), ('voice', 'Voice', 9)`,

  // --- Images: content-addressed by SHA-256; covers, portraits, logos, photos and editor uploads ----
  // (Formats are checked by the schemas on write; the table keeps only cheap checks so a bulk load of
  // millions of rows is not slowed down by regular expressions.)
  `CREATE TABLE images (
    hash text PRIMARY KEY CHECK (length(hash) = 64),
    url text NOT NULL CHECK (length(url) <= 512),
    width integer CHECK (width BETWEEN 0 AND 65535),
    height integer CHECK (height BETWEEN 0 AND 65535),
    thumbhash text CHECK (length(thumbhash) <= 128),
    sexual text CHECK (sexual IN ('safe', 'suggestive', 'explicit')),
    violence text CHECK (violence IN ('tame', 'violent', 'brutal')),
    source text NOT NULL CHECK (length(source) BETWEEN 1 AND 64),
    preset text CHECK (preset IN ('cover', 'screenshot')),
    size_bytes bigint CHECK (size_bytes >= 0),
    created_at timestamptz NOT NULL DEFAULT now()
  )`,

  // --- Shared entities -----------------------------------------------------------------------------
  `CREATE TABLE engines (
    id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    display_name text NOT NULL CHECK (length(display_name) BETWEEN 1 AND 512),
    description text NOT NULL DEFAULT '' CHECK (length(description) <= 8000),
    aliases text[] NOT NULL DEFAULT '{}',
    work_count integer NOT NULL DEFAULT 0,
    work_count_sfw integer NOT NULL DEFAULT 0,
    ${lifecycleColumns("engines")}
  )`,
  `CREATE TABLE companies (
    id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    ${nameColumns},
    company_kind text NOT NULL
      CHECK (company_kind IN ('game_brand', 'bunko', 'publisher', 'anime_studio', 'doujin_circle', 'group')),
    work_count integer NOT NULL DEFAULT 0,
    work_count_sfw integer NOT NULL DEFAULT 0,
    ${lifecycleColumns("companies")}
  )`,
  // Edge (from_id, relation, to_id): to_id is `relation` of from_id. The graph walk follows edges both
  // ways (index on to_id) but emits them only as stored.
  `CREATE TABLE company_relations (
    from_id bigint NOT NULL REFERENCES companies (id),
    relation text NOT NULL CHECK (relation IN ('parent', 'imprint', 'spawned', 'succeeded_by')),
    to_id bigint NOT NULL REFERENCES companies (id),
    PRIMARY KEY (from_id, relation, to_id),
    CHECK (from_id <> to_id)
  )`,
  `CREATE TABLE tags (
    id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    display_name text NOT NULL CHECK (length(display_name) BETWEEN 1 AND 512),
    localized jsonb NOT NULL DEFAULT '{}',
    category text NOT NULL CHECK (category IN ('content', 'sexual', 'technical')),
    parent_id bigint REFERENCES tags (id),
    default_spoiler text NOT NULL DEFAULT 'none' CHECK (default_spoiler IN ${spoiler}),
    description text NOT NULL DEFAULT '' CHECK (length(description) <= 8000),
    aliases text[] NOT NULL DEFAULT '{}',
    work_count integer NOT NULL DEFAULT 0,
    work_count_sfw integer NOT NULL DEFAULT 0,
    ${lifecycleColumns("tags")}
  )`,
  // Traits are grouped under a root trait (`root_id` null for a root); not part of the change feed.
  `CREATE TABLE traits (
    id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    display_name text NOT NULL CHECK (length(display_name) BETWEEN 1 AND 512),
    localized jsonb NOT NULL DEFAULT '{}',
    root_id bigint REFERENCES traits (id),
    default_spoiler text NOT NULL DEFAULT 'none' CHECK (default_spoiler IN ${spoiler}),
    is_sexual boolean NOT NULL DEFAULT false,
    description text NOT NULL DEFAULT '' CHECK (length(description) <= 8000),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
  )`,
  // `is_public`: whether the person's link to its names (and birth date, gender) may be shown.
  `CREATE TABLE persons (
    id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    ${nameColumns},
    gender text CHECK (gender IN ('male', 'female', 'other')),
    birth_year smallint CHECK (birth_year BETWEEN 0 AND 9999),
    birth_month smallint CHECK (birth_month BETWEEN 1 AND 12),
    birth_day smallint CHECK (birth_day BETWEEN 1 AND 31),
    is_public boolean NOT NULL DEFAULT true,
    ${lifecycleColumns("persons")}
  )`,
  `CREATE TABLE credit_names (
    id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    person_id bigint REFERENCES persons (id),
    ${nameColumns},
    ${lifecycleColumns("credit_names")}
  )`,

  // --- Works ---------------------------------------------------------------------------------------
  // `released_*`, `platforms`, `media` and `rating_<source>` are denormalized from releases and ratings
  // (the writer keeps them in step) so every list filter and sort is answered from this one table.
  `CREATE TABLE works (
    id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    ${nameColumns},
    olang text CHECK (length(olang) <= 32),
    ${releasedColumns},
    nsfw boolean NOT NULL DEFAULT false,
    length_minutes integer CHECK (length_minutes >= 0),
    platforms text[] NOT NULL DEFAULT '{}',
    media text[] NOT NULL DEFAULT '{}',
    popularity real NOT NULL DEFAULT 0 CHECK (popularity BETWEEN 0 AND 100),
    rating_vndb real CHECK (rating_vndb BETWEEN 0 AND 100),
    rating_bangumi real CHECK (rating_bangumi BETWEEN 0 AND 100),
    rating_egs real CHECK (rating_egs BETWEEN 0 AND 100),
    rating_steam real CHECK (rating_steam BETWEEN 0 AND 100),
    rating_dlsite real CHECK (rating_dlsite BETWEEN 0 AND 100),
    development_status text NOT NULL DEFAULT 'finished'
      CHECK (development_status IN ('finished', 'in_development', 'cancelled')),
    engine_id bigint REFERENCES engines (id),
    ${lifecycleColumns("works")}
  )`,
  // One title per language (field key catalog.work.titles); exactly one `is_main` per work.
  `CREATE TABLE work_titles (
    work_id bigint NOT NULL REFERENCES works (id) ON DELETE CASCADE,
    lang text NOT NULL CHECK (length(lang) <= 32),
    value text NOT NULL CHECK (length(value) BETWEEN 1 AND 512),
    latin text CHECK (length(latin) <= 512),
    is_main boolean NOT NULL DEFAULT false,
    is_official boolean NOT NULL DEFAULT true,
    PRIMARY KEY (work_id, lang)
  )`,
  `CREATE TABLE work_search (
    work_id bigint PRIMARY KEY REFERENCES works (id) ON DELETE CASCADE,
    norm text NOT NULL,
    key text NOT NULL
  )`,
  `CREATE TABLE ratings (
    work_id bigint NOT NULL REFERENCES works (id) ON DELETE CASCADE,
    source text NOT NULL CHECK (source IN ('vndb', 'bangumi', 'egs', 'steam', 'dlsite')),
    score real NOT NULL CHECK (score BETWEEN 0 AND 100),
    votes integer NOT NULL CHECK (votes >= 0),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (work_id, source)
  )`,
  `CREATE TABLE work_companies (
    work_id bigint NOT NULL REFERENCES works (id) ON DELETE CASCADE,
    company_id bigint NOT NULL REFERENCES companies (id),
    developer boolean NOT NULL DEFAULT false,
    publisher boolean NOT NULL DEFAULT false,
    PRIMARY KEY (work_id, company_id),
    CHECK (developer OR publisher)
  )`,
  `CREATE TABLE work_tags (
    work_id bigint NOT NULL REFERENCES works (id) ON DELETE CASCADE,
    tag_id bigint NOT NULL REFERENCES tags (id),
    spoiler text NOT NULL DEFAULT 'none' CHECK (spoiler IN ${spoiler}),
    score real NOT NULL CHECK (score BETWEEN 0 AND 3),
    PRIMARY KEY (work_id, tag_id)
  )`,
  `CREATE TABLE covers (
    id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    work_id bigint NOT NULL REFERENCES works (id) ON DELETE CASCADE,
    image_hash text NOT NULL REFERENCES images (hash),
    vote_count integer NOT NULL DEFAULT 0 CHECK (vote_count >= 0),
    portrait_pinned boolean NOT NULL DEFAULT false,
    cover_kind text NOT NULL DEFAULT '' CHECK (length(cover_kind) <= 32),
    created_at timestamptz NOT NULL DEFAULT now()
  )`,

  // --- Releases ------------------------------------------------------------------------------------
  `CREATE TABLE releases (
    id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    work_id bigint NOT NULL REFERENCES works (id),
    ${nameColumns},
    ${releasedColumns},
    languages text[] NOT NULL DEFAULT '{}',
    platforms text[] NOT NULL DEFAULT '{}',
    media text[] NOT NULL DEFAULT '{}',
    nsfw boolean NOT NULL DEFAULT false,
    min_age smallint CHECK (min_age BETWEEN 0 AND 21),
    release_kind text NOT NULL DEFAULT 'complete' CHECK (release_kind IN ('complete', 'partial', 'trial')),
    is_official boolean NOT NULL DEFAULT true,
    is_patch boolean NOT NULL DEFAULT false,
    is_freeware boolean NOT NULL DEFAULT false,
    voiced text CHECK (voiced IN ('none', 'ero_only', 'partial', 'full')),
    engine_id bigint REFERENCES engines (id),
    gtin text CHECK (length(gtin) BETWEEN 8 AND 14),
    catalog_number text CHECK (length(catalog_number) <= 64),
    ${lifecycleColumns("releases")}
  )`,
  `CREATE TABLE release_companies (
    release_id bigint NOT NULL REFERENCES releases (id) ON DELETE CASCADE,
    company_id bigint NOT NULL REFERENCES companies (id),
    developer boolean NOT NULL DEFAULT false,
    publisher boolean NOT NULL DEFAULT false,
    PRIMARY KEY (release_id, company_id),
    CHECK (developer OR publisher)
  )`,

  // --- Characters ----------------------------------------------------------------------------------
  `CREATE TABLE characters (
    id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    ${nameColumns},
    birthday text CHECK (length(birthday) = 5),
    blood_type text CHECK (blood_type IN ('a', 'b', 'ab', 'o')),
    gender text CHECK (gender IN ('male', 'female', 'other')),
    height_cm smallint CHECK (height_cm >= 0),
    weight_kg smallint CHECK (weight_kg >= 0),
    bust_cm smallint CHECK (bust_cm BETWEEN 0 AND 999),
    waist_cm smallint CHECK (waist_cm BETWEEN 0 AND 999),
    hips_cm smallint CHECK (hips_cm BETWEEN 0 AND 999),
    cup text CHECK (length(cup) BETWEEN 1 AND 4),
    instance_of_id bigint REFERENCES characters (id),
    nsfw boolean NOT NULL DEFAULT false,
    ${lifecycleColumns("characters")}
  )`,
  `CREATE TABLE character_traits (
    character_id bigint NOT NULL REFERENCES characters (id) ON DELETE CASCADE,
    trait_id bigint NOT NULL REFERENCES traits (id),
    spoiler text NOT NULL DEFAULT 'none' CHECK (spoiler IN ${spoiler}),
    is_lie boolean NOT NULL DEFAULT false,
    PRIMARY KEY (character_id, trait_id)
  )`,
  // The roster. `identity` is an opaque random token, never derived from other columns.
  `CREATE TABLE work_characters (
    work_id bigint NOT NULL REFERENCES works (id) ON DELETE CASCADE,
    character_id bigint NOT NULL REFERENCES characters (id),
    roster_role text NOT NULL CHECK (roster_role IN ('main', 'secondary', 'appears', 'unknown')),
    spoiler text NOT NULL DEFAULT 'none' CHECK (spoiler IN ${spoiler}),
    identity text NOT NULL DEFAULT replace(gen_random_uuid()::text, '-', '')
      CHECK (length(identity) BETWEEN 1 AND 64),
    position smallint NOT NULL DEFAULT 0,
    PRIMARY KEY (work_id, character_id)
  )`,
  // A work's credits; `character_id` is set for voice credits. `identity` as in work_characters.
  `CREATE TABLE credits (
    work_id bigint NOT NULL REFERENCES works (id) ON DELETE CASCADE,
    identity text NOT NULL DEFAULT replace(gen_random_uuid()::text, '-', '')
      CHECK (length(identity) BETWEEN 1 AND 128),
    credit_name_id bigint NOT NULL REFERENCES credit_names (id),
    role_key text NOT NULL REFERENCES credit_roles (role_key),
    character_id bigint REFERENCES characters (id),
    note text NOT NULL DEFAULT '' CHECK (length(note) <= 512),
    position smallint NOT NULL DEFAULT 0,
    PRIMARY KEY (work_id, identity)
  )`,

  // --- Per-entity satellites (entity_type = the wire object name) ----------------------------------
  // alias_kind `search_hint` is internal: searched, never served.
  `CREATE TABLE entity_aliases (
    entity_type text NOT NULL CHECK (entity_type IN (${entityTypes})),
    entity_id bigint NOT NULL,
    position smallint NOT NULL,
    lang text NOT NULL CHECK (length(lang) <= 32),
    value text NOT NULL CHECK (length(value) BETWEEN 1 AND 512),
    alias_kind text NOT NULL CHECK (alias_kind IN ('translation', 'spelling_variant', 'search_hint')),
    is_machine boolean NOT NULL DEFAULT false,
    PRIMARY KEY (entity_id, entity_type, position)
  )`,
  `CREATE TABLE entity_intros (
    entity_type text NOT NULL CHECK (entity_type IN (${entityTypes})),
    entity_id bigint NOT NULL,
    position smallint NOT NULL,
    lang text NOT NULL CHECK (length(lang) <= 32),
    value text NOT NULL CHECK (length(value) <= 20000),
    is_machine boolean NOT NULL DEFAULT false,
    source text NOT NULL CHECK (length(source) BETWEEN 1 AND 64),
    PRIMARY KEY (entity_id, entity_type, position)
  )`,
  // A (source, external_id) pair anchors at most one entity of a type: the `refs=` batch lane key.
  `CREATE TABLE entity_refs (
    entity_type text NOT NULL CHECK (entity_type IN (${entityTypes})),
    entity_id bigint NOT NULL,
    source text NOT NULL CHECK (length(source) BETWEEN 1 AND 64),
    external_id text NOT NULL CHECK (length(external_id) BETWEEN 1 AND 256),
    url text CHECK (length(url) <= 1024),
    PRIMARY KEY (external_id, source, entity_type)
  )`,
  `CREATE TABLE entity_links (
    entity_type text NOT NULL CHECK (entity_type IN (${entityTypes})),
    entity_id bigint NOT NULL,
    position smallint NOT NULL,
    site text NOT NULL CHECK (length(site) BETWEEN 1 AND 64),
    url text NOT NULL CHECK (length(url) <= 1024),
    label text NOT NULL DEFAULT '' CHECK (length(label) <= 512),
    lang text CHECK (length(lang) <= 32),
    PRIMARY KEY (entity_id, entity_type, position)
  )`,
  `CREATE TABLE entity_images (
    entity_type text NOT NULL CHECK (entity_type IN (${entityTypes})),
    entity_id bigint NOT NULL,
    slot text NOT NULL CHECK (slot IN ('image', 'figure', 'logo', 'photo')),
    image_hash text NOT NULL REFERENCES images (hash),
    PRIMARY KEY (entity_id, entity_type, slot)
  )`,

  // --- Change feed, merge map, revisions -----------------------------------------------------------
  `CREATE SEQUENCE catalog_change_seq`,
  `CREATE TABLE catalog_changes (
    target_object text NOT NULL CHECK (target_object IN (${targetObjects})),
    id bigint NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    gone boolean NOT NULL DEFAULT false,
    txid xid8 NOT NULL DEFAULT pg_current_xact_id(),
    seq bigint NOT NULL DEFAULT nextval('catalog_change_seq'),
    PRIMARY KEY (id, target_object)
  )`,
  `CREATE TABLE catalog_redirects (
    target_object text NOT NULL CHECK (target_object IN (${targetObjects})),
    from_id bigint NOT NULL,
    into_id bigint NOT NULL,
    current_id bigint NOT NULL,
    merged_at timestamptz NOT NULL DEFAULT now(),
    txid xid8 NOT NULL DEFAULT pg_current_xact_id(),
    seq bigint NOT NULL DEFAULT nextval('catalog_change_seq'),
    PRIMARY KEY (target_object, from_id),
    CHECK (from_id <> into_id AND from_id <> current_id)
  )`,
  `CREATE FUNCTION catalog_stamp_position() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    NEW.txid := pg_current_xact_id();
    NEW.seq := nextval('catalog_change_seq');
    RETURN NEW;
  END
  $$`,
  `CREATE TRIGGER catalog_changes_position BEFORE INSERT OR UPDATE ON catalog_changes
    FOR EACH ROW EXECUTE FUNCTION catalog_stamp_position()`,
  `CREATE TRIGGER catalog_redirects_position BEFORE INSERT OR UPDATE ON catalog_redirects
    FOR EACH ROW EXECUTE FUNCTION catalog_stamp_position()`,
  // Every catalog write calls this once per touched entity, inside its transaction. `gone` is the
  // entity's state after the write (true when merged away or withdrawn).
  `CREATE FUNCTION catalog_touch(p_object text, p_id bigint, p_gone boolean DEFAULT false)
  RETURNS void LANGUAGE sql AS $$
    INSERT INTO catalog_changes (target_object, id, updated_at, gone) VALUES (p_object, p_id, now(), p_gone)
    ON CONFLICT (id, target_object) DO UPDATE SET updated_at = EXCLUDED.updated_at, gone = EXCLUDED.gone
  $$`,
  // Recomputes the gated work counts (writers may also adjust them incrementally).
  `CREATE FUNCTION catalog_refresh_work_counts() RETURNS void LANGUAGE sql AS $$
    UPDATE companies c SET work_count = coalesce(x.n, 0), work_count_sfw = coalesce(x.s, 0)
    FROM companies c2 LEFT JOIN (
      SELECT wc.company_id, count(*) AS n, count(*) FILTER (WHERE NOT w.nsfw) AS s
      FROM work_companies wc JOIN works w ON w.id = wc.work_id AND w.live GROUP BY wc.company_id
    ) x ON x.company_id = c2.id
    WHERE c.id = c2.id AND (c.work_count, c.work_count_sfw) IS DISTINCT FROM (coalesce(x.n, 0), coalesce(x.s, 0));
    UPDATE tags t SET work_count = coalesce(x.n, 0), work_count_sfw = coalesce(x.s, 0)
    FROM tags t2 LEFT JOIN (
      SELECT wt.tag_id, count(*) AS n, count(*) FILTER (WHERE NOT w.nsfw) AS s
      FROM work_tags wt JOIN works w ON w.id = wt.work_id AND w.live GROUP BY wt.tag_id
    ) x ON x.tag_id = t2.id
    WHERE t.id = t2.id AND (t.work_count, t.work_count_sfw) IS DISTINCT FROM (coalesce(x.n, 0), coalesce(x.s, 0));
    UPDATE engines e SET work_count = coalesce(x.n, 0), work_count_sfw = coalesce(x.s, 0)
    FROM engines e2 LEFT JOIN (
      SELECT w.engine_id, count(*) AS n, count(*) FILTER (WHERE NOT w.nsfw) AS s
      FROM works w WHERE w.live AND w.engine_id IS NOT NULL GROUP BY w.engine_id
    ) x ON x.engine_id = e2.id
    WHERE e.id = e2.id AND (e.work_count, e.work_count_sfw) IS DISTINCT FROM (coalesce(x.n, 0), coalesce(x.s, 0));
  $$`,
  // A merged edit: `entity_type` is the editing-engine type (`catalog.work`), `seq` the
  // entity's revision number, `field_diffs` a FieldDiff array [{key, from, to}] with keys like
  // `catalog.work.titles`.
  `CREATE TABLE revisions (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    entity_type text NOT NULL CHECK (entity_type ~ '^[a-z0-9_]+(\\.[a-z0-9_]+)+$' AND length(entity_type) <= 64),
    entity_id bigint NOT NULL,
    seq integer NOT NULL CHECK (seq >= 1),
    proposal_id bigint,
    author_uid text,
    note text NOT NULL DEFAULT '' CHECK (length(note) <= 2000),
    field_diffs jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(field_diffs) = 'array'),
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (entity_type, entity_id, seq)
  )`,

  // --- Read indexes --------------------------------------------------------------------------------
  // Works: one keyset index per sort (see the header), facet filters, reverse lookups.
  `CREATE INDEX works_updated ON works (updated_at, id) WHERE live`,
  `CREATE INDEX works_released_asc ON works ((coalesce(released_key, 2147483647)), id) WHERE live`,
  `CREATE INDEX works_released_desc ON works ((coalesce(released_key, -1)), id) WHERE live`,
  `CREATE INDEX works_popularity ON works (popularity, id) WHERE live`,
  `CREATE INDEX works_rating_vndb ON works ((coalesce(rating_vndb, -1)), id) WHERE live`,
  `CREATE INDEX works_rating_bangumi ON works ((coalesce(rating_bangumi, -1)), id) WHERE live`,
  `CREATE INDEX works_rating_egs ON works ((coalesce(rating_egs, -1)), id) WHERE live`,
  `CREATE INDEX works_rating_steam ON works ((coalesce(rating_steam, -1)), id) WHERE live`,
  `CREATE INDEX works_rating_dlsite ON works ((coalesce(rating_dlsite, -1)), id) WHERE live`,
  `CREATE INDEX works_olang ON works (olang, id) WHERE live`,
  `CREATE INDEX works_platforms ON works USING gin (platforms) WHERE live`,
  `CREATE INDEX works_media ON works USING gin (media) WHERE live`,
  `CREATE INDEX works_engine ON works (engine_id, id) WHERE engine_id IS NOT NULL`,
  `CREATE INDEX works_merged_into ON works (merged_into) WHERE merged_into IS NOT NULL`,
  `CREATE UNIQUE INDEX work_titles_one_main ON work_titles (work_id) WHERE is_main`,
  `CREATE INDEX work_search_key ON work_search USING gin (key gin_trgm_ops)`,
  `CREATE INDEX work_companies_company ON work_companies (company_id, work_id)`,
  `CREATE INDEX work_tags_tag ON work_tags (tag_id, work_id)`,
  `CREATE INDEX covers_work ON covers (work_id)`,
  // Releases: per work, and the calendar (dated months, year-only `YYYY0000`, undated NULL).
  `CREATE INDEX releases_work ON releases (work_id)`,
  `CREATE INDEX releases_calendar ON releases (released_key, id) WHERE live`,
  `CREATE INDEX release_companies_company ON release_companies (company_id)`,
  // Characters, credits: appearances of a character and of a credit name.
  `CREATE INDEX work_characters_character ON work_characters (character_id, work_id)`,
  `CREATE INDEX credits_credit_name ON credits (credit_name_id, work_id)`,
  `CREATE INDEX credits_character ON credits (character_id, work_id) WHERE character_id IS NOT NULL`,
  `CREATE INDEX credit_names_person ON credit_names (person_id) WHERE person_id IS NOT NULL`,
  `CREATE INDEX company_relations_to ON company_relations (to_id)`,
  `CREATE INDEX entity_refs_entity ON entity_refs (entity_id, entity_type)`,
  // Merge lookups (ENTITY_MERGED needs current_id; merges re-point chains).
  `CREATE INDEX catalog_redirects_current ON catalog_redirects (target_object, current_id)`,
  // The feed positions.
  `CREATE INDEX catalog_changes_position ON catalog_changes (txid, seq)`,
  `CREATE INDEX catalog_redirects_position ON catalog_redirects (txid, seq)`
]

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) {
    yield* sql.unsafe(statement)
  }
})
