-- requires: 15

-- Analyze a ragsage table when it has no planner statistics or has doubled
-- since its last ANALYZE, and is at least `min_pages` pages.  Shared by the
-- refresh functions the app role may call; not callable by it itself.
-- `witness` is a column that has statistics once the table was analyzed (an
-- index build sets the size figures but no column statistics).
CREATE OR REPLACE FUNCTION ragsage_analyze_if_grown(
        target regclass, witness text, min_pages integer, lock_key bigint)
    RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp AS $fn$
    DECLARE
        analyzed bigint;
        pages bigint;
    BEGIN
        SELECT CASE WHEN c.reltuples < 0 OR NOT EXISTS (SELECT 1 FROM pg_stats s
                WHERE s.schemaname = 'public' AND s.tablename = c.relname
                AND s.attname = witness) THEN 0 ELSE c.relpages END
            INTO analyzed
            FROM pg_class c WHERE c.oid = target;
        pages := pg_relation_size(target) / current_setting('block_size')::integer;
        IF pages < min_pages OR pages < 2 * analyzed THEN
            RETURN false;
        END IF;
        IF NOT pg_try_advisory_xact_lock(lock_key) THEN
            RETURN false;
        END IF;
        EXECUTE format('ANALYZE (SKIP_LOCKED) %s', target);
        RETURN true;
    END $fn$;

REVOKE ALL ON FUNCTION ragsage_analyze_if_grown(regclass, text, integer, bigint) FROM PUBLIC;
