-- requires: 22
-- What an upload may still add to its namespace, counted whole: a session bound to
-- principals sees only the documents it may read, and no blob (migration 22), but
-- a quota is the namespace's.  `present` says whether the document the upload
-- would replace exists, readable by the caller or not.

CREATE OR REPLACE FUNCTION ragsage_upload_room(wanted_id text, wanted_external_id text)
    RETURNS TABLE (queued bigint, documents bigint, stored_bytes bigint, present boolean)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
        SELECT (SELECT count(*) FROM ragsage_jobs j
                WHERE j.namespace = current_setting('{{isolation_setting}}', true)
                AND j.state = 'queued'),
            (SELECT count(*) FROM ragsage_documents d
                WHERE d.namespace = current_setting('{{isolation_setting}}', true)),
            (SELECT coalesce(sum(b.size_bytes), 0)::bigint FROM ragsage_blobs b
                WHERE b.namespace = current_setting('{{isolation_setting}}', true)),
            ragsage_document_taken(wanted_id, wanted_external_id)
        FROM (SELECT current_setting('{{isolation_setting}}', true) AS ns) s
        WHERE s.ns <> ''
    $$;

ALTER FUNCTION ragsage_upload_room(text, text) OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_upload_room(text, text) FROM PUBLIC;

GRANT EXECUTE ON FUNCTION ragsage_upload_room(text, text) TO "{{app_role}}";
