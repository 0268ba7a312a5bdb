-- Migration 7: identifier-aware keyword index; IDF-weighted keyword ranking of any live generation.
--
-- Identifier-aware keyword indexing and IDF-weighted keyword ranking.
--
-- The text-search parser keeps `os.path.join` or `/etc/hosts` as one
-- token and never splits `getLogger`, so the generated column now also
-- indexes the parts of every such identifier (`_IDENTIFIER_WORDS`);
-- re-adding the column recomputes it for every existing row.
--
-- `ts_rank` knows nothing of how common a term is, so in a question like
-- "how do I use ThreadPoolExecutor" the word "use" counted as much as the
-- name.  The search function already counts each query term's chunks (capped)
-- to choose candidates; with `weighted` it now also ranks by the sum of each
-- matched term's `ts_rank` times its inverse document frequency, estimated
-- from those namespace-scoped counts against a fixed scale (never table-wide
-- statistics, which would let one tenant's text move another's ranking).
-- Headings are weighted like text, and an optional `target_generation`
-- (active or building, of the caller's namespace) is searched instead of the
-- active one — how a re-index gate evaluates a generation before it goes live.
--
-- This step also defined ragsage_lexical_search, retired by migration 20.

CREATE OR REPLACE FUNCTION ragsage_identifier_words(t text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $fn$
    SELECT coalesce(string_agg(lower(p), ' '), '') FROM
        regexp_matches(t, '[A-Za-z_][A-Za-z0-9_]*(?:[./:]+[A-Za-z_][A-Za-z0-9_]*)+'
            '|[A-Za-z0-9]*[a-z][A-Z][A-Za-z0-9]*|[A-Z]+[A-Z][a-z][A-Za-z0-9]*', 'g') AS m(ident),
        LATERAL (
            SELECT s FROM regexp_split_to_table(m.ident[1], '[./:]+') s
                WHERE s <> '' AND s <> m.ident[1]
            UNION ALL
            SELECT c FROM regexp_split_to_table(m.ident[1], '[./:]+') s,
                LATERAL regexp_split_to_table(
                    regexp_replace(regexp_replace(s, '([A-Z]+)([A-Z][a-z])', '\1 \2', 'g'),
                        '([a-z0-9])([A-Z])', '\1 \2', 'g'), ' ') c
                WHERE s <> '' AND c <> s
        ) parts(p)
    $fn$;

ALTER TABLE ragsage_chunks DROP COLUMN lexical;

ALTER TABLE ragsage_chunks ADD COLUMN lexical tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('{{tsconfig}}'::regconfig, headings), 'A')
        || setweight(to_tsvector('{{tsconfig}}'::regconfig,
            ragsage_identifier_words(headings)), 'A')
        || setweight(to_tsvector('{{tsconfig}}'::regconfig, text), 'D')
        || setweight(to_tsvector('{{tsconfig}}'::regconfig,
            ragsage_identifier_words(text)), 'D')
    ) STORED;

ALTER TABLE ragsage_chunks ALTER COLUMN lexical SET STORAGE MAIN;

CREATE INDEX IF NOT EXISTS ragsage_chunks_lexical ON ragsage_chunks USING gin (lexical);
