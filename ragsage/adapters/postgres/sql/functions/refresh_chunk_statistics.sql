-- requires: 15

CREATE OR REPLACE FUNCTION ragsage_refresh_chunk_statistics() RETURNS boolean
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
        IF pages < 64 OR pages < 2 * analyzed THEN
            RETURN false;
        END IF;
        IF NOT pg_try_advisory_xact_lock(125762673013620) THEN
            RETURN false;
        END IF;
        ANALYZE (SKIP_LOCKED) ragsage_chunks;
        RETURN true;
    END $fn$;

REVOKE ALL ON FUNCTION ragsage_refresh_chunk_statistics() FROM PUBLIC;

GRANT EXECUTE ON FUNCTION ragsage_refresh_chunk_statistics() TO "{{app_role}}";
