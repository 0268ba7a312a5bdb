-- requires: 24

-- Whether an endpoint bound to `principals` (NULL: unbound) may hear of an
-- event about a document with the access list `access`: the rule keys follow
-- (migration 22), in the one place every webhook door reads it.  Pure, so the
-- planner inlines it.  The file's name sorts it before the SQL functions that
-- call it (claim_webhook_deliveries.sql), which are checked as they are made.
CREATE OR REPLACE FUNCTION ragsage_webhook_admits(principals text[], access text[])
    RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
        SELECT principals IS NULL OR cardinality(access) = 0 OR access && principals
    $$;

ALTER FUNCTION ragsage_webhook_admits(text[], text[]) OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_webhook_admits(text[], text[]) FROM PUBLIC;

GRANT EXECUTE ON FUNCTION ragsage_webhook_admits(text[], text[]) TO "{{app_role}}";
