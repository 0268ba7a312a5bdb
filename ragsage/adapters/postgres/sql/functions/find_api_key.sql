-- requires: 22

CREATE OR REPLACE FUNCTION ragsage_find_api_key(presented_hash text)
    RETURNS TABLE (namespace text, key_id text, role text, principals text[])
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
        SELECT k.namespace, k.id, k.role, k.principals FROM ragsage_api_keys k
        WHERE k.key_hash = presented_hash AND k.revoked_at IS NULL
    $$;

ALTER FUNCTION ragsage_find_api_key(text) OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_find_api_key(text) FROM PUBLIC;

GRANT EXECUTE ON FUNCTION ragsage_find_api_key(text) TO "{{app_role}}";
