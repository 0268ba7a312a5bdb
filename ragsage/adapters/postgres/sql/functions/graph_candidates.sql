-- requires: 32

-- The namespaces and widths holding at least `min_rows` chunks in one live
-- generation, as the writers counted them (migration 29): the ones that are
-- given, or keep, a graph of their own.  It crosses namespaces, so it runs as
-- `ragsage_system` and returns counts alone, never a row's content.
CREATE OR REPLACE FUNCTION ragsage_graph_candidates(min_rows bigint)
    RETURNS TABLE (namespace text, embedding_dim integer, chunks bigint)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $fn$
        SELECT g.namespace, g.embedding_dim, max(n.chunks)::bigint
        FROM ragsage_generations g
        CROSS JOIN LATERAL (SELECT coalesce(sum(x.chunks), 0) AS chunks FROM (
            SELECT s.chunks FROM ragsage_term_stats s
            WHERE s.namespace = g.namespace AND s.generation = g.id AND s.term = ''
            UNION ALL
            SELECT p.chunks FROM ragsage_term_changes p
            WHERE p.namespace = g.namespace AND p.generation = g.id AND p.term = '') x) n
        WHERE g.state IN ('active', 'building')
        GROUP BY g.namespace, g.embedding_dim
        HAVING max(n.chunks) >= min_rows
        ORDER BY max(n.chunks) DESC, g.namespace
    $fn$;

ALTER FUNCTION ragsage_graph_candidates(bigint) OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_graph_candidates(bigint) FROM PUBLIC;
