-- Migration 20: the keyword search function of migrations 4 to 16 retired.
--
-- `ragsage_keyword_search` (functions/keyword_search.sql) has answered every
-- keyword search since migration 19, which left `ragsage_lexical_search` in
-- place for one more release so that servers of the version before could go
-- on searching while a rolling upgrade replaced them.  That release has
-- passed; its body was the last copy of a function superseded four times.
-- A server older than migration 19 still running beside this schema loses
-- its keyword search until it is replaced, so upgrade from 18 or earlier
-- through a release of migration 19 when the rollout must stay seamless.

DROP FUNCTION IF EXISTS ragsage_lexical_search(
    text, boolean, integer, integer, integer, text[], text[], jsonb, timestamptz, timestamptz,
    boolean, integer);

DROP FUNCTION IF EXISTS ragsage_lexical_search(
    text, boolean, integer, integer, integer, text[], text[], jsonb, timestamptz, timestamptz);
