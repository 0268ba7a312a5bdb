-- Migration 26: each chunk row records the chunking that cut it, so a re-index can reuse it.
--
-- A re-index into another embedding model used to chunk, contextualize and
-- write every row again, recomputing the keyword column, although nothing but
-- the vector changes when the chunking settings are the same.  `chunking`
-- holds a short fingerprint of those settings (the engine's version, the
-- chunk size and overlap, code chunking, the contextualizer); a re-index job
-- whose settings give the same fingerprint copies the active generation's
-- rows of the document with new vectors and skips the rest.  NULL (rows
-- written before this version, or by the library facade) is never reused:
-- those documents are chunked again as before.
--
-- A nullable column without a default changes the catalogue only: the lock is
-- held for milliseconds whatever the table's size, and no row is rewritten.

ALTER TABLE ragsage_chunks ADD COLUMN IF NOT EXISTS chunking text;

COMMENT ON COLUMN ragsage_chunks.chunking IS 'fingerprint of the chunking settings that cut this row; a re-index with the same reuses it';
