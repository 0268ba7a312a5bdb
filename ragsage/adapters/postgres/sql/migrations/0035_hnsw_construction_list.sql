-- Migration 35: the shared graphs link each new row through a longer candidate list.
--
-- Migration 27 set every width's graph to ef_construction 40.  On source code
-- that graph is poorly linked: on the code set's 8,560 chunks a walk with
-- ef_search 160 found 0.84-0.85 of the exact top ten, and some definitions
-- were out of its reach at any ef_search (0.94-0.96 at 400, with the same
-- answers missed).  Built with a list of 64 (pgvector's own default), the walk
-- found 0.90-0.91 at 160, and behaviour questions' answers reached the first 660 tokens
-- of results as often as with exact ranking (docs/retrieval.md, "Dense
-- recall").  m stays 12, so a graph takes no more memory.  pgvector reads
-- ef_construction from the index's options on every insert: rows written from
-- now on are linked with the longer list, and `REINDEX INDEX CONCURRENTLY`
-- relinks the rows already there (deploy/OPERATIONS.md).  Only the shared
-- width graphs change; a namespace's own graph keeps its parameters.

DO $step$
DECLARE
    found record;
BEGIN
    FOR found IN
        SELECT c.relname FROM pg_index i
            JOIN pg_class c ON c.oid = i.indexrelid
            JOIN pg_am a ON a.oid = c.relam
        WHERE i.indrelid = 'ragsage_chunks'::regclass AND a.amname = 'hnsw'
            AND c.relname LIKE 'ragsage\_chunks\_embedding\_%'
    LOOP
        EXECUTE format('ALTER INDEX %I SET (ef_construction = {{hnsw_ef_construction}})', found.relname);
    END LOOP;
END
$step$;
