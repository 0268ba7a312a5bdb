-- Migration 5: embedding generations name their embedder, for re-indexing.

ALTER TABLE ragsage_generations ADD COLUMN IF NOT EXISTS embedder text NOT NULL DEFAULT 'hashing';

ALTER TABLE ragsage_generations ADD COLUMN IF NOT EXISTS retired_at timestamptz;

CREATE INDEX IF NOT EXISTS ragsage_jobs_generation
    ON ragsage_jobs (namespace, generation, state) WHERE kind = 'reindex';
