-- requires: 32

-- The name of the HNSW graph a large namespace gets of its own for one vector
-- width (`ragsage.adapters.postgres.graphs` builds and drops them).  A digest,
-- not the namespace itself: a namespace may hold characters an index name
-- cannot, and names are cut at 63 bytes.  Both the builder and the searches ask
-- this function, so the two can never disagree on a name.
CREATE OR REPLACE FUNCTION ragsage_graph_name(ns text, dim integer)
    RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
        SELECT 'ragsage_graph_' || dim || '_' || left(md5(ns), 20)
    $fn$;
