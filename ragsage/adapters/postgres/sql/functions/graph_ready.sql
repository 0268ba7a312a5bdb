-- requires: 32

-- Whether a namespace's own graph of a width is built and usable.  A graph
-- being built concurrently, or whose build failed, is not: the search walks the
-- shared graph meanwhile.  The catalog, not a table, is the record, so a graph
-- dropped by hand is never searched for.
CREATE OR REPLACE FUNCTION ragsage_graph_ready(ns text, dim integer)
    RETURNS boolean
    LANGUAGE sql STABLE STRICT AS $fn$
        SELECT coalesce((SELECT i.indisvalid AND i.indisready FROM pg_index i
            WHERE i.indexrelid = to_regclass(ragsage_graph_name(ns, dim))), false)
    $fn$;
