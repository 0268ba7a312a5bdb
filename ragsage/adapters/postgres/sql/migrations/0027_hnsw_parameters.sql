-- Migration 27: every width's HNSW index takes the configured build parameters.
--
-- The defaults went from m 16 / ef_construction 64 to m 12 / 40 (walked with
-- ef_search 160 instead of 40): the same retrieval on the dev set for 60% of
-- the insert CPU (docs/ingestion.md).  Indexes built before keep
-- the graph they have; this step records the parameters on them, so a fresh
-- install and an upgraded one describe their indexes alike.  pgvector reads
-- ef_construction from these options on every insert, so new rows cost less
-- at once; m is fixed in a built graph and changes when the index is rebuilt
-- (`REINDEX INDEX CONCURRENTLY`, deploy/OPERATIONS.md).  Changing an index's
-- options rewrites no data; it waits for the table's running statements.

DO $step$
DECLARE
    found record;
BEGIN
    FOR found IN
        SELECT c.relname FROM pg_index i
            JOIN pg_class c ON c.oid = i.indexrelid
            JOIN pg_am a ON a.oid = c.relam
        WHERE i.indrelid = 'ragsage_chunks'::regclass AND a.amname = 'hnsw'
    LOOP
        EXECUTE format('ALTER INDEX %I SET (m = {{hnsw_m}}, ef_construction = {{hnsw_ef_construction}})', found.relname);
    END LOOP;
END
$step$;
