-- requires: 25

-- The keyword column of a chunk: headings weighted A, text D, each followed
-- by the parts of its identifiers (`ragsage_identifier_words`, or the same
-- split done by the writer).  Pure and inlinable, so an INSERT ... SELECT
-- pays for the four to_tsvector calls and nothing else.
CREATE OR REPLACE FUNCTION ragsage_chunk_lexical(
        headings text, heading_words text, body text, body_words text) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $fn$
    SELECT setweight(to_tsvector('{{tsconfig}}'::regconfig, headings), 'A')
        || setweight(to_tsvector('{{tsconfig}}'::regconfig, heading_words), 'A')
        || setweight(to_tsvector('{{tsconfig}}'::regconfig, body), 'D')
        || setweight(to_tsvector('{{tsconfig}}'::regconfig, body_words), 'D')
    $fn$;
