-- Migration 12: generations keep the evaluation gate's verdict.
--
-- The gate's verdict on a generation, readable over HTTP as well as printed.

ALTER TABLE ragsage_generations ADD COLUMN IF NOT EXISTS gate jsonb;

COMMENT ON COLUMN ragsage_generations.gate IS 'the evaluation gate''s figures and decision, when a gate judged this generation';
