-- requires: 15

CREATE OR REPLACE FUNCTION ragsage_refresh_chunk_statistics() RETURNS boolean
    LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp AS $fn$
        SELECT ragsage_analyze_if_grown('ragsage_chunks'::regclass, 'generation', 64,
                                        125762673013620)
    $fn$;

REVOKE ALL ON FUNCTION ragsage_refresh_chunk_statistics() FROM PUBLIC;

GRANT EXECUTE ON FUNCTION ragsage_refresh_chunk_statistics() TO "{{app_role}}";
