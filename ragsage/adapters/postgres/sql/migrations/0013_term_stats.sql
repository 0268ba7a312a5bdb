-- Migration 13: keyword term counts cached per namespace, not counted on every search.
--
-- Keyword term counts cached per namespace, so a search stops counting its terms.
--
-- Migration 7's search counted, for every query term, the namespace's chunks
-- holding it: up to 32 capped index scans on every search.  Those counts now
-- live in `ragsage_term_stats`, one row per namespace, generation and term,
-- written by the search itself the first time it meets a term and again once
-- the row is older than `TERM_COUNT_LIFETIME_SECONDS`; a repeated term
-- costs one index probe.  Writers never touch the table, so no two workers
-- ever wait on each other for it (an ingest-time tally, tried first, cost the
-- ingest a third of its speed), and the counts are the same capped ones as
-- before, so candidates and weights are unchanged while a count is fresh.
-- The empty term counts a generation's rows (capped), which dense search
-- asks to tell a small namespace from a big one.  Everything stays per
-- namespace: no tenant's text enters another's figures.
--
-- Function bodies are not kept here: functions/term_counts.sql hold the current ones.
--
-- This step also defined ragsage_lexical_search, retired by migration 20.

CREATE TABLE IF NOT EXISTS ragsage_term_stats (
        namespace text NOT NULL,
        generation integer NOT NULL,
        term text NOT NULL,
        chunks bigint NOT NULL,
        cap bigint NOT NULL,
        counted_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (namespace, generation, term)
    );

COMMENT ON TABLE ragsage_term_stats IS 'chunks holding each lexeme (capped at cap), per namespace and generation, as a search last counted them; the empty term counts rows';

ALTER TABLE ragsage_term_stats ENABLE ROW LEVEL SECURITY;

ALTER TABLE ragsage_term_stats FORCE ROW LEVEL SECURITY;

DROP POLICY IF EXISTS ragsage_term_stats_system ON ragsage_term_stats;

CREATE POLICY ragsage_term_stats_system ON ragsage_term_stats TO "ragsage_system" USING (true) WITH CHECK (true);

GRANT SELECT, INSERT, UPDATE, DELETE ON ragsage_term_stats TO "ragsage_system";

DROP POLICY IF EXISTS ragsage_term_stats_namespace ON ragsage_term_stats;

CREATE POLICY ragsage_term_stats_namespace ON ragsage_term_stats FOR SELECT TO "{{app_role}}" USING (namespace = current_setting('{{isolation_setting}}', true));

GRANT SELECT ON ragsage_term_stats TO "{{app_role}}";
