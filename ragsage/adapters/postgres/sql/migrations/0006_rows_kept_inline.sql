-- Migration 6: vectors and tsvectors kept in the row, not out of line.

ALTER TABLE ragsage_chunks ALTER COLUMN embedding SET STORAGE MAIN, ALTER COLUMN lexical SET STORAGE MAIN, SET (toast_tuple_target = 8160);
