"""A dense search function per embedding width, so its plan is made once per connection.

The dense statement of :func:`ragsage.adapters.postgres.vector_store.dense_statement`
is sent as text, and Postgres parses and plans it on every search: on 242
real pages that was a third of the statement's server time.  A PL/pgSQL
function keeps the plans of its static statements for the life of the
connection, which a server-side prepared statement would too, but a
transaction-mode PgBouncer in front (which the read connections support)
would send a prepared statement's next use to another backend.  The cast to
the width's ``vector(N)``, which the width's HNSW index is built on, must be
written into the statement, hence one function per width.  It is made again
(``CREATE OR REPLACE``) by every :meth:`Database.migrate`, as the width's
index is built there; a width without its function is searched by the
statement.

It runs as its caller, under Row-Level Security, and does what the
statement's ``walk`` and ``exact`` paths do: walk the HNSW graph and rank
the generation's rows exactly when the walk came back short, or rank them
exactly from the start.  Without filters only: a filtered search still sends
the statement.

A generic plan does not know ``k`` and takes a tenth of the rows for it; at
100,000 chunks that made sorting every row look cheaper than the walk, and a
search took 130 ms.  ``enable_sort = off`` leaves the walk as the one way to
order rows without a sort; the exact ranking, which must sort whichever way
it reads its rows, is planned as before.  For the same reason the carried
rows' chunks are read through ``LATERAL ... LIMIT 1``: one key probe a row.
Joined plainly, a generic plan that takes k for 2,000 rows on a table of
20,000 read the whole table into a hash instead (30 ms a search).
"""

from __future__ import annotations

from ragsage.adapters.postgres.config import PostgresConfig, safe_identifier
from ragsage.adapters.postgres.rows import CHUNK_COLUMNS


def dense_function_name(dim: int) -> str:
    if not 1 <= dim <= 2000:
        raise ValueError(f"vector width out of range: {dim}")
    return f"ragsage_nearest_{int(dim)}"


def dense_function_signature(dim: int) -> str:
    return f"{dense_function_name(dim)}(vector, integer, integer, boolean, integer)"


def _ranked(dim: int, *, exact: bool) -> str:
    """Rows of one of the two rankings, the first ``carried`` with their chunk."""
    if exact:
        # The uncast column: no HNSW index matches it, so every row is ranked.
        distance, label = "c.embedding <=> query", "true"
    else:
        distance, label = f"c.embedding::vector({dim}) <=> query", "false"
    return f"""SELECT gid, model, width, {label}, r.document_id, r.ordinal, r.similarity,
                        {CHUNK_COLUMNS}
                    FROM (SELECT n.document_id, n.ordinal, n.similarity, row_number() OVER (
                            ORDER BY n.similarity DESC, n.document_id, n.ordinal) AS place
                        FROM (SELECT c.document_id, c.ordinal, 1 - ({distance}) AS similarity
                            FROM ragsage_chunks c
                            WHERE c.generation = gid AND c.embedding_dim = {dim}
                            ORDER BY {distance} LIMIT k) n) r
                    LEFT JOIN LATERAL (SELECT {CHUNK_COLUMNS} FROM ragsage_chunks c
                        WHERE r.place <= carried AND c.generation = gid
                        AND c.document_id = r.document_id AND c.ordinal = r.ordinal LIMIT 1) c
                        ON true
                    ORDER BY r.place"""


def dense_function_statements(config: PostgresConfig, dim: int) -> tuple[str, ...]:
    """The width's function and its grant to the app role, safe to run again."""
    role = safe_identifier(config.app_role)
    name = dense_function_name(dim)
    body = f"""CREATE OR REPLACE FUNCTION {name}(
                query vector, k integer, carried integer, exact boolean,
                target_generation integer)
            RETURNS TABLE (generation integer, embedding_model text, embedding_dim integer,
                exact_rank boolean, ranked_document text, ranked_ordinal integer,
                similarity double precision, document_id text, ordinal integer, text text,
                embed_text text, heading_path text[], page_numbers integer[], metadata jsonb,
                source text, created_at timestamptz, start_char integer, end_char integer)
            LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan
            SET enable_sort = off AS $fn$
            #variable_conflict use_column
            DECLARE
                gid integer;
                model text;
                width integer;
                walked bigint := 0;
            BEGIN
                SELECT g.id, g.embedding_model, g.embedding_dim INTO gid, model, width
                    FROM ragsage_generations g
                    WHERE CASE WHEN target_generation IS NULL THEN g.state = 'active'
                        ELSE g.id = target_generation AND g.state IN ('active', 'building') END;
                IF gid IS NULL THEN RETURN; END IF;
                IF NOT exact THEN
                    RETURN QUERY {_ranked(dim, exact=False)};
                    GET DIAGNOSTICS walked = ROW_COUNT;
                    IF walked >= k THEN RETURN; END IF;
                END IF;
                RETURN QUERY {_ranked(dim, exact=True)};
                GET DIAGNOSTICS walked = ROW_COUNT;
                IF walked = 0 THEN
                    -- The generation holds no row of this width: say which it is.
                    RETURN QUERY SELECT gid, model, width, NULL::boolean, NULL::text,
                        NULL::integer, NULL::double precision, NULL::text, NULL::integer,
                        NULL::text, NULL::text, NULL::text[], NULL::integer[], NULL::jsonb,
                        NULL::text, NULL::timestamptz, NULL::integer, NULL::integer;
                END IF;
            END $fn$"""
    signature = dense_function_signature(dim)
    return (
        body,
        f"REVOKE ALL ON FUNCTION {signature} FROM PUBLIC",
        f'GRANT EXECUTE ON FUNCTION {signature} TO "{role}"',
    )
