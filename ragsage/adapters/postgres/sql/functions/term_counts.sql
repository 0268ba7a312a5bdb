-- requires: 29

-- The term counts as servers from before migration 29 ask for them: their
-- keyword and dense searches call this for a term whose row they miss.  Since
-- 29 the counts are kept by a trigger as chunks are written, so it only reads
-- them (capped at `cap`, as those servers expect) and counts nothing.
CREATE OR REPLACE FUNCTION ragsage_term_counts(
        gen integer, wanted text[], cap integer)
    RETURNS TABLE (term text, chunks bigint)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $fn$
    SELECT w.t, least(coalesce(sum(x.chunks), 0), cap::bigint)::bigint
    FROM unnest(wanted) AS w(t) LEFT JOIN LATERAL (
        SELECT s.chunks FROM ragsage_term_stats s
        WHERE s.namespace = current_setting('{{isolation_setting}}', true)
            AND s.generation = gen AND s.term = w.t
        UNION ALL
        SELECT p.chunks FROM ragsage_term_changes p
        WHERE p.namespace = current_setting('{{isolation_setting}}', true)
            AND p.generation = gen AND p.term = w.t) x ON true
    GROUP BY w.t
    $fn$;

ALTER FUNCTION ragsage_term_counts(integer, text[], integer) OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_term_counts(integer, text[], integer) FROM PUBLIC;

GRANT EXECUTE ON FUNCTION ragsage_term_counts(integer, text[], integer) TO "{{app_role}}";
