-- A dense search function per embedding width, so its plan is made once per connection.
--
-- The dense statement of `ragsage.adapters.postgres.dense_statements.dense_statement`
-- is sent as text, and Postgres parses and plans it on every search: on 242
-- real pages that was a third of the statement's server time.  A PL/pgSQL
-- function keeps the plans of its static statements for the life of the
-- connection, which a server-side prepared statement would too, but a
-- transaction-mode PgBouncer in front (which the read connections support)
-- would send a prepared statement's next use to another backend.  The cast to
-- the width's `vector(N)` (or `halfvec(N)`), which its HNSW index is built on, must be
-- written into the statement, hence one function per width.  It is made again
-- (`CREATE OR REPLACE`) by every `Database.migrate`, as the width's
-- index is built there; a width without its function is searched by the
-- statement.
--
-- It runs as its caller, under Row-Level Security, and does what the
-- statement's `walk` and `exact` paths do: walk the HNSW graph and rank
-- the generation's rows exactly when the walk came back short, or rank them
-- exactly from the start.  Without filters only: a filtered search still sends
-- the statement.
--
-- A namespace with a graph of its own (`ragsage.adapters.postgres.graphs`)
-- walks that graph instead of the shared one.  Its index is partial on the
-- namespace, which a generic plan cannot prove, so that walk is planned on
-- each call (EXECUTE, the namespace written as a literal); it orders by the
-- normalised `halfvec` the graph is built on, which no shared graph is, so the
-- planner cannot wander back to the shared graph.  The shared graph's walk
-- orders by its own key, `vector` or `halfvec` (the `hnsw_type` setting).  Both
-- keys are the ones `ragsage.adapters.postgres.graph_keys` writes; similarities
-- are computed in full precision either way.  A walk in half precision takes
-- more rows than asked for (twice as many, at most 40 more) and keeps the
-- nearest in full precision: rounding can swap neighbours at the edge of the
-- top k (the largest tenant of a million chunks found 0.95 of its exact ten
-- without this, the same at ef_search 250 and 400).
--
-- A generic plan does not know `k` and takes a tenth of the rows for it; at
-- 100,000 chunks that made sorting every row look cheaper than the walk, and a
-- search took 130 ms.  `enable_sort = off` leaves the walk as the one way to
-- order rows without a sort; the exact ranking, which must sort whichever way
-- it reads its rows, is planned as before.  For the same reason the carried
-- rows' chunks are read through `LATERAL ... LIMIT 1`: one key probe a row.
-- Joined plainly, a generic plan that takes k for 2,000 rows on a table of
-- 20,000 read the whole table into a hash instead (30 ms a search).

CREATE OR REPLACE FUNCTION ragsage_nearest_{{dim}}(
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
        ns text := current_setting('{{isolation_setting}}', true);
        gid integer;
        model text;
        width integer;
        walked bigint := 0;
    BEGIN
        SELECT g.id, g.embedding_model, g.embedding_dim INTO gid, model, width
            FROM ragsage_generations g
            WHERE g.namespace = ns AND CASE WHEN target_generation IS NULL THEN g.state = 'active'
                ELSE g.id = target_generation AND g.state IN ('active', 'building') END;
        IF gid IS NULL THEN RETURN; END IF;
        IF NOT exact AND ragsage_graph_ready(ns, {{dim}}) THEN
            RETURN QUERY EXECUTE format($own$SELECT $1, $2, $3, false, r.document_id, r.ordinal,
                r.similarity, c.document_id, c.ordinal, c.text, c.embed_text, c.heading_path,
                c.page_numbers, c.metadata, c.source, c.created_at, c.start_char, c.end_char
            FROM (SELECT n.document_id, n.ordinal, n.similarity, row_number() OVER (
                    ORDER BY n.similarity DESC, n.document_id, n.ordinal) AS place
                FROM (SELECT c.document_id, c.ordinal,
                        1 - (c.embedding::vector({{dim}}) <=> $4) AS similarity
                    FROM ragsage_chunks c
                    WHERE c.namespace = %1$L AND c.generation = $1 AND c.embedding_dim = {{dim}}
                    ORDER BY l2_normalize(c.embedding::halfvec({{dim}}))::halfvec({{dim}})
                        <=> $4::halfvec({{dim}})
                    LIMIT least($5 * 2, $5 + 40)) n) r
            LEFT JOIN LATERAL (SELECT c.document_id, c.ordinal, c.text, c.embed_text,
                    c.heading_path, c.page_numbers, c.metadata, c.source, c.created_at,
                    c.start_char, c.end_char FROM ragsage_chunks c
                WHERE r.place <= $6 AND c.namespace = %1$L AND c.generation = $1
                AND c.document_id = r.document_id AND c.ordinal = r.ordinal LIMIT 1) c
                ON true
            WHERE r.place <= $5
            ORDER BY r.place$own$, ns) USING gid, model, width, query, k, carried;
            GET DIAGNOSTICS walked = ROW_COUNT;
            IF walked >= k THEN RETURN; END IF;
        ELSIF NOT exact THEN
            RETURN QUERY SELECT gid, model, width, false, r.document_id, r.ordinal, r.similarity,
                c.document_id, c.ordinal, c.text, c.embed_text, c.heading_path, c.page_numbers, c.metadata, c.source, c.created_at, c.start_char, c.end_char
            FROM (SELECT n.document_id, n.ordinal, n.similarity, row_number() OVER (
                    ORDER BY n.similarity DESC, n.document_id, n.ordinal) AS place
                FROM (SELECT c.document_id, c.ordinal, 1 - (c.embedding::vector({{dim}}) <=> query) AS similarity
                    FROM ragsage_chunks c
                    WHERE c.namespace = ns AND c.generation = gid AND c.embedding_dim = {{dim}}
                    ORDER BY c.embedding::{{hnsw_type}}({{dim}}) <=> query::{{hnsw_type}}({{dim}})
                    LIMIT {{walk_limit}}) n) r
            LEFT JOIN LATERAL (SELECT c.document_id, c.ordinal, c.text, c.embed_text, c.heading_path, c.page_numbers, c.metadata, c.source, c.created_at, c.start_char, c.end_char FROM ragsage_chunks c
                WHERE r.place <= carried AND c.namespace = ns AND c.generation = gid
                AND c.document_id = r.document_id AND c.ordinal = r.ordinal LIMIT 1) c
                ON true
            WHERE r.place <= k
            ORDER BY r.place;
            GET DIAGNOSTICS walked = ROW_COUNT;
            IF walked >= k THEN RETURN; END IF;
        END IF;
        RETURN QUERY SELECT gid, model, width, true, r.document_id, r.ordinal, r.similarity,
                c.document_id, c.ordinal, c.text, c.embed_text, c.heading_path, c.page_numbers, c.metadata, c.source, c.created_at, c.start_char, c.end_char
            FROM (SELECT n.document_id, n.ordinal, n.similarity, row_number() OVER (
                    ORDER BY n.similarity DESC, n.document_id, n.ordinal) AS place
                FROM (SELECT c.document_id, c.ordinal, 1 - (c.embedding <=> query) AS similarity
                    FROM ragsage_chunks c
                    WHERE c.namespace = ns AND c.generation = gid AND c.embedding_dim = {{dim}}
                    ORDER BY c.embedding <=> query LIMIT k) n) r
            LEFT JOIN LATERAL (SELECT c.document_id, c.ordinal, c.text, c.embed_text, c.heading_path, c.page_numbers, c.metadata, c.source, c.created_at, c.start_char, c.end_char FROM ragsage_chunks c
                WHERE r.place <= carried AND c.namespace = ns AND c.generation = gid
                AND c.document_id = r.document_id AND c.ordinal = r.ordinal LIMIT 1) c
                ON true
            ORDER BY r.place;
        GET DIAGNOSTICS walked = ROW_COUNT;
        IF walked = 0 THEN
            -- The generation holds no row of this width: say which it is.
            RETURN QUERY SELECT gid, model, width, NULL::boolean, NULL::text,
                NULL::integer, NULL::double precision, NULL::text, NULL::integer,
                NULL::text, NULL::text, NULL::text[], NULL::integer[], NULL::jsonb,
                NULL::text, NULL::timestamptz, NULL::integer, NULL::integer;
        END IF;
    END $fn$;

REVOKE ALL ON FUNCTION ragsage_nearest_{{dim}}(vector, integer, integer, boolean, integer) FROM PUBLIC;

GRANT EXECUTE ON FUNCTION ragsage_nearest_{{dim}}(vector, integer, integer, boolean, integer) TO "{{app_role}}";
