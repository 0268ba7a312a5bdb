-- requires: 22
-- Once a document or version is gone, its bytes and stored pages go too, unless
-- another document or open job of the namespace still holds them, readable by
-- the caller or not: a bound session sees neither them nor every document
-- (migration 22).

CREATE OR REPLACE FUNCTION ragsage_forget_content(unused text)
    RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp AS $fn$
    DECLARE
        ns text := current_setting('{{isolation_setting}}', true);
    BEGIN
        IF ns IS NULL OR ns = '' THEN RETURN false; END IF;
        IF EXISTS (SELECT 1 FROM ragsage_documents d WHERE d.namespace = ns
                AND d.content_hash = unused)
            OR EXISTS (SELECT 1 FROM ragsage_jobs j WHERE j.namespace = ns
                AND j.content_hash = unused AND j.state IN ('queued', 'running')) THEN
            RETURN false;
        END IF;
        DELETE FROM ragsage_blobs b WHERE b.namespace = ns AND b.content_hash = unused;
        DELETE FROM ragsage_pages p WHERE p.namespace = ns AND p.content_hash = unused;
        RETURN true;
    END $fn$;

ALTER FUNCTION ragsage_forget_content(text) OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_forget_content(text) FROM PUBLIC;

GRANT EXECUTE ON FUNCTION ragsage_forget_content(text) TO "{{app_role}}";
