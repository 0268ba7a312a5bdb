-- Migration 31: the keyword index is keyed by namespace.
--
-- The GIN index over the keyword column held every namespace's lexemes in one
-- posting list each, so a keyword search fetched every row of the whole table
-- holding its terms and only then kept its own namespace's.  A small tenant,
-- for whom every term is rare, paid for the common words of all the others:
-- 350 ms at the median for 247 chunks beside 1,000,000 (bench/scale.py).  The
-- index now covers `ragsage_keyword_key(namespace, lexical)`: the keyword
-- column plus one lexeme naming the namespace (a space and the name, which no
-- parser can produce), and the keyword function asks for that lexeme AND its
-- terms, so the index itself intersects them.  Ranking still reads the column
-- alone.  The old index goes: only the keyword function used it.  Building the
-- new one reads every chunk once, inside this step.

CREATE OR REPLACE FUNCTION ragsage_keyword_key(namespace text, lexical tsvector)
    RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN coalesce(lexical, ''::tsvector) || array_to_tsvector(ARRAY[' ' || namespace]);

CREATE INDEX IF NOT EXISTS ragsage_chunks_keyword ON ragsage_chunks USING gin (ragsage_keyword_key(namespace, lexical)) WITH (gin_pending_list_limit = 256);

DROP INDEX IF EXISTS ragsage_chunks_lexical;
