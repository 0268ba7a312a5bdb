-- requires: 22
-- Whether the caller's namespace holds a document by this id or external id,
-- readable by the caller or not: a bound key's upload must not replace one it
-- cannot read (migration 22), and it sees only those it can.

CREATE OR REPLACE FUNCTION ragsage_document_taken(wanted_id text, wanted_external_id text)
    RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
        SELECT EXISTS (SELECT 1 FROM ragsage_documents d
            WHERE d.namespace = current_setting('{{isolation_setting}}', true)
            AND (d.id = wanted_id OR d.external_id = wanted_external_id))
    $$;

ALTER FUNCTION ragsage_document_taken(text, text) OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_document_taken(text, text) FROM PUBLIC;

GRANT EXECUTE ON FUNCTION ragsage_document_taken(text, text) TO "{{app_role}}";
