-- Migration 11: document versions in upload order; superseded jobs.
--
-- Versions in upload order: the last upload of a document wins.
--
-- Each upload of a document takes the next number from the document row (its
-- row lock orders concurrent uploads); the row also records which number its
-- stored chunks came from, so an older version finishing later is marked
-- `superseded` instead of overwriting a newer one.

ALTER TABLE ragsage_documents ADD COLUMN IF NOT EXISTS upload_version bigint NOT NULL DEFAULT 0;

ALTER TABLE ragsage_documents ADD COLUMN IF NOT EXISTS stored_version bigint NOT NULL DEFAULT 0;

ALTER TABLE ragsage_jobs ADD COLUMN IF NOT EXISTS version bigint;

COMMENT ON COLUMN ragsage_jobs.version IS 'the upload''s place in its document''s order (ingest jobs since migration 11)';

ALTER TABLE ragsage_jobs DROP CONSTRAINT IF EXISTS ragsage_jobs_state_check;

ALTER TABLE ragsage_jobs ADD CONSTRAINT ragsage_jobs_state_check CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled', 'superseded'));
