-- Migration 28: how far a running job's stage has got.
--
-- A long job (a manual embedded by the local model takes minutes) showed only
-- its stage.  The worker's heartbeat now also writes the items its stage has
-- done of its total (chunks embedded, for the embed stage), so the API and the
-- web page can say "embed 320 of 1,200".  Two nullable columns without
-- defaults: adding them rewrites no rows and holds the table's lock only for
-- the catalog change.

ALTER TABLE ragsage_jobs
    ADD COLUMN IF NOT EXISTS progress_done integer,
    ADD COLUMN IF NOT EXISTS progress_total integer;
