-- Migration 29: keyword term counts kept by the writers; a search only reads.
--
-- Since migration 13 a search counted a term the first time it met it (a capped
-- index scan) and wrote the count back for ten minutes, so searching wrote
-- rows, its time depended on whether its terms were counted lately, and a hot
-- standby, which refuses writes, could not serve it.  Now every statement that
-- writes chunk rows records, in its own transaction, how many of them hold each
-- lexeme: a trigger on `ragsage_chunks` (functions/count_terms.sql), so deletes
-- cascading from a document and a worker of the previous version during an
-- upgrade keep them too.  Searches read exact counts.
--
-- Two workers writing one namespace must not wait on each other's counters,
-- and a common word is in nearly every document.  So a writer that takes the
-- namespace's fold lock (a try-lock, never waited for) adds its counts, and any
-- pending changes of other writers, into `ragsage_term_stats`; one that finds
-- the lock taken appends its counts to `ragsage_term_changes` under its own
-- transaction's key, where the next writer to hold the lock folds them.
-- Searches add both.  The empty term counts a generation's chunks.
--
-- The table is filled once from the chunks already stored (on a large install
-- this step reads every chunk's keyword column once).  Its counts are exact
-- from now on, so a row is never capped and never stale: the cap and the time
-- counted stay only so that a server of the previous version, still running
-- during the upgrade, reads each row as fresh; for it `ragsage_term_counts`
-- now only reads (functions/term_counts.sql).

DELETE FROM ragsage_term_stats;

ALTER TABLE ragsage_term_stats
    ALTER COLUMN cap SET DEFAULT 9223372036854775807,
    ALTER COLUMN counted_at SET DEFAULT '9999-12-31 00:00:00+00';

COMMENT ON TABLE ragsage_term_stats IS 'chunks holding each lexeme, per namespace and generation, kept by a trigger on ragsage_chunks (with ragsage_term_changes); the empty term counts rows';

INSERT INTO ragsage_term_stats (namespace, generation, term, chunks) SELECT c.namespace, c.generation, w.term, count(*) FROM ragsage_chunks c, unnest(coalesce(tsvector_to_array(c.lexical), '{}') || ARRAY['']) AS w(term) GROUP BY 1, 2, 3;

CREATE TABLE IF NOT EXISTS ragsage_term_changes (
        namespace text NOT NULL,
        generation integer NOT NULL,
        term text NOT NULL,
        batch bigint NOT NULL,
        chunks bigint NOT NULL,
        PRIMARY KEY (namespace, generation, term, batch)
    );

COMMENT ON TABLE ragsage_term_changes IS 'term count changes a writer could not fold into ragsage_term_stats while another held the namespace''s fold lock; batch is the writing transaction';

ALTER TABLE ragsage_term_changes ENABLE ROW LEVEL SECURITY;

ALTER TABLE ragsage_term_changes FORCE ROW LEVEL SECURITY;

DROP POLICY IF EXISTS ragsage_term_changes_system ON ragsage_term_changes;

CREATE POLICY ragsage_term_changes_system ON ragsage_term_changes TO "ragsage_system" USING (true) WITH CHECK (true);

GRANT SELECT, INSERT, UPDATE, DELETE ON ragsage_term_changes TO "ragsage_system";

DROP POLICY IF EXISTS ragsage_term_changes_namespace ON ragsage_term_changes;

CREATE POLICY ragsage_term_changes_namespace ON ragsage_term_changes FOR SELECT TO "{{app_role}}" USING (namespace = current_setting('{{isolation_setting}}', true) AND current_setting('{{principals_setting}}', true) = '*');

DROP POLICY IF EXISTS ragsage_term_changes_forget ON ragsage_term_changes;

CREATE POLICY ragsage_term_changes_forget ON ragsage_term_changes FOR DELETE TO "{{app_role}}" USING (namespace = current_setting('{{isolation_setting}}', true) AND current_setting('{{principals_setting}}', true) = '*');

GRANT SELECT, DELETE ON ragsage_term_changes TO "{{app_role}}";
