-- requires: 23

-- The parent of a restricted key, while it is a live delegate key: what it may
-- grant and the secret its restricted keys are signed with.
CREATE OR REPLACE FUNCTION ragsage_find_signer(wanted_namespace text, wanted_id text)
    RETURNS TABLE (role text, principals text[], signing_secret text)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
        SELECT k.role, k.principals, k.signing_secret FROM ragsage_api_keys k
        WHERE k.namespace = wanted_namespace AND k.id = wanted_id
          AND k.revoked_at IS NULL AND k.role = 'delegate'
    $$;

ALTER FUNCTION ragsage_find_signer(text, text) OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_find_signer(text, text) FROM PUBLIC;

GRANT EXECUTE ON FUNCTION ragsage_find_signer(text, text) TO "{{app_role}}";
