-- Migration 17: a short pending list for the keyword index.
--
-- A short pending list for the keyword index.
--
-- GIN collects new entries in an unsorted pending list and merges them into
-- the index when the list passes `gin_pending_list_limit` (4 MB by
-- default) or when autovacuum comes by; a manual `ANALYZE`, such as
-- migration 15's, does not merge it.  Every keyword search reads the whole
-- list.  So after a bulk load the list held anything from nothing to 4 MB,
-- depending on where the last merge fell: on the 242 pages a search took
-- 7.0 ms with 506 pending pages and 3.9 ms once they were merged, which is
-- why runs of the same benchmark read 3.7 or 7.0 ms.  A 256 kB list bounds
-- that read; writers merge more often, in smaller batches.

ALTER INDEX ragsage_chunks_lexical SET (gin_pending_list_limit = 256);
