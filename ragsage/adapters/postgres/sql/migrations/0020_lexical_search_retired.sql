-- Migration 20: the old keyword search function is a wrapper of the new one.
--
-- `ragsage_keyword_search` (functions/keyword_search.sql) has answered every
-- keyword search since migration 19, which kept `ragsage_lexical_search`
-- whole so that servers of the version before could go on searching while a
-- rolling upgrade replaced them.  Its body was the last copy of a ranking
-- superseded four times.  The function stays, for those servers, as a thin
-- call of the new one with every row carrying its chunk
-- (functions/lexical_search.sql): the same rows and ranks, and no second
-- ranking to keep in step.  The ten-argument form of migrations 4 to 6 goes.

DROP FUNCTION IF EXISTS ragsage_lexical_search(
    text, boolean, integer, integer, integer, text[], text[], jsonb, timestamptz, timestamptz,
    boolean, integer);

DROP FUNCTION IF EXISTS ragsage_lexical_search(
    text, boolean, integer, integer, integer, text[], text[], jsonb, timestamptz, timestamptz);
