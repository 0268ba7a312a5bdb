-- requires: 22
-- Dense search for a session bound to principals that may read few of its
-- namespace's chunks.
--
-- Under the policies, the HNSW walk meets every chunk it may not read and steps
-- over it: for a key that reads 1% of 21,000 chunks the walk ran out of its
-- scan budget on a quarter of the searches (fewer than k results) and took 36 ms
-- at the median, twelve times an unbound key's (bench/access_lists.py).  When
-- the readable chunks are few, ranking every one of them exactly is cheaper,
-- and finding them needs an index on their readers (migration 22), which the
-- planner may use only outside the policies.  So this function runs as
-- `ragsage_system` and applies the policies' rule itself: the caller's
-- namespace, and a chunk whose list is empty or names one of the caller's
-- principals.  A caller bound to no principal gets nothing from it.
--
-- It counts the readable chunks (up to `exact_cap`) and ranks them when they
-- are small by the rule the dense statement applies to a namespace (fewer than
-- `exact_below`, or a small share of the table: rows * rows < share_factor *
-- table rows).  Otherwise it answers one row with `exact_rank` false and no
-- chunk: the caller walks the graph under the policies instead.  Rows are the
-- width search functions' (nearest.sql), so one reader serves both.

CREATE OR REPLACE FUNCTION ragsage_readable_nearest(
        query vector, k integer, carried integer, target_generation integer,
        exact_below integer, exact_cap integer, share_factor integer,
        document_ids text[], sources text[], wanted_metadata jsonb,
        created_after timestamptz, created_before timestamptz)
    RETURNS TABLE (generation integer, embedding_model text, embedding_dim integer,
        exact_rank boolean, ranked_document text, ranked_ordinal integer,
        similarity double precision, document_id text, ordinal integer, text text,
        embed_text text, heading_path text[], page_numbers integer[], metadata jsonb,
        source text, created_at timestamptz, start_char integer, end_char integer)
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $fn$
    #variable_conflict use_column
    DECLARE
        ns text := current_setting('{{isolation_setting}}', true);
        mine text := current_setting('{{principals_setting}}', true);
        wanted text[];
        gid integer;
        model text;
        width integer;
        readable bigint;
        table_rows double precision;
        ranked bigint := 0;
    BEGIN
        IF ns IS NULL OR ns = '' OR mine IS NULL OR mine = '*' THEN RETURN; END IF;
        wanted := ragsage_readers(ns, '{}') || CASE WHEN mine = '' THEN '{}'::text[]
            ELSE ragsage_readers(ns, string_to_array(mine, ',')) END;
        SELECT g.id, g.embedding_model, g.embedding_dim INTO gid, model, width
            FROM ragsage_generations g
            WHERE g.namespace = ns AND CASE WHEN target_generation IS NULL
                THEN g.state = 'active'
                ELSE g.id = target_generation AND g.state IN ('active', 'building') END;
        IF gid IS NULL THEN RETURN; END IF;
        SELECT count(*) INTO readable FROM (SELECT 1 FROM ragsage_chunks c
            WHERE ragsage_readers(c.namespace, c.access) && wanted AND c.namespace = ns
            AND c.generation = gid LIMIT exact_cap) r;
        SELECT t.reltuples INTO table_rows FROM pg_class t
            WHERE t.oid = 'ragsage_chunks'::regclass;
        IF NOT (readable < exact_below OR (readable < exact_cap
                AND readable::float8 * readable < share_factor * greatest(table_rows, 0))) THEN
            RETURN QUERY SELECT gid, model, width, false, NULL::text, NULL::integer,
                NULL::double precision, NULL::text, NULL::integer, NULL::text, NULL::text,
                NULL::text[], NULL::integer[], NULL::jsonb, NULL::text, NULL::timestamptz,
                NULL::integer, NULL::integer;
            RETURN;
        END IF;
        RETURN QUERY SELECT gid, model, width, true, r.document_id, r.ordinal, r.similarity,
                CASE WHEN r.place <= carried THEN r.document_id END,
                CASE WHEN r.place <= carried THEN r.ordinal END,
                CASE WHEN r.place <= carried THEN r.text END,
                CASE WHEN r.place <= carried THEN r.embed_text END,
                CASE WHEN r.place <= carried THEN r.heading_path END,
                CASE WHEN r.place <= carried THEN r.page_numbers END,
                CASE WHEN r.place <= carried THEN r.metadata END,
                CASE WHEN r.place <= carried THEN r.source END,
                CASE WHEN r.place <= carried THEN r.created_at END,
                CASE WHEN r.place <= carried THEN r.start_char END,
                CASE WHEN r.place <= carried THEN r.end_char END
            FROM (SELECT n.*, row_number() OVER (
                    ORDER BY n.similarity DESC, n.document_id, n.ordinal) AS place
                FROM (SELECT c.document_id, c.ordinal, c.text, c.embed_text, c.heading_path,
                        c.page_numbers, c.metadata, c.source, c.created_at, c.start_char,
                        c.end_char, 1 - (c.embedding <=> query) AS similarity
                    FROM ragsage_chunks c
                    WHERE ragsage_readers(c.namespace, c.access) && wanted
                    AND c.namespace = ns AND c.generation = gid AND c.embedding_dim = width
                    AND (document_ids IS NULL OR c.document_id = ANY(document_ids))
                    AND (sources IS NULL OR c.source = ANY(sources))
                    AND (wanted_metadata IS NULL OR c.metadata @> wanted_metadata)
                    AND (created_after IS NULL OR c.created_at >= created_after)
                    AND (created_before IS NULL OR c.created_at <= created_before)
                    ORDER BY c.embedding <=> query LIMIT k) n) r
            ORDER BY r.place;
        GET DIAGNOSTICS ranked = ROW_COUNT;
        IF ranked = 0 THEN
            -- Nothing readable matches: say which generation was searched.
            RETURN QUERY SELECT gid, model, width, NULL::boolean, NULL::text,
                NULL::integer, NULL::double precision, NULL::text, NULL::integer,
                NULL::text, NULL::text, NULL::text[], NULL::integer[], NULL::jsonb,
                NULL::text, NULL::timestamptz, NULL::integer, NULL::integer;
        END IF;
    END $fn$;

ALTER FUNCTION ragsage_readable_nearest(vector, integer, integer, integer, integer, integer, integer, text[], text[], jsonb, timestamptz, timestamptz) OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_readable_nearest(vector, integer, integer, integer, integer, integer, integer, text[], text[], jsonb, timestamptz, timestamptz) FROM PUBLIC;

GRANT EXECUTE ON FUNCTION ragsage_readable_nearest(vector, integer, integer, integer, integer, integer, integer, text[], text[], jsonb, timestamptz, timestamptz) TO "{{app_role}}";
