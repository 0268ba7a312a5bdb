-- Migration 9: chunk spans: start_char and end_char in the page text.
--
-- Chunk spans: where in its page each chunk was cut from.
--
-- Rows written before this migration read back as the span 0..0, "unknown";
-- a constant default makes the new columns free to add on a full table.

ALTER TABLE ragsage_chunks ADD COLUMN IF NOT EXISTS start_char integer NOT NULL DEFAULT 0;

ALTER TABLE ragsage_chunks ADD COLUMN IF NOT EXISTS end_char integer NOT NULL DEFAULT 0;

COMMENT ON COLUMN ragsage_chunks.start_char IS 'offset of the chunk in its page text';
