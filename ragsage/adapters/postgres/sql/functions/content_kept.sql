-- requires: 22
-- Whether the caller's namespace still keeps a version's bytes (a retry needs
-- them), asked by a session that may not read blobs itself (migration 22).

CREATE OR REPLACE FUNCTION ragsage_content_kept(wanted text)
    RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
        SELECT EXISTS (SELECT 1 FROM ragsage_blobs b
            WHERE b.namespace = current_setting('{{isolation_setting}}', true)
            AND b.content_hash = wanted)
    $$;

ALTER FUNCTION ragsage_content_kept(text) OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_content_kept(text) FROM PUBLIC;

GRANT EXECUTE ON FUNCTION ragsage_content_kept(text) TO "{{app_role}}";
