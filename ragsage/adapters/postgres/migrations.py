"""Versioned schema migrations, run on an owner connection.

Each :class:`Migration` is a numbered list of statements; ``ragsage_schema``
records the version an install has reached, with the embedding width and
text-search configuration it was built for.  :func:`migrate` applies the
missing steps in order under an advisory lock, so an API and several workers
starting together migrate once.

Tenant tables share one pattern: a ``namespace`` column, ``ENABLE`` and
``FORCE ROW LEVEL SECURITY``, and a policy comparing ``namespace`` with the
transaction-local isolation setting.  With the setting unset the comparison is
NULL and nothing is visible, so a forgotten preamble fails closed.

Vectors live in an unsized ``vector`` column beside their width, and each width
gets its own partial HNSW index over ``embedding::vector(N)``.  That is what
lets an embedding generation of another width (a model change) be built next to
the serving one in the same table.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from ragsage.adapters.postgres.config import PostgresConfig, safe_identifier, safe_setting_name
from ragsage.adapters.postgres.keyword_function import keyword_search_statements
from ragsage.core.errors import ConfigurationError

SCHEMA_TABLE = "ragsage_schema"
TENANT_TABLES = ("ragsage_generations", "ragsage_documents", "ragsage_chunks")
SERVICE_TABLES = ("ragsage_blobs", "ragsage_jobs", "ragsage_pages", "ragsage_api_keys")
# Per-namespace keyword term counts (migration 13), written only by its functions.
STATISTICS_TABLES = ("ragsage_term_stats",)
# How long a cached term count serves searches before one counts it again.
TERM_COUNT_LIFETIME_SECONDS = 600
MIN_PGVECTOR = (0, 8, 0)
_LOCK_KEY = 0x7261_6773  # "rags": one advisory lock for every ragsage migration


class SchemaMismatch(RuntimeError):
    """The installed schema disagrees with the configuration migrating it.

    ``CREATE ... IF NOT EXISTS`` would accept a config whose width or text-search
    configuration differs from what is installed, and the disagreement would
    surface much later as a confusing insert error.  Raising before any DDL puts
    the error where the mistake is.
    """


@dataclass(frozen=True, slots=True)
class Migration:
    """One numbered schema step."""

    version: int
    description: str
    statements: Callable[[PostgresConfig], tuple[str, ...]]


def width_index_name(dim: int) -> str:
    return f"ragsage_chunks_embedding_{int(dim)}"


def hnsw_index_statement(config: PostgresConfig, dim: int, *, concurrently: bool = False) -> str:
    """The partial HNSW index serving every vector of width ``dim``.

    ``concurrently`` builds it without blocking writes (outside a transaction).
    """
    if not 1 <= dim <= 2000:
        raise ValueError(f"vector width out of range: {dim}")
    how = "CONCURRENTLY " if concurrently else ""
    return (
        f"CREATE INDEX {how}IF NOT EXISTS {width_index_name(dim)} ON ragsage_chunks "
        f"USING hnsw ((embedding::vector({dim})) vector_cosine_ops) "
        f"WITH (m = {config.hnsw_m}, ef_construction = {config.hnsw_ef_construction}) "
        f"WHERE embedding_dim = {dim}"
    )


def tenant_policy_statements(config: PostgresConfig, table: str) -> tuple[str, ...]:
    """Force Row-Level Security on ``table`` and scope it to the isolation setting."""
    safe_identifier(table)
    setting = safe_setting_name(config.isolation_variable)
    role = safe_identifier(config.app_role)
    predicate = f"namespace = current_setting('{setting}', true)"
    return (
        f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY",
        f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY",
        f"DROP POLICY IF EXISTS {table}_namespace ON {table}",
        f"CREATE POLICY {table}_namespace ON {table} USING ({predicate}) WITH CHECK ({predicate})",
        f'GRANT SELECT, INSERT, UPDATE, DELETE ON {table} TO "{role}"',
    )


def _v1(config: PostgresConfig) -> tuple[str, ...]:
    tsconfig = safe_identifier(config.text_search_config)
    role = safe_identifier(config.app_role)
    tables = (
        """CREATE TABLE IF NOT EXISTS ragsage_generations (
            namespace text NOT NULL,
            id integer NOT NULL,
            embedding_model text NOT NULL,
            embedding_dim integer NOT NULL CHECK (embedding_dim BETWEEN 1 AND 2000),
            state text NOT NULL CHECK (state IN ('building', 'active', 'retired')),
            created_at timestamptz NOT NULL DEFAULT now(),
            activated_at timestamptz,
            PRIMARY KEY (namespace, id)
        )""",
        """CREATE UNIQUE INDEX IF NOT EXISTS ragsage_generations_one_active
            ON ragsage_generations (namespace) WHERE state = 'active'""",
        """CREATE TABLE IF NOT EXISTS ragsage_documents (
            namespace text NOT NULL,
            id text NOT NULL,
            content_hash text NOT NULL,
            title text NOT NULL,
            source text NOT NULL,
            metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
            created_at timestamptz NOT NULL DEFAULT now(),
            updated_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (namespace, id)
        )""",
        """CREATE INDEX IF NOT EXISTS ragsage_documents_hash
            ON ragsage_documents (namespace, content_hash)""",
        f"""CREATE TABLE IF NOT EXISTS ragsage_chunks (
            namespace text NOT NULL,
            generation integer NOT NULL,
            document_id text NOT NULL,
            ordinal integer NOT NULL CHECK (ordinal >= 0),
            text text NOT NULL,
            embed_text text NOT NULL,
            heading_path text[] NOT NULL DEFAULT '{{}}',
            headings text NOT NULL DEFAULT '',
            page_numbers integer[] NOT NULL DEFAULT '{{}}',
            metadata jsonb NOT NULL DEFAULT '{{}}'::jsonb,
            source text NOT NULL,
            created_at timestamptz,
            embedding_model text NOT NULL,
            embedding_dim integer NOT NULL,
            embedding vector NOT NULL,
            lexical tsvector GENERATED ALWAYS AS (
                setweight(to_tsvector('{tsconfig}'::regconfig, headings), 'A')
                || setweight(to_tsvector('{tsconfig}'::regconfig, text), 'D')
            ) STORED,
            inserted_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (namespace, generation, document_id, ordinal),
            CHECK (vector_dims(embedding) = embedding_dim),
            FOREIGN KEY (namespace, document_id) REFERENCES ragsage_documents (namespace, id)
                ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED
        )""",
        """CREATE INDEX IF NOT EXISTS ragsage_chunks_document
            ON ragsage_chunks (namespace, document_id, generation, ordinal)""",
        "CREATE INDEX IF NOT EXISTS ragsage_chunks_lexical ON ragsage_chunks USING gin (lexical)",
        hnsw_index_statement(config, config.embedding_dim),
        f'GRANT USAGE ON SCHEMA public TO "{role}"',
    )
    policies = tuple(s for table in TENANT_TABLES for s in tenant_policy_statements(config, table))
    return tables + policies


SYSTEM_ROLE = "ragsage_system"


def _unforced(table: str, statement: str) -> tuple[str, ...]:
    """Run a data fix-up on every namespace's rows during a migration.

    The owner is subject to the forced policy too, so backfills lift FORCE for
    the one statement; DDL is transactional, so no other session ever sees the
    table unforced (they wait on the ALTER's lock instead).
    """
    return (
        f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY",
        statement,
        f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY",
    )


def _v2(config: PostgresConfig) -> tuple[str, ...]:
    role = safe_identifier(config.app_role)
    documents = (
        """ALTER TABLE ragsage_documents
            ADD COLUMN IF NOT EXISTS external_id text,
            ADD COLUMN IF NOT EXISTS filename text,
            ADD COLUMN IF NOT EXISTS media_type text,
            ADD COLUMN IF NOT EXISTS size_bytes bigint,
            ADD COLUMN IF NOT EXISTS status text NOT NULL DEFAULT 'ready'
                CHECK (status IN ('queued', 'processing', 'ready', 'failed')),
            ADD COLUMN IF NOT EXISTS error text""",
        *_unforced(
            "ragsage_documents",
            "UPDATE ragsage_documents SET external_id = source, filename = source "
            "WHERE external_id IS NULL",
        ),
        "ALTER TABLE ragsage_documents ALTER COLUMN external_id SET NOT NULL",
        """CREATE UNIQUE INDEX IF NOT EXISTS ragsage_documents_external
            ON ragsage_documents (namespace, external_id)""",
    )
    tables = (
        """CREATE TABLE IF NOT EXISTS ragsage_blobs (
            namespace text NOT NULL,
            content_hash text NOT NULL,
            data bytea NOT NULL,
            size_bytes bigint NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (namespace, content_hash)
        )""",
        # Uploads are mostly compressed already (PDF, DOCX, images): skip pglz's attempt.
        "ALTER TABLE ragsage_blobs ALTER COLUMN data SET STORAGE EXTERNAL",
        """CREATE TABLE IF NOT EXISTS ragsage_jobs (
            namespace text NOT NULL,
            id uuid NOT NULL,
            document_id text NOT NULL,
            kind text NOT NULL CHECK (kind IN ('ingest', 'reindex')),
            state text NOT NULL
                CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
            stage text,
            content_hash text NOT NULL,
            filename text NOT NULL,
            media_type text,
            metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
            generation integer,
            attempts integer NOT NULL DEFAULT 0,
            deliveries integer NOT NULL DEFAULT 0,
            error text,
            timings jsonb NOT NULL DEFAULT '{}'::jsonb,
            result jsonb,
            lease_expires_at timestamptz,
            enqueued_at timestamptz,
            created_at timestamptz NOT NULL DEFAULT now(),
            updated_at timestamptz NOT NULL DEFAULT now(),
            started_at timestamptz,
            finished_at timestamptz,
            PRIMARY KEY (namespace, id)
        )""",
        "CREATE INDEX IF NOT EXISTS ragsage_jobs_recent ON ragsage_jobs (namespace, created_at)",
        """CREATE INDEX IF NOT EXISTS ragsage_jobs_document
            ON ragsage_jobs (namespace, document_id, created_at)""",
        """CREATE INDEX IF NOT EXISTS ragsage_jobs_open ON ragsage_jobs (state, lease_expires_at)
            WHERE state IN ('queued', 'running')""",
        """CREATE TABLE IF NOT EXISTS ragsage_pages (
            namespace text NOT NULL,
            content_hash text NOT NULL,
            number integer NOT NULL,
            text text NOT NULL,
            route text NOT NULL CHECK (route IN ('text', 'vision')),
            created_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (namespace, content_hash, number)
        )""",
    )
    policies = tuple(
        s
        for table in ("ragsage_blobs", "ragsage_jobs", "ragsage_pages")
        for s in tenant_policy_statements(config, table)
    )
    return documents + tables + policies + _system_functions(role)


def _system_functions(app_role: str) -> tuple[str, ...]:
    """The named, privileged operations that must see every namespace.

    Each is a SECURITY DEFINER function owned by ``ragsage_system``, a role that
    cannot log in and whose only extra right is a read policy on the tables the
    function needs.  The app role may call them and nothing more; each returns
    only what its caller needs (ids and counts, never document text).
    """
    system = SYSTEM_ROLE
    return (
        f"""DO $$ BEGIN
            IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{system}') THEN
                CREATE ROLE "{system}" NOLOGIN NOSUPERUSER NOBYPASSRLS NOINHERIT;
            END IF;
        END $$""",
        f'GRANT "{system}" TO CURRENT_USER',
        f'GRANT USAGE ON SCHEMA public TO "{system}"',
        f'GRANT SELECT ON ragsage_jobs, ragsage_documents TO "{system}"',
        "DROP POLICY IF EXISTS ragsage_jobs_system ON ragsage_jobs",
        f'CREATE POLICY ragsage_jobs_system ON ragsage_jobs FOR SELECT TO "{system}" USING (true)',
        "DROP POLICY IF EXISTS ragsage_documents_system ON ragsage_documents",
        "CREATE POLICY ragsage_documents_system ON ragsage_documents FOR SELECT "
        f'TO "{system}" USING (true)',
        """CREATE OR REPLACE FUNCTION ragsage_stale_jobs(
                unsent_grace double precision, requeue_after double precision)
            RETURNS TABLE (namespace text, job_id uuid)
            LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
                SELECT j.namespace, j.id FROM ragsage_jobs j
                WHERE (j.state = 'running' AND j.lease_expires_at < now())
                   OR (j.state = 'queued' AND j.enqueued_at IS NULL
                       AND j.updated_at < now() - make_interval(secs => unsent_grace))
                   OR (j.state = 'queued'
                       AND j.enqueued_at < now() - make_interval(secs => requeue_after))
                ORDER BY j.created_at LIMIT 1000
            $$""",
        """CREATE OR REPLACE FUNCTION ragsage_job_counts()
            RETURNS TABLE (namespace text, state text, jobs bigint)
            LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
                SELECT j.namespace, j.state, count(*) FROM ragsage_jobs j GROUP BY 1, 2
            $$""",
        """CREATE OR REPLACE FUNCTION ragsage_namespaces()
            RETURNS SETOF text
            LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
                SELECT DISTINCT d.namespace FROM ragsage_documents d ORDER BY 1
            $$""",
        *(
            statement
            for function in (
                "ragsage_stale_jobs(double precision, double precision)",
                "ragsage_job_counts()",
                "ragsage_namespaces()",
            )
            for statement in (
                f'ALTER FUNCTION {function} OWNER TO "{system}"',
                f"REVOKE ALL ON FUNCTION {function} FROM PUBLIC",
                f'GRANT EXECUTE ON FUNCTION {function} TO "{app_role}"',
            )
        ),
    )


def _v3(config: PostgresConfig) -> tuple[str, ...]:
    role = safe_identifier(config.app_role)
    system = SYSTEM_ROLE
    return (
        """CREATE TABLE IF NOT EXISTS ragsage_api_keys (
            namespace text NOT NULL,
            id text NOT NULL,
            key_hash text NOT NULL,
            role text NOT NULL CHECK (role IN ('read', 'write', 'admin')),
            name text NOT NULL DEFAULT '',
            created_at timestamptz NOT NULL DEFAULT now(),
            revoked_at timestamptz,
            PRIMARY KEY (namespace, id)
        )""",
        "CREATE UNIQUE INDEX IF NOT EXISTS ragsage_api_keys_hash ON ragsage_api_keys (key_hash)",
        *tenant_policy_statements(config, "ragsage_api_keys"),
        f'GRANT SELECT ON ragsage_api_keys TO "{system}"',
        "DROP POLICY IF EXISTS ragsage_api_keys_system ON ragsage_api_keys",
        "CREATE POLICY ragsage_api_keys_system ON ragsage_api_keys FOR SELECT "
        f'TO "{system}" USING (true)',
        # The one door from a presented key to its namespace: exact hash match,
        # live keys only, and nothing returned but what authorisation needs.
        """CREATE OR REPLACE FUNCTION ragsage_find_api_key(presented_hash text)
            RETURNS TABLE (namespace text, key_id text, role text)
            LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
                SELECT k.namespace, k.id, k.role FROM ragsage_api_keys k
                WHERE k.key_hash = presented_hash AND k.revoked_at IS NULL
            $$""",
        f'ALTER FUNCTION ragsage_find_api_key(text) OWNER TO "{system}"',
        "REVOKE ALL ON FUNCTION ragsage_find_api_key(text) FROM PUBLIC",
        f'GRANT EXECUTE ON FUNCTION ragsage_find_api_key(text) TO "{role}"',
    )


# The search filters ($5 to $9) every keyword search function applies, one
# clause each: as one string for SQL built here, and as the quoted lines of a
# function body that assembles its statement with EXECUTE.
_FILTER_CLAUSES = (
    "AND ($5::text[] IS NULL OR c.document_id = ANY($5)) ",
    "AND ($6::text[] IS NULL OR c.source = ANY($6)) ",
    "AND ($7::jsonb IS NULL OR c.metadata @> $7) ",
    "AND ($8::timestamptz IS NULL OR c.created_at >= $8) ",
    "AND ($9::timestamptz IS NULL OR c.created_at <= $9) ",
)
_KEYWORD_FILTERS = "".join(_FILTER_CLAUSES)
_FILTER_LINES = "\n".join(f"                    '{clause}'" for clause in _FILTER_CLAUSES)


def _v4(config: PostgresConfig) -> tuple[str, ...]:
    """Keyword search through one named function that can use the GIN index.

    Under Row-Level Security the planner may not evaluate a non-leakproof
    operator before the policy, and full-text ``@@`` is not leakproof, so a
    policy-scoped query can never walk the GIN index: every search scans the
    namespace.  This function runs as ``ragsage_system`` (no policy in the way),
    scopes itself to the caller's namespace setting, and returns only chunk ids
    and ranks; the caller then reads the chunks themselves under RLS as usual.
    """
    role = safe_identifier(config.app_role)
    setting = safe_setting_name(config.isolation_variable)
    cfg = safe_identifier(config.text_search_config)
    system = SYSTEM_ROLE
    signature = (
        "ragsage_lexical_search(text, boolean, integer, integer, integer, text[], text[], "
        "jsonb, timestamptz, timestamptz)"
    )
    return (
        f'GRANT SELECT ON ragsage_chunks, ragsage_generations TO "{system}"',
        *(
            statement
            for table in ("ragsage_chunks", "ragsage_generations")
            for statement in (
                f"DROP POLICY IF EXISTS {table}_system ON {table}",
                f'CREATE POLICY {table}_system ON {table} FOR SELECT TO "{system}" USING (true)',
            )
        ),
        f"""CREATE OR REPLACE FUNCTION ragsage_lexical_search(
                query_text text, with_syntax boolean, k integer, common_rows integer,
                sample_rows integer, document_ids text[], sources text[], metadata jsonb,
                created_after timestamptz, created_before timestamptz)
            RETURNS TABLE (document_id text, ordinal integer, rank real)
            LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $fn$
            #variable_conflict use_column
            DECLARE
                ns text := current_setting('{setting}', true);
                gen integer;
                terms text[];
                rare text[] := '{{}}';
                term text;
                hits bigint;
                fewest bigint := NULL;
                rarest text;
                candidates tsquery;
                ranking tsquery;
                limit_rows integer := NULL;
            BEGIN
                IF ns IS NULL OR ns = '' THEN RETURN; END IF;
                SELECT g.id INTO gen FROM ragsage_generations g
                    WHERE g.namespace = ns AND g.state = 'active';
                IF gen IS NULL THEN RETURN; END IF;
                IF with_syntax THEN
                    candidates := websearch_to_tsquery('{cfg}'::regconfig, query_text);
                    ranking := candidates;
                ELSE
                    SELECT array_agg(DISTINCT t ORDER BY t) INTO terms FROM unnest(
                        tsvector_to_array(to_tsvector('{cfg}'::regconfig, query_text))) t;
                    IF terms IS NULL THEN RETURN; END IF;
                    terms := terms[1:32];
                    -- A term in more than common_rows chunks is too common to pick
                    -- candidates with; counting stops at the cap, via the index.
                    FOREACH term IN ARRAY terms LOOP
                        EXECUTE 'SELECT count(*) FROM (SELECT 1 FROM ragsage_chunks c '
                            'WHERE c.namespace = $1 AND c.generation = $2 AND c.lexical @@ $3 '
                            'LIMIT $4) s'
                            INTO hits USING ns, gen, quote_literal(term)::tsquery, common_rows + 1;
                        IF hits <= common_rows THEN rare := rare || term; END IF;
                        IF fewest IS NULL OR hits < fewest THEN
                            fewest := hits;
                            rarest := term;
                        END IF;
                    END LOOP;
                    ranking := array_to_string(
                        ARRAY(SELECT quote_literal(t) FROM unnest(terms) t), ' | ')::tsquery;
                    IF cardinality(rare) > 0 THEN
                        candidates := array_to_string(
                            ARRAY(SELECT quote_literal(t) FROM unnest(rare) t), ' | ')::tsquery;
                    ELSE
                        -- Only common terms: chunks holding all of them, if there are
                        -- enough; else a bounded sample of the rarest term's chunks.
                        candidates := array_to_string(
                            ARRAY(SELECT quote_literal(t) FROM unnest(terms) t), ' & ')::tsquery;
                        EXECUTE 'SELECT count(*) FROM (SELECT 1 FROM ragsage_chunks c '
                            'WHERE c.namespace = $1 AND c.generation = $2 AND c.lexical @@ $3 '
                            'LIMIT $4) s'
                            INTO hits USING ns, gen, candidates, k;
                        IF hits < k THEN
                            candidates := quote_literal(rarest)::tsquery;
                        END IF;
                        limit_rows := sample_rows;
                    END IF;
                END IF;
                IF numnode(candidates) = 0 THEN RETURN; END IF;
                RETURN QUERY EXECUTE
                    'SELECT h.document_id, h.ordinal, ts_rank(h.lexical, $3, 1) AS rank FROM ('
                    'SELECT c.document_id, c.ordinal, c.lexical FROM ragsage_chunks c '
                    'WHERE c.namespace = $1 AND c.generation = $2 AND c.lexical @@ $4 '
{_FILTER_LINES}
                    'LIMIT $10) h ORDER BY rank DESC, h.document_id, h.ordinal LIMIT $11'
                    USING ns, gen, ranking, candidates, document_ids, sources, metadata,
                        created_after, created_before, limit_rows, k;
            END $fn$""",
        f'ALTER FUNCTION {signature} OWNER TO "{system}"',
        f"REVOKE ALL ON FUNCTION {signature} FROM PUBLIC",
        f'GRANT EXECUTE ON FUNCTION {signature} TO "{role}"',
    )


def _v5(config: PostgresConfig) -> tuple[str, ...]:
    return (
        # Which adapter produced a generation's vectors, so any process can rebuild
        # the embedder a namespace's queries and new uploads must use.
        "ALTER TABLE ragsage_generations ADD COLUMN IF NOT EXISTS embedder text NOT NULL "
        "DEFAULT 'hashing'",
        "ALTER TABLE ragsage_generations ADD COLUMN IF NOT EXISTS retired_at timestamptz",
        """CREATE INDEX IF NOT EXISTS ragsage_jobs_generation
            ON ragsage_jobs (namespace, generation, state) WHERE kind = 'reindex'""",
    )


def _v6(config: PostgresConfig) -> tuple[str, ...]:
    # A chunk row (text, embed text, tsvector, 1.5 KB vector) passes Postgres's
    # default 2 KB TOAST threshold, and the vector and tsvector were moved out of
    # line: every distance computed outside the HNSW index and every ts_rank then
    # read extra pages (a 2,000-row scan touched 12k buffers, ~9 ms; inline, 850
    # buffers, ~2 ms).  MAIN keeps both in the row, and the higher target lets a
    # full row stay on its page, with the compressible texts giving way first.
    # Rows written earlier keep their layout until rewritten (a re-index, or
    # VACUUM FULL).
    return (
        "ALTER TABLE ragsage_chunks ALTER COLUMN embedding SET STORAGE MAIN, "
        "ALTER COLUMN lexical SET STORAGE MAIN, SET (toast_tuple_target = 8160)",
    )


# Kept in step with ragsage.core.text.identifier_words (a test compares them).
_IDENTIFIER_WORDS = r"""CREATE OR REPLACE FUNCTION ragsage_identifier_words(t text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $fn$
    SELECT coalesce(string_agg(lower(p), ' '), '') FROM
        regexp_matches(t, '[A-Za-z_][A-Za-z0-9_]*(?:[./:]+[A-Za-z_][A-Za-z0-9_]*)+'
            '|[A-Za-z0-9]*[a-z][A-Z][A-Za-z0-9]*|[A-Z]+[A-Z][a-z][A-Za-z0-9]*', 'g') AS m(ident),
        LATERAL (
            SELECT s FROM regexp_split_to_table(m.ident[1], '[./:]+') s
                WHERE s <> '' AND s <> m.ident[1]
            UNION ALL
            SELECT c FROM regexp_split_to_table(m.ident[1], '[./:]+') s,
                LATERAL regexp_split_to_table(
                    regexp_replace(regexp_replace(s, '([A-Z]+)([A-Z][a-z])', '\1 \2', 'g'),
                        '([a-z0-9])([A-Z])', '\1 \2', 'g'), ' ') c
                WHERE s <> '' AND c <> s
        ) parts(p)
    $fn$"""


# How migration 7's search reads each term's count: a capped count per term.
_COUNT_EACH_TERM = """                    FOREACH term IN ARRAY terms LOOP
                        EXECUTE 'SELECT count(*) FROM (SELECT 1 FROM ragsage_chunks c '
                            'WHERE c.namespace = $1 AND c.generation = $2 AND c.lexical @@ $3 '
                            'LIMIT $4) s'
                            INTO hits USING ns, gen, quote_literal(term)::tsquery, common_rows + 1;
"""
# How migration 13's does: from the namespace's cache, counted where missing or old.
_CACHED_TERM_COUNTS = """                    FOR term, hits IN
                        SELECT n.term, n.chunks
                        FROM ragsage_term_counts(gen, terms, common_rows + 1) n ORDER BY n.term
                    LOOP
                        hits := least(hits, common_rows + 1);
"""


def _lexical_search_function(config: PostgresConfig, *, volatility: str, counting: str) -> str:
    """``ragsage_lexical_search`` as migrations 7 and 13 define it.

    They differ only in how a query term's chunk count reaches ``hits``
    (``counting``: the head of the loop over ``terms``) and, since a cache
    write happens inside, in ``volatility``.
    """
    tsconfig = safe_identifier(config.text_search_config)
    setting = safe_setting_name(config.isolation_variable)
    return f"""CREATE OR REPLACE FUNCTION ragsage_lexical_search(
                query_text text, with_syntax boolean, k integer, common_rows integer,
                sample_rows integer, document_ids text[], sources text[], metadata jsonb,
                created_after timestamptz, created_before timestamptz,
                weighted boolean DEFAULT true, target_generation integer DEFAULT NULL)
            RETURNS TABLE (document_id text, ordinal integer, rank real)
            LANGUAGE plpgsql {volatility} SECURITY DEFINER SET search_path = public, pg_temp AS $fn$
            #variable_conflict use_column
            DECLARE
                ns text := current_setting('{setting}', true);
                gen integer;
                terms text[];
                rare text[] := '{{}}';
                term text;
                hits bigint;
                fewest bigint := NULL;
                rarest text;
                candidates tsquery;
                ranking tsquery;
                limit_rows integer := NULL;
                total double precision;
                rare_hits bigint[] := '{{}}';
                scores text[] := '{{}}';
                -- ts_rank's weights for labels D, C, B, A: headings (A) count as
                -- much as text (D).  Weighted ten times over, as by default, the
                -- heading words repeated in every chunk of a section outranked
                -- the one chunk that held the answer (docs/retrieval.md).
                weights text := '{{0.1, 0.2, 0.4, 0.1}}';
                rank_sql text := 'ts_rank(''{{0.1, 0.2, 0.4, 0.1}}'', h.lexical, $3, 1)';
            BEGIN
                IF ns IS NULL OR ns = '' THEN RETURN; END IF;
                IF target_generation IS NULL THEN
                    SELECT g.id INTO gen FROM ragsage_generations g
                        WHERE g.namespace = ns AND g.state = 'active';
                ELSE
                    -- Only a live generation of the caller's own namespace: a
                    -- retired or foreign id finds nothing, as if it did not exist.
                    SELECT g.id INTO gen FROM ragsage_generations g
                        WHERE g.namespace = ns AND g.id = target_generation
                        AND g.state IN ('active', 'building');
                END IF;
                IF gen IS NULL THEN RETURN; END IF;
                IF with_syntax THEN
                    candidates := websearch_to_tsquery('{tsconfig}'::regconfig, query_text);
                    ranking := candidates;
                ELSE
                    SELECT array_agg(DISTINCT t ORDER BY t) INTO terms FROM unnest(
                        tsvector_to_array(to_tsvector('{tsconfig}'::regconfig,
                            query_text || ' ' || ragsage_identifier_words(query_text)))) t;
                    IF terms IS NULL THEN RETURN; END IF;
                    terms := terms[1:32];
                    -- IDF from the namespace's own capped counts against a fixed
                    -- scale, never from table-wide figures (row estimates, ANALYZE's
                    -- common lexemes): those mix every tenant's text, so one tenant's
                    -- documents would move another's ranking and scores.
                    total := 10 * (common_rows + 1);
{counting}                        IF hits <= common_rows THEN
                            rare := rare || term;
                            rare_hits := rare_hits || hits;
                        END IF;
                        IF fewest IS NULL OR hits < fewest THEN
                            fewest := hits;
                            rarest := term;
                        END IF;
                        IF hits > 0 THEN
                            scores := scores || format(
                                '%s * ts_rank(%L, h.lexical, %L::tsquery, 1)',
                                ln(1.0 + (total - hits + 0.5) / (hits + 0.5)), weights,
                                quote_literal(term));
                        END IF;
                    END LOOP;
                    IF weighted AND cardinality(scores) > 0 THEN
                        rank_sql := array_to_string(scores, ' + ');
                    END IF;
                    ranking := array_to_string(
                        ARRAY(SELECT quote_literal(t) FROM unnest(terms) t), ' | ')::tsquery;
                    IF cardinality(rare) > 0 THEN
                        -- The rarest terms first, while the chunks they bring stay
                        -- within sample_rows: ranking every chunk that holds any
                        -- distinctive term is what made long questions slow.
                        candidates := array_to_string(ARRAY(
                            SELECT quote_literal(r.t) FROM (
                                SELECT u.t, u.n,
                                    sum(u.n) OVER (ORDER BY u.n, u.t) - u.n AS before
                                FROM unnest(rare, rare_hits) AS u(t, n)) r
                            WHERE r.before < sample_rows ORDER BY r.n, r.t), ' | ')::tsquery;
                    ELSE
                        candidates := array_to_string(
                            ARRAY(SELECT quote_literal(t) FROM unnest(terms) t), ' & ')::tsquery;
                        EXECUTE 'SELECT count(*) FROM (SELECT 1 FROM ragsage_chunks c '
                            'WHERE c.namespace = $1 AND c.generation = $2 AND c.lexical @@ $3 '
                            'LIMIT $4) s'
                            INTO hits USING ns, gen, candidates, k;
                        IF hits < k THEN
                            candidates := quote_literal(rarest)::tsquery;
                        END IF;
                        limit_rows := sample_rows;
                    END IF;
                END IF;
                IF numnode(candidates) = 0 THEN RETURN; END IF;
                RETURN QUERY EXECUTE
                    'SELECT h.document_id, h.ordinal, (' || rank_sql || ')::real AS rank FROM ('
                    'SELECT c.document_id, c.ordinal, c.lexical FROM ragsage_chunks c '
                    'WHERE c.namespace = $1 AND c.generation = $2 AND c.lexical @@ $4 '
{_FILTER_LINES}
                    'LIMIT $10) h ORDER BY rank DESC, h.document_id, h.ordinal LIMIT $11'
                    USING ns, gen, ranking, candidates, document_ids, sources, metadata,
                        created_after, created_before, limit_rows, k;
            END $fn$"""


def _v7(config: PostgresConfig) -> tuple[str, ...]:
    """Identifier-aware keyword indexing and IDF-weighted keyword ranking.

    The text-search parser keeps ``os.path.join`` or ``/etc/hosts`` as one
    token and never splits ``getLogger``, so the generated column now also
    indexes the parts of every such identifier (:data:`_IDENTIFIER_WORDS`);
    re-adding the column recomputes it for every existing row.

    ``ts_rank`` knows nothing of how common a term is, so in a question like
    "how do I use ThreadPoolExecutor" the word "use" counted as much as the
    name.  The search function already counts each query term's chunks (capped)
    to choose candidates; with ``weighted`` it now also ranks by the sum of each
    matched term's ``ts_rank`` times its inverse document frequency, estimated
    from those namespace-scoped counts against a fixed scale (never table-wide
    statistics, which would let one tenant's text move another's ranking).
    Headings are weighted like text, and an optional ``target_generation``
    (active or building, of the caller's namespace) is searched instead of the
    active one — how a re-index gate evaluates a generation before it goes live.
    """
    tsconfig = safe_identifier(config.text_search_config)
    role = safe_identifier(config.app_role)
    system = SYSTEM_ROLE
    old_signature = (
        "ragsage_lexical_search(text, boolean, integer, integer, integer, text[], text[], "
        "jsonb, timestamptz, timestamptz)"
    )
    signature = old_signature[:-1] + ", boolean, integer)"
    return (
        _IDENTIFIER_WORDS,
        "ALTER TABLE ragsage_chunks DROP COLUMN lexical",
        f"""ALTER TABLE ragsage_chunks ADD COLUMN lexical tsvector GENERATED ALWAYS AS (
            setweight(to_tsvector('{tsconfig}'::regconfig, headings), 'A')
            || setweight(to_tsvector('{tsconfig}'::regconfig,
                ragsage_identifier_words(headings)), 'A')
            || setweight(to_tsvector('{tsconfig}'::regconfig, text), 'D')
            || setweight(to_tsvector('{tsconfig}'::regconfig,
                ragsage_identifier_words(text)), 'D')
        ) STORED""",
        "ALTER TABLE ragsage_chunks ALTER COLUMN lexical SET STORAGE MAIN",
        "CREATE INDEX IF NOT EXISTS ragsage_chunks_lexical ON ragsage_chunks USING gin (lexical)",
        f"DROP FUNCTION IF EXISTS {old_signature}",
        _lexical_search_function(config, volatility="STABLE", counting=_COUNT_EACH_TERM),
        f'ALTER FUNCTION {signature} OWNER TO "{system}"',
        f"REVOKE ALL ON FUNCTION {signature} FROM PUBLIC",
        f'GRANT EXECUTE ON FUNCTION {signature} TO "{role}"',
    )


def _v8(config: PostgresConfig) -> tuple[str, ...]:
    """Held generations.

    A re-index run with an evaluation gate must not switch by itself when its
    last document lands: ``held`` keeps a complete building generation waiting
    for an explicit decision.  (Keyword search over such a generation, to
    evaluate it before it serves anyone, is migration 7's ``target_generation``.)
    """
    return (
        "ALTER TABLE ragsage_generations ADD COLUMN IF NOT EXISTS held boolean NOT NULL "
        "DEFAULT false",
        "COMMENT ON COLUMN ragsage_generations.held IS 'activation waits for an explicit decision'",
    )


def _v9(config: PostgresConfig) -> tuple[str, ...]:
    """Chunk spans: where in its page each chunk was cut from.

    Rows written before this migration read back as the span 0..0, "unknown";
    a constant default makes the new columns free to add on a full table.
    """
    return (
        "ALTER TABLE ragsage_chunks ADD COLUMN IF NOT EXISTS start_char integer NOT NULL DEFAULT 0",
        "ALTER TABLE ragsage_chunks ADD COLUMN IF NOT EXISTS end_char integer NOT NULL DEFAULT 0",
        "COMMENT ON COLUMN ragsage_chunks.start_char IS 'offset of the chunk in its page text'",
    )


def _v10(config: PostgresConfig) -> tuple[str, ...]:
    """Deliveries that died: the count the poison limit reads.

    ``deliveries`` counts every delivery that started a job, retries included;
    a job is poison only when deliveries keep ending without an outcome.
    """
    return (
        "ALTER TABLE ragsage_jobs ADD COLUMN IF NOT EXISTS lost_deliveries integer "
        "NOT NULL DEFAULT 0",
        "COMMENT ON COLUMN ragsage_jobs.lost_deliveries IS "
        "'deliveries whose worker stopped before recording an outcome'",
    )


def _v11(config: PostgresConfig) -> tuple[str, ...]:
    """Versions in upload order: the last upload of a document wins.

    Each upload of a document takes the next number from the document row (its
    row lock orders concurrent uploads); the row also records which number its
    stored chunks came from, so an older version finishing later is marked
    ``superseded`` instead of overwriting a newer one.
    """
    return (
        "ALTER TABLE ragsage_documents ADD COLUMN IF NOT EXISTS upload_version bigint "
        "NOT NULL DEFAULT 0",
        "ALTER TABLE ragsage_documents ADD COLUMN IF NOT EXISTS stored_version bigint "
        "NOT NULL DEFAULT 0",
        "ALTER TABLE ragsage_jobs ADD COLUMN IF NOT EXISTS version bigint",
        "COMMENT ON COLUMN ragsage_jobs.version IS "
        "'the upload''s place in its document''s order (ingest jobs since migration 11)'",
        "ALTER TABLE ragsage_jobs DROP CONSTRAINT IF EXISTS ragsage_jobs_state_check",
        "ALTER TABLE ragsage_jobs ADD CONSTRAINT ragsage_jobs_state_check CHECK (state IN "
        "('queued', 'running', 'succeeded', 'failed', 'cancelled', 'superseded'))",
    )


def _v12(config: PostgresConfig) -> tuple[str, ...]:
    """The gate's verdict on a generation, readable over HTTP as well as printed."""
    return (
        "ALTER TABLE ragsage_generations ADD COLUMN IF NOT EXISTS gate jsonb",
        "COMMENT ON COLUMN ragsage_generations.gate IS "
        "'the evaluation gate''s figures and decision, when a gate judged this generation'",
    )


def _v13(config: PostgresConfig) -> tuple[str, ...]:
    """Keyword term counts cached per namespace, so a search stops counting its terms.

    Migration 7's search counted, for every query term, the namespace's chunks
    holding it: up to 32 capped index scans on every search.  Those counts now
    live in ``ragsage_term_stats``, one row per namespace, generation and term,
    written by the search itself the first time it meets a term and again once
    the row is older than :data:`TERM_COUNT_LIFETIME_SECONDS`; a repeated term
    costs one index probe.  Writers never touch the table, so no two workers
    ever wait on each other for it (an ingest-time tally, tried first, cost the
    ingest a third of its speed), and the counts are the same capped ones as
    before, so candidates and weights are unchanged while a count is fresh.
    The empty term counts a generation's rows (capped), which dense search
    asks to tell a small namespace from a big one.  Everything stays per
    namespace: no tenant's text enters another's figures.
    """
    role = safe_identifier(config.app_role)
    setting = safe_setting_name(config.isolation_variable)
    system = SYSTEM_ROLE
    signature = (
        "ragsage_lexical_search(text, boolean, integer, integer, integer, text[], text[], "
        "jsonb, timestamptz, timestamptz, boolean, integer)"
    )
    counts = "ragsage_term_counts(integer, text[], integer)"
    predicate = f"namespace = current_setting('{setting}', true)"
    lifetime = int(TERM_COUNT_LIFETIME_SECONDS)
    table = "ragsage_term_stats"
    tables = (
        f"""CREATE TABLE IF NOT EXISTS {table} (
            namespace text NOT NULL,
            generation integer NOT NULL,
            term text NOT NULL,
            chunks bigint NOT NULL,
            cap bigint NOT NULL,
            counted_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (namespace, generation, term)
        )""",
        f"COMMENT ON TABLE {table} IS 'chunks holding each lexeme (capped at cap), per "
        "namespace and generation, as a search last counted them; the empty term counts rows'",
        f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY",
        f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY",
        f"DROP POLICY IF EXISTS {table}_system ON {table}",
        f'CREATE POLICY {table}_system ON {table} TO "{system}" USING (true) WITH CHECK (true)',
        f'GRANT SELECT, INSERT, UPDATE, DELETE ON {table} TO "{system}"',
        f"DROP POLICY IF EXISTS {table}_namespace ON {table}",
        f'CREATE POLICY {table}_namespace ON {table} FOR SELECT TO "{role}" USING ({predicate})',
        f'GRANT SELECT ON {table} TO "{role}"',
    )
    count_function = f"""CREATE OR REPLACE FUNCTION ragsage_term_counts(
                gen integer, wanted text[], cap integer)
            RETURNS TABLE (term text, chunks bigint)
            LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp AS $fn$
            #variable_conflict use_column
            DECLARE
                ns text := current_setting('{setting}', true);
                missing text[];
                one text;
                found bigint;
            BEGIN
                IF ns IS NULL OR ns = '' OR gen IS NULL THEN RETURN; END IF;
                SELECT array_agg(w.t ORDER BY w.t) INTO missing FROM unnest(wanted) AS w(t)
                    WHERE NOT EXISTS (SELECT 1 FROM ragsage_term_stats s
                        WHERE s.namespace = ns AND s.generation = gen AND s.term = w.t
                        AND (s.chunks < s.cap OR s.cap >= cap)
                        AND s.counted_at > now() - make_interval(secs => {lifetime}));
                FOREACH one IN ARRAY coalesce(missing, '{{}}') LOOP
                    IF one = '' THEN
                        SELECT count(*) INTO found FROM (SELECT 1 FROM ragsage_chunks c
                            WHERE c.namespace = ns AND c.generation = gen LIMIT cap) r;
                    ELSE
                        EXECUTE 'SELECT count(*) FROM (SELECT 1 FROM ragsage_chunks c '
                            'WHERE c.namespace = $1 AND c.generation = $2 AND c.lexical @@ $3 '
                            'LIMIT $4) r'
                            INTO found USING ns, gen, quote_literal(one)::tsquery, cap;
                    END IF;
                    INSERT INTO ragsage_term_stats AS s (namespace, generation, term, chunks, cap)
                        VALUES (ns, gen, one, found, cap)
                        ON CONFLICT (namespace, generation, term) DO UPDATE
                        SET chunks = EXCLUDED.chunks, cap = EXCLUDED.cap, counted_at = now();
                END LOOP;
                RETURN QUERY SELECT w.t, least(s.chunks, cap::bigint) FROM unnest(wanted) AS w(t)
                    JOIN ragsage_term_stats s
                    ON s.namespace = ns AND s.generation = gen AND s.term = w.t;
            END $fn$"""
    search = _lexical_search_function(config, volatility="VOLATILE", counting=_CACHED_TERM_COUNTS)
    return (
        *tables,
        count_function,
        f'ALTER FUNCTION {counts} OWNER TO "{system}"',
        f"REVOKE ALL ON FUNCTION {counts} FROM PUBLIC",
        f'GRANT EXECUTE ON FUNCTION {counts} TO "{role}"',
        search,
        f'ALTER FUNCTION {signature} OWNER TO "{system}"',
        f"REVOKE ALL ON FUNCTION {signature} FROM PUBLIC",
        f'GRANT EXECUTE ON FUNCTION {signature} TO "{role}"',
    )


# A query with none of these shapes holds no identifier to split (the pattern
# in ragsage_identifier_words cannot match without one), so the split is skipped.
_IDENTIFIER_HINT = r"[A-Za-z0-9_][./:]+[A-Za-z_]|[a-z][A-Z]|[A-Z][A-Z][a-z]"


def _v14(config: PostgresConfig) -> tuple[str, ...]:
    """Keyword search with fewer steps per call, returning the chunks themselves.

    Ranking and weights are migration 13's.  What changes is the work around
    them, measured on 242 real pages: the cached counts are read directly, in
    the same statement that computes the weights, and the counting function is
    called only for terms missing or stale there (then they are read again); a
    query with no identifier shape skips the identifier split; and the
    function returns the chunk columns, reached by row address from the
    candidates it ranked, so the caller no longer joins the table again under
    RLS for rows the function has just read (about a tenth of a keyword
    search's time).

    Candidates still come from the rarest terms, but a term is added only
    while all their chunks stay within ``sample_rows`` (the rarest one always):
    before, the term that crossed the line came in whole, so a sentence-long
    query often ranked 600 rows for a budget of 250, and ranking is the cost
    that grows with the rows.  Capping the rows themselves was tried and
    dropped: a LIMIT cuts at random, and keyword nDCG@10 on the python-docs
    set fell from 0.828 to 0.699.
    """
    return _keyword_search_v14(config, phrase_bonus=None)


# How migration 14's function ranks its candidates and returns the winners' rows.
_KEYWORD_RESULTS_V14 = f"""                RETURN QUERY EXECUTE
                    'SELECT c.document_id, c.ordinal, c.text, c.embed_text, c.heading_path, '
                    'c.page_numbers, c.metadata, c.source, c.created_at, c.start_char, '
                    'c.end_char, r.rank FROM ('
                    'SELECT h.at, h.document_id, h.ordinal, (' || rank_sql || ')::real AS rank '
                    'FROM (SELECT c.ctid AS at, c.document_id, c.ordinal, c.lexical '
                    'FROM ragsage_chunks c '
                    'WHERE c.namespace = $1 AND c.generation = $2 AND c.lexical @@ $4 '
{_FILTER_LINES}
                    'LIMIT $10) h ORDER BY rank DESC, h.document_id, h.ordinal LIMIT $11) r '
                    'JOIN ragsage_chunks c ON c.ctid = r.at '
                    'ORDER BY r.rank DESC, r.document_id, r.ordinal'
                    USING ns, gen, ranking, candidates, document_ids, sources, metadata,
                        created_after, created_before, limit_rows, k;"""


def _sql_literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _keyword_results_with_phrase(bonus: float) -> str:
    """Migration 16's ranking: :data:`_KEYWORD_RESULTS_V14` with the query's phrase.

    ``$12`` is the whole query as a phrase (its words in order, stop words
    counted as gaps).  Of the candidates, the ``2 k`` best by migration 14's
    rank are checked for it, and those holding it have their rank multiplied
    by ``bonus``: a chunk holding the phrase holds every word of the query,
    so it is among them, and checking 80 rows instead of 250 keeps the cost
    to a fraction of a millisecond.  When every word of the query is common,
    the candidates are a sample, cut at random, that could leave out the very
    chunk the words were copied from; so ``$13`` brings in the chunks holding
    all the words when they are fewer than ``k``, else those holding the phrase.
    """
    rescored = (
        "SELECT t.at, t.document_id, t.ordinal, (t.base * CASE WHEN $12::tsquery IS NOT NULL "
        f"AND t.lexical @@ $12 THEN {float(bonus)!r} ELSE 1 END)::real AS rank FROM ("
    )
    sampled = (
        "FROM ((SELECT c.ctid AS at, c.document_id, c.ordinal, c.lexical FROM ragsage_chunks c "
        f"WHERE c.namespace = $1 AND c.generation = $2 AND c.lexical @@ $4 {_KEYWORD_FILTERS}"
        "LIMIT $10)"
    )
    held = (
        " UNION (SELECT c.ctid, c.document_id, c.ordinal, c.lexical FROM ragsage_chunks c "
        f"WHERE c.namespace = $1 AND c.generation = $2 AND c.lexical @@ $13 {_KEYWORD_FILTERS})"
    )
    return f"""                RETURN QUERY EXECUTE
                    'SELECT c.document_id, c.ordinal, c.text, c.embed_text, c.heading_path, '
                    'c.page_numbers, c.metadata, c.source, c.created_at, c.start_char, '
                    'c.end_char, r.rank FROM ('
                    {_sql_literal(rescored)}
                    'SELECT h.at, h.document_id, h.ordinal, h.lexical, '
                    '(' || rank_sql || ') AS base '
                    {_sql_literal(sampled)}
                    || CASE WHEN held IS NULL THEN '' ELSE {_sql_literal(held)} END ||
                    ') h ORDER BY base DESC, h.document_id, h.ordinal LIMIT 2 * $11) t '
                    'ORDER BY rank DESC, t.document_id, t.ordinal LIMIT $11) r '
                    'JOIN ragsage_chunks c ON c.ctid = r.at '
                    'ORDER BY r.rank DESC, r.document_id, r.ordinal'
                    USING ns, gen, ranking, candidates, document_ids, sources, metadata,
                        created_after, created_before, limit_rows, k, phrase, held;"""


def _keyword_search_v14(config: PostgresConfig, *, phrase_bonus: float | None) -> tuple[str, ...]:
    """Migration 14's keyword search function; with ``phrase_bonus``, migration 16's."""
    tsconfig = safe_identifier(config.text_search_config)
    setting = safe_setting_name(config.isolation_variable)
    role = safe_identifier(config.app_role)
    system = SYSTEM_ROLE
    lifetime = int(TERM_COUNT_LIFETIME_SECONDS)
    arguments = (
        "text, boolean, integer, integer, integer, text[], text[], "
        "jsonb, timestamptz, timestamptz, boolean, integer"
    )
    signature = f"ragsage_lexical_search({arguments})"
    phrase_declared = phrase_made = keep_all_terms = keep_phrase = ""
    final_query = _KEYWORD_RESULTS_V14
    if phrase_bonus is not None:
        phrase_declared = (
            "\n                phrase tsquery := NULL;\n                held tsquery := NULL;"
        )
        # Two terms or more (three nodes): a one-word phrase is just the word.
        phrase_made = f"""
                phrase := phraseto_tsquery('{tsconfig}'::regconfig, query_text);
                IF numnode(phrase) < 3 THEN phrase := NULL; END IF;"""
        keep_all_terms = "\n                            held := candidates;"
        keep_phrase = "\n                        ELSE\n                            held := phrase;"
        final_query = _keyword_results_with_phrase(phrase_bonus)
    search = f"""CREATE FUNCTION ragsage_lexical_search(
                query_text text, with_syntax boolean, k integer, common_rows integer,
                sample_rows integer, document_ids text[], sources text[], metadata jsonb,
                created_after timestamptz, created_before timestamptz,
                weighted boolean DEFAULT true, target_generation integer DEFAULT NULL)
            RETURNS TABLE (document_id text, ordinal integer, chunk_text text,
                embed_text text, heading_path text[], page_numbers integer[],
                chunk_metadata jsonb, source text, created_at timestamptz, start_char integer,
                end_char integer, rank real)
            LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp AS $fn$
            #variable_conflict use_column
            DECLARE
                ns text := current_setting('{setting}', true);
                gen integer;
                terms text[];
                missing text[];
                rare text[] := '{{}}';
                rare_hits bigint[] := '{{}}';
                term text;
                hits bigint;
                fewest bigint := NULL;
                rarest text;
                candidates tsquery;
                ranking tsquery;{phrase_declared}
                limit_rows integer := NULL;
                total double precision;
                -- ts_rank's weights for labels D, C, B, A: headings (A) count
                -- as much as text (D); see migration 7.
                weights text := '{{0.1, 0.2, 0.4, 0.1}}';
                rank_sql text := 'ts_rank(''{{0.1, 0.2, 0.4, 0.1}}'', h.lexical, $3, 1)';
                scores text[] := '{{}}';
                fresh boolean;
                attempt integer;
            BEGIN
                IF ns IS NULL OR ns = '' THEN RETURN; END IF;
                IF target_generation IS NULL THEN
                    SELECT g.id INTO gen FROM ragsage_generations g
                        WHERE g.namespace = ns AND g.state = 'active';
                ELSE
                    SELECT g.id INTO gen FROM ragsage_generations g
                        WHERE g.namespace = ns AND g.id = target_generation
                        AND g.state IN ('active', 'building');
                END IF;
                IF gen IS NULL THEN RETURN; END IF;{phrase_made}
                IF with_syntax THEN
                    candidates := websearch_to_tsquery('{tsconfig}'::regconfig, query_text);
                    ranking := candidates;
                ELSE
                    IF query_text ~ '{_IDENTIFIER_HINT}' THEN
                        query_text := query_text || ' ' || ragsage_identifier_words(query_text);
                    END IF;
                    SELECT array_agg(DISTINCT t ORDER BY t) INTO terms FROM unnest(
                        tsvector_to_array(to_tsvector('{tsconfig}'::regconfig, query_text))) t;
                    IF terms IS NULL THEN RETURN; END IF;
                    terms := terms[1:32];
                    -- IDF against a fixed scale from the namespace's own capped
                    -- counts, never table-wide statistics (migration 7).
                    total := 10 * (common_rows + 1);
                    -- One read of the cached counts; only when some are missing
                    -- or stale are those counted, and the read made once more.
                    FOR attempt IN 1..2 LOOP
                        missing := NULL;
                        rare := '{{}}';
                        rare_hits := '{{}}';
                        scores := '{{}}';
                        fewest := NULL;
                        FOR term, hits, fresh IN
                            SELECT w.t, least(s.chunks, common_rows + 1),
                                s.term IS NOT NULL
                                AND (s.chunks < s.cap OR s.cap >= common_rows + 1)
                                AND s.counted_at > now() - make_interval(secs => {lifetime})
                            FROM unnest(terms) AS w(t) LEFT JOIN ragsage_term_stats s
                            ON s.namespace = ns AND s.generation = gen AND s.term = w.t
                            ORDER BY w.t
                        LOOP
                            IF attempt = 1 AND NOT fresh THEN
                                missing := missing || term;
                                CONTINUE;
                            END IF;
                            CONTINUE WHEN hits IS NULL;
                            IF hits <= common_rows THEN
                                rare := rare || term;
                                rare_hits := rare_hits || hits;
                            END IF;
                            IF fewest IS NULL OR hits < fewest THEN
                                fewest := hits;
                                rarest := term;
                            END IF;
                            IF hits > 0 THEN
                                scores := scores || format(
                                    '%s * ts_rank(%L, h.lexical, %L::tsquery, 1)',
                                    ln(1.0 + (total - hits + 0.5) / (hits + 0.5)), weights,
                                    quote_literal(term));
                            END IF;
                        END LOOP;
                        EXIT WHEN missing IS NULL;
                        PERFORM 1 FROM ragsage_term_counts(gen, missing, common_rows + 1);
                    END LOOP;
                    IF weighted AND cardinality(scores) > 0 THEN
                        rank_sql := array_to_string(scores, ' + ');
                    END IF;
                    ranking := array_to_string(
                        ARRAY(SELECT quote_literal(t) FROM unnest(terms) t), ' | ')::tsquery;
                    IF cardinality(rare) > 0 THEN
                        -- The rarest term always; then the next rarest while all
                        -- their chunks together stay within sample_rows.
                        candidates := array_to_string(ARRAY(
                            SELECT quote_literal(r.t) FROM (
                                SELECT u.t, u.n,
                                    sum(u.n) OVER (ORDER BY u.n, u.t) - u.n AS before
                                FROM unnest(rare, rare_hits) AS u(t, n)) r
                            WHERE r.before = 0 OR r.before + r.n <= sample_rows
                            ORDER BY r.n, r.t), ' | ')::tsquery;
                    ELSE
                        candidates := array_to_string(
                            ARRAY(SELECT quote_literal(t) FROM unnest(terms) t), ' & ')::tsquery;
                        EXECUTE 'SELECT count(*) FROM (SELECT 1 FROM ragsage_chunks c '
                            'WHERE c.namespace = $1 AND c.generation = $2 AND c.lexical @@ $3 '
                            'LIMIT $4) s'
                            INTO hits USING ns, gen, candidates, k;
                        IF hits < k THEN{keep_all_terms}
                            candidates := quote_literal(rarest)::tsquery;{keep_phrase}
                        END IF;
                        limit_rows := sample_rows;
                    END IF;
                END IF;
                IF numnode(candidates) = 0 THEN RETURN; END IF;
{final_query}
            END $fn$"""
    return (
        f"DROP FUNCTION IF EXISTS {signature}",
        search,
        f'ALTER FUNCTION {signature} OWNER TO "{system}"',
        f"REVOKE ALL ON FUNCTION {signature} FROM PUBLIC",
        f'GRANT EXECUTE ON FUNCTION {signature} TO "{role}"',
    )


# A chunk table under this many heap pages is left to autovacuum: its exact
# scans are cheap whatever the plan.
STATISTICS_MIN_PAGES = 64
_STATISTICS_LOCK_KEY = 0x7261_6773_7374  # "ragsst": one statistics refresh at a time


def _v15(config: PostgresConfig) -> tuple[str, ...]:
    """Planner statistics for the chunk table refreshed by the writers that grew it.

    A freshly loaded table has no statistics until autovacuum's next pass (up
    to a minute, and longer on a busy server).  Until then the planner takes a
    namespace's rows to be a handful, ranks dense search by a full sort
    instead of the HNSW walk and picks keyword candidates through the wrong
    index: on 242 real pages (7,946 chunks) a search took 20 ms instead of 3.
    So after each write, a writer calls this function; when the table has no
    statistics yet, or has at least doubled in heap pages since the last
    ones, it runs ``ANALYZE`` (which takes no lock a reader or writer waits
    on).  Doubling keeps the total cost of repeated runs within about twice
    the last one's; autovacuum still does the finer refreshes in between.
    The advisory lock and ``SKIP_LOCKED`` make concurrent writers skip rather
    than queue behind one another or behind autovacuum.

    It runs as the table's owner (only an owner may analyze a table) and
    does nothing else; it reads sizes, never rows, so it tells a caller nothing
    about any namespace.
    """
    role = safe_identifier(config.app_role)
    signature = "ragsage_refresh_chunk_statistics()"
    return (
        f"""CREATE OR REPLACE FUNCTION {signature} RETURNS boolean
            LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp AS $fn$
            DECLARE
                analyzed integer;
                pages bigint;
            BEGIN
                -- An index build sets the size figures but no column statistics.
                SELECT CASE WHEN c.reltuples < 0 OR NOT EXISTS (SELECT 1 FROM pg_stats s
                        WHERE s.schemaname = 'public' AND s.tablename = 'ragsage_chunks'
                        AND s.attname = 'generation') THEN 0 ELSE c.relpages END
                    INTO analyzed
                    FROM pg_class c WHERE c.oid = 'ragsage_chunks'::regclass;
                pages := pg_relation_size('ragsage_chunks'::regclass)
                    / current_setting('block_size')::integer;
                IF pages < {STATISTICS_MIN_PAGES} OR pages < 2 * analyzed THEN
                    RETURN false;
                END IF;
                IF NOT pg_try_advisory_xact_lock({_STATISTICS_LOCK_KEY}) THEN
                    RETURN false;
                END IF;
                ANALYZE (SKIP_LOCKED) ragsage_chunks;
                RETURN true;
            END $fn$""",
        f"REVOKE ALL ON FUNCTION {signature} FROM PUBLIC",
        f'GRANT EXECUTE ON FUNCTION {signature} TO "{role}"',
    )


# How much a chunk holding the query's words in order outranks one holding them apart.
PHRASE_BONUS = 2.0


def _v16(config: PostgresConfig) -> tuple[str, ...]:
    """Keyword search that rewards the query's words in the query's order.

    A sentence copied from a page, a quoted error message, a name of several
    words: the chunk holding them in that order is the one asked for, yet
    migration 14 ranked it like any chunk holding the same words scattered,
    and when all of them were common it could miss it altogether (its
    candidates were then a random sample of one common word's chunks).  On
    200 sentences sampled from 242 real pages, 5 were in none of the hybrid
    top 10; with the phrase, 1 (a sentence that four changelog tables repeat
    word for word).  Questions, whose words seldom stand in the answer's
    order, rank as before.  The phrase also counts under search syntax, where
    it adds no candidates of its own.
    """
    return _keyword_search_v14(config, phrase_bonus=PHRASE_BONUS)


# Kilobytes of not-yet-merged keyword index entries a search may have to read.
GIN_PENDING_KB = 256


def _v17(config: PostgresConfig) -> tuple[str, ...]:
    """A short pending list for the keyword index.

    GIN collects new entries in an unsorted pending list and merges them into
    the index when the list passes ``gin_pending_list_limit`` (4 MB by
    default) or when autovacuum comes by; a manual ``ANALYZE``, such as
    migration 15's, does not merge it.  Every keyword search reads the whole
    list.  So after a bulk load the list held anything from nothing to 4 MB,
    depending on where the last merge fell: on the 242 pages a search took
    7.0 ms with 506 pending pages and 3.9 ms once they were merged, which is
    why runs of the same benchmark read 3.7 or 7.0 ms.  A 256 kB list bounds
    that read; writers merge more often, in smaller batches.
    """
    return (f"ALTER INDEX ragsage_chunks_lexical SET (gin_pending_list_limit = {GIN_PENDING_KB})",)


def _v18(config: PostgresConfig) -> tuple[str, ...]:
    """A namespace's purge also forgets its keyword term counts.

    The app role could only read ``ragsage_term_stats`` (searches write it
    through migration 13's function), so purging a namespace left its counts
    behind; a namespace made again under the same name within ten minutes
    would have picked its keyword candidates and weights from the old text.
    It may now delete its own namespace's rows, and no other's.
    """
    role = safe_identifier(config.app_role)
    predicate = (
        f"namespace = current_setting('{safe_setting_name(config.isolation_variable)}', true)"
    )
    return (
        "DROP POLICY IF EXISTS ragsage_term_stats_forget ON ragsage_term_stats",
        "CREATE POLICY ragsage_term_stats_forget ON ragsage_term_stats FOR DELETE "
        f'TO "{role}" USING ({predicate})',
        f'GRANT DELETE ON ragsage_term_stats TO "{role}"',
    )


def _v19(config: PostgresConfig) -> tuple[str, ...]:
    """Keyword search whose statements are planned once per backend, not once per search.

    See :mod:`ragsage.adapters.postgres.keyword_function`.  The new function also takes
    how many of its first rows carry their chunk's columns, which the caller
    used to wrap around every call.  ``ragsage_lexical_search`` stays for one
    release, so a server of the previous version keeps searching while a
    rolling upgrade replaces it.
    """
    return keyword_search_statements(
        config,
        system_role=SYSTEM_ROLE,
        phrase_bonus=PHRASE_BONUS,
        identifier_hint=_IDENTIFIER_HINT,
        lifetime=int(TERM_COUNT_LIFETIME_SECONDS),
    )


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "generations, documents and chunks under Row-Level Security", _v1),
    Migration(2, "uploads: document status, blobs, jobs, resolved pages, system functions", _v2),
    Migration(3, "API keys, hashed, one namespace and role each", _v3),
    Migration(4, "keyword search through an index-using, namespace-scoped function", _v4),
    Migration(5, "embedding generations name their embedder, for re-indexing", _v5),
    Migration(6, "vectors and tsvectors kept in the row, not out of line", _v6),
    Migration(
        7,
        "identifier-aware keyword index; IDF-weighted keyword ranking of any live generation",
        _v7,
    ),
    Migration(8, "held generations: activation waits for an evaluation gate", _v8),
    Migration(9, "chunk spans: start_char and end_char in the page text", _v9),
    Migration(10, "jobs count the deliveries that died, for the poison limit", _v10),
    Migration(11, "document versions in upload order; superseded jobs", _v11),
    Migration(12, "generations keep the evaluation gate's verdict", _v12),
    Migration(13, "keyword term counts cached per namespace, not counted on every search", _v13),
    Migration(14, "keyword ranking in one call per band of term weights; chunks returned", _v14),
    Migration(15, "planner statistics refreshed by the writers that grow the chunk table", _v15),
    Migration(16, "keyword ranking rewards the query's words in the query's order", _v16),
    Migration(17, "a short pending list for the keyword index", _v17),
    Migration(18, "a namespace's purge also forgets its keyword term counts", _v18),
    Migration(19, "keyword search planned once per connection; first rows carry chunks", _v19),
)
LATEST_VERSION = MIGRATIONS[-1].version


def _bootstrap_statements(config: PostgresConfig) -> tuple[str, ...]:
    role = safe_identifier(config.app_role)
    return (
        "CREATE EXTENSION IF NOT EXISTS vector",
        f"""DO $$ BEGIN
            IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}') THEN
                CREATE ROLE "{role}" LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE
                    NOINHERIT;
            END IF;
        END $$""",
        f"""CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} (
            singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
            version integer NOT NULL,
            embedding_dim integer NOT NULL,
            text_search_config text NOT NULL,
            updated_at timestamptz NOT NULL DEFAULT now()
        )""",
        # Not tenant data, but every table gets RLS: the app role may read it, never write.
        f"ALTER TABLE {SCHEMA_TABLE} ENABLE ROW LEVEL SECURITY",
        f"ALTER TABLE {SCHEMA_TABLE} FORCE ROW LEVEL SECURITY",
        f"DROP POLICY IF EXISTS {SCHEMA_TABLE}_read ON {SCHEMA_TABLE}",
        f"CREATE POLICY {SCHEMA_TABLE}_read ON {SCHEMA_TABLE} FOR SELECT USING (true)",
        f'GRANT SELECT ON {SCHEMA_TABLE} TO "{role}"',
    )


def migration_statements(
    config: PostgresConfig, *, from_version: int = 0, to_version: int | None = None
) -> tuple[str, ...]:
    """Every statement :func:`migrate` runs between two versions, in order."""
    target = LATEST_VERSION if to_version is None else to_version
    statements = list(_bootstrap_statements(config)) if from_version == 0 else []
    for migration in MIGRATIONS:
        if from_version < migration.version <= target:
            statements.extend(migration.statements(config))
    return tuple(statements)


async def _schema_row(connection: AsyncConnection) -> tuple[int, int, str] | None:
    exists = await connection.scalar(
        text("SELECT to_regclass(:name) IS NOT NULL"), {"name": SCHEMA_TABLE}
    )
    if not exists:
        return None
    row = (
        await connection.execute(
            text(f"SELECT version, embedding_dim, text_search_config FROM {SCHEMA_TABLE}")
        )
    ).first()
    return (int(row[0]), int(row[1]), str(row[2])) if row else None


async def width_indexes(connection: AsyncConnection) -> dict[int, bool]:
    """The per-width HNSW indexes that exist: width → valid (False: a failed build)."""
    rows = await connection.execute(
        text(
            "SELECT c.relname, i.indisvalid FROM pg_index i "
            "JOIN pg_class c ON c.oid = i.indexrelid "
            "JOIN pg_class t ON t.oid = i.indrelid "
            "WHERE t.relname = 'ragsage_chunks' "
            "AND c.relname LIKE 'ragsage\\_chunks\\_embedding\\_%'"
        )
    )
    found: dict[int, bool] = {}
    for name, valid in rows:
        suffix = str(name).rsplit("_", 1)[1]
        if suffix.isdigit():
            found[int(suffix)] = bool(valid)
    return found


async def existing_embedding_dim(connection: AsyncConnection) -> int | None:
    """The default vector width the install was built for, or None if not installed."""
    row = await _schema_row(connection)
    return row[1] if row else None


async def schema_version(connection: AsyncConnection) -> int:
    """The migration version the database has reached (0 when nothing is installed)."""
    row = await _schema_row(connection)
    return row[0] if row else 0


async def check_pgvector(connection: AsyncConnection) -> str:
    """Raise ConfigurationError unless pgvector ≥ 0.8 is available; return its version."""
    version = await connection.scalar(
        text(
            "SELECT coalesce("
            "(SELECT extversion FROM pg_extension WHERE extname = 'vector'),"
            "(SELECT default_version FROM pg_available_extensions WHERE name = 'vector'))"
        )
    )
    if version is None:
        raise ConfigurationError(
            "the pgvector extension is not installed on this Postgres server; "
            "ragsage needs pgvector 0.8 or newer"
        )
    parts = tuple(int(p) for p in re.findall(r"\d+", str(version))[:3])
    if parts < MIN_PGVECTOR:
        raise ConfigurationError(
            f"pgvector {version} is installed; ragsage needs 0.8 or newer "
            "(filtered vector search relies on its iterative index scans)"
        )
    return str(version)


async def migrate(
    connection: AsyncConnection, config: PostgresConfig, *, to_version: int | None = None
) -> int:
    """Bring the schema up to ``to_version`` (default: latest). Idempotent.

    Raises :class:`SchemaMismatch` before any DDL when the install was built for
    another embedding width or text-search configuration.  Returns the version
    reached.
    """
    target = LATEST_VERSION if to_version is None else to_version
    await connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _LOCK_KEY})
    await check_pgvector(connection)
    row = await _schema_row(connection)
    if row is not None:
        version, dim, tsconfig = row
        if dim != config.embedding_dim:
            raise SchemaMismatch(
                f"the database was set up for {dim}-dimensional embeddings, but "
                f"embedding_dim is {config.embedding_dim}; use the same width, or re-index"
            )
        if tsconfig != config.text_search_config:
            raise SchemaMismatch(
                f"the lexical index was built with text search configuration {tsconfig!r}, "
                f"but text_search_config is {config.text_search_config!r}"
            )
    current = row[0] if row else 0
    if current >= target:
        return current
    for statement in migration_statements(config, from_version=current, to_version=target):
        await connection.execute(text(statement))
    await connection.execute(
        text(
            f"INSERT INTO {SCHEMA_TABLE} (version, embedding_dim, text_search_config) "
            "VALUES (:version, :dim, :tsconfig) ON CONFLICT (singleton) DO UPDATE "
            "SET version = excluded.version, updated_at = now()"
        ),
        {"version": target, "dim": config.embedding_dim, "tsconfig": config.text_search_config},
    )
    return target
