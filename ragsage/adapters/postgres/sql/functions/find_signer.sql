-- requires: 36

-- The parent of a restricted key, while it is a live delegate key: what it may
-- grant and the secret its restricted keys are signed with, sealed with the
-- operator's key (migration 36), so a session of the app role that calls this
-- learns nothing it could sign with.  A secret still in plaintext (made before
-- migration 36 and not yet sealed by the application) is not returned at all.
DROP FUNCTION IF EXISTS ragsage_find_signer(text, text);

CREATE FUNCTION ragsage_find_signer(wanted_namespace text, wanted_id text)
    RETURNS TABLE (role text, principals text[], sealed_secret text)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
        SELECT k.role, k.principals, k.sealed_signing_secret FROM ragsage_api_keys k
        WHERE k.namespace = wanted_namespace AND k.id = wanted_id
          AND k.revoked_at IS NULL AND k.role = 'delegate'
          AND k.sealed_signing_secret IS NOT NULL
    $$;

ALTER FUNCTION ragsage_find_signer(text, text) OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_find_signer(text, text) FROM PUBLIC;

GRANT EXECUTE ON FUNCTION ragsage_find_signer(text, text) TO "{{app_role}}";
