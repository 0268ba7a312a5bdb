-- requires: 29

-- How many chunks a generation of the session's namespace holds, as the trigger
-- counted them; dense search asks it to tell a small namespace from a big one.
CREATE OR REPLACE FUNCTION ragsage_generation_chunks(gen integer)
    RETURNS bigint
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $fn$
        SELECT coalesce(sum(x.chunks), 0)::bigint FROM (
            SELECT s.chunks FROM ragsage_term_stats s
            WHERE s.namespace = current_setting('{{isolation_setting}}', true)
                AND s.generation = gen AND s.term = ''
            UNION ALL
            SELECT p.chunks FROM ragsage_term_changes p
            WHERE p.namespace = current_setting('{{isolation_setting}}', true)
                AND p.generation = gen AND p.term = '') x
    $fn$;

ALTER FUNCTION ragsage_generation_chunks(integer) OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_generation_chunks(integer) FROM PUBLIC;

GRANT EXECUTE ON FUNCTION ragsage_generation_chunks(integer) TO "{{app_role}}";
