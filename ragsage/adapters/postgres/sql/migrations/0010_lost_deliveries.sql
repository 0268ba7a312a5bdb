-- Migration 10: jobs count the deliveries that died, for the poison limit.
--
-- Deliveries that died: the count the poison limit reads.
--
-- `deliveries` counts every delivery that started a job, retries included;
-- a job is poison only when deliveries keep ending without an outcome.

ALTER TABLE ragsage_jobs ADD COLUMN IF NOT EXISTS lost_deliveries integer NOT NULL DEFAULT 0;

COMMENT ON COLUMN ragsage_jobs.lost_deliveries IS 'deliveries whose worker stopped before recording an outcome';
