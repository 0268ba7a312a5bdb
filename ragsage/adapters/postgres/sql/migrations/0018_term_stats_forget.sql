-- Migration 18: a namespace's purge also forgets its keyword term counts.
--
-- A namespace's purge also forgets its keyword term counts.
--
-- The app role could only read `ragsage_term_stats` (searches write it
-- through migration 13's function), so purging a namespace left its counts
-- behind; a namespace made again under the same name within ten minutes
-- would have picked its keyword candidates and weights from the old text.
-- It may now delete its own namespace's rows, and no other's.

DROP POLICY IF EXISTS ragsage_term_stats_forget ON ragsage_term_stats;

CREATE POLICY ragsage_term_stats_forget ON ragsage_term_stats FOR DELETE TO "{{app_role}}" USING (namespace = current_setting('{{isolation_setting}}', true));

GRANT DELETE ON ragsage_term_stats TO "{{app_role}}";
