-- Migration 4: keyword search through an index-using, namespace-scoped function.
--
-- Keyword search through one named function that can use the GIN index.
--
-- Under Row-Level Security the planner may not evaluate a non-leakproof
-- operator before the policy, and full-text `@@` is not leakproof, so a
-- policy-scoped query can never walk the GIN index: every search scans the
-- namespace.  This function runs as `ragsage_system` (no policy in the way),
-- scopes itself to the caller's namespace setting, and returns only chunk ids
-- and ranks; the caller then reads the chunks themselves under RLS as usual.
--
-- This step also defined ragsage_lexical_search, retired by migration 20.

GRANT SELECT ON ragsage_chunks, ragsage_generations TO "ragsage_system";

DROP POLICY IF EXISTS ragsage_chunks_system ON ragsage_chunks;

CREATE POLICY ragsage_chunks_system ON ragsage_chunks FOR SELECT TO "ragsage_system" USING (true);

DROP POLICY IF EXISTS ragsage_generations_system ON ragsage_generations;

CREATE POLICY ragsage_generations_system ON ragsage_generations FOR SELECT TO "ragsage_system" USING (true);
