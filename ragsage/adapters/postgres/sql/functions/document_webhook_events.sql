-- requires: 24

-- document.deleted: the document as GET /v1/documents/{id} showed it last.
CREATE OR REPLACE FUNCTION ragsage_document_webhook_events() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
    BEGIN
        PERFORM ragsage_publish_webhook_event(
            OLD.namespace, 'document.deleted',
            jsonb_build_object(
                'id', OLD.id, 'external_id', OLD.external_id, 'filename', OLD.filename,
                'title', OLD.title, 'media_type', OLD.media_type, 'size_bytes', OLD.size_bytes,
                'status', OLD.status, 'error', OLD.error, 'content_hash', OLD.content_hash,
                'metadata', coalesce(OLD.metadata, '{}'::jsonb), 'created_at', OLD.created_at,
                'updated_at', OLD.updated_at, 'access', to_jsonb(OLD.access)),
            OLD.access);
        RETURN NULL;
    END
    $$;

ALTER FUNCTION ragsage_document_webhook_events() OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_document_webhook_events() FROM PUBLIC;

CREATE OR REPLACE TRIGGER ragsage_documents_webhook_events
    AFTER DELETE ON ragsage_documents FOR EACH ROW
    EXECUTE FUNCTION ragsage_document_webhook_events();
