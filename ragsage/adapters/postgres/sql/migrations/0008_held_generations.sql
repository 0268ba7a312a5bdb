-- Migration 8: held generations: activation waits for an evaluation gate.
--
-- Held generations.
--
-- A re-index run with an evaluation gate must not switch by itself when its
-- last document lands: `held` keeps a complete building generation waiting
-- for an explicit decision.  (Keyword search over such a generation, to
-- evaluate it before it serves anyone, is migration 7's `target_generation`.)

ALTER TABLE ragsage_generations ADD COLUMN IF NOT EXISTS held boolean NOT NULL DEFAULT false;

COMMENT ON COLUMN ragsage_generations.held IS 'activation waits for an explicit decision';
