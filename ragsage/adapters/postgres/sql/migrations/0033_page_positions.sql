-- Migration 33: where each stored page's lines sit on the page.
--
-- A born-digital PDF's pages keep, beside their text, the box of every line
-- and the edges of its words (PagePositions.to_dict), so a citation can draw
-- the cited sentence on the page without parsing the file again, and a
-- re-index, which reads the stored pages, keeps them.  Pages without a page to
-- show (HTML, Markdown, DOCX) and pages stored before this migration have none.

ALTER TABLE ragsage_pages ADD COLUMN IF NOT EXISTS positions jsonb;

COMMENT ON COLUMN ragsage_pages.positions IS 'line boxes of the page text (PagePositions), or null';
