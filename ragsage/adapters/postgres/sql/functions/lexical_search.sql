-- requires: 31
-- ragsage_lexical_search, as servers from before migration 19 call it.
--
-- Those servers send the twelve arguments of migration 14 (the last two have
-- defaults) and read every returned row's chunk.  The call goes to
-- ragsage_keyword_search with `carried` = k, so every row carries its chunk;
-- the rows and ranks are that function's.  It runs as its caller: the
-- function it calls is the one that crosses the row-level security.

CREATE OR REPLACE FUNCTION ragsage_lexical_search(
        query_text text, with_syntax boolean, k integer, common_rows integer,
        sample_rows integer, document_ids text[], sources text[], metadata jsonb,
        created_after timestamptz, created_before timestamptz,
        weighted boolean DEFAULT true, target_generation integer DEFAULT NULL)
    RETURNS TABLE (document_id text, ordinal integer, chunk_text text,
        embed_text text, heading_path text[], page_numbers integer[],
        chunk_metadata jsonb, source text, created_at timestamptz, start_char integer,
        end_char integer, rank real)
    LANGUAGE sql VOLATILE SET search_path = public, pg_temp AS $fn$
    SELECT * FROM ragsage_keyword_search(query_text, with_syntax, k, common_rows, sample_rows,
        document_ids, sources, metadata, created_after, created_before, weighted,
        target_generation, k)
    $fn$;

ALTER FUNCTION ragsage_lexical_search(text, boolean, integer, integer, integer, text[], text[], jsonb, timestamptz, timestamptz, boolean, integer) OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_lexical_search(text, boolean, integer, integer, integer, text[], text[], jsonb, timestamptz, timestamptz, boolean, integer) FROM PUBLIC;

GRANT EXECUTE ON FUNCTION ragsage_lexical_search(text, boolean, integer, integer, integer, text[], text[], jsonb, timestamptz, timestamptz, boolean, integer) TO "{{app_role}}";
