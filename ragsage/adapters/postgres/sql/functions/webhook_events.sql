-- requires: 24

-- Writing webhook events: the outbox half of webhooks (migration 24).
--
-- Each trigger below runs inside the transaction of the change it reports,
-- so an event commits exactly when its change does.  An event is written only
-- if an endpoint of the namespace wants its type and may see it (an endpoint
-- bound to principals sees an event about a document only if the document's
-- access list is open or names one of them), with one delivery per such
-- endpoint: pending for an enabled endpoint, failed at once for one the
-- workers disabled (kept for a replay), none for one an admin switched off.
-- A NOTIFY at commit wakes the dispatcher.  The data is what the API returns
-- for the object (never document text); tests hold the two to the same shape.

CREATE OR REPLACE FUNCTION ragsage_publish_webhook_event(
        ns text, event_type text, payload jsonb, readers text[])
    RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
    DECLARE
        event_id uuid;
    BEGIN
        IF NOT EXISTS (
            SELECT 1 FROM ragsage_webhooks w
            WHERE w.namespace = ns AND event_type = ANY (w.events)
              AND (w.enabled OR w.disabled_reason IS NOT NULL)
              AND (w.principals IS NULL OR cardinality(readers) = 0 OR readers && w.principals)
        ) THEN
            RETURN;
        END IF;
        event_id := gen_random_uuid();
        INSERT INTO ragsage_webhook_events (namespace, id, type, data, access)
            VALUES (ns, event_id, event_type, payload, coalesce(readers, '{}'));
        INSERT INTO ragsage_webhook_deliveries (namespace, webhook_id, event_id, state, last_error)
            SELECT ns, w.id, event_id,
                   CASE WHEN w.enabled THEN 'pending' ELSE 'failed' END,
                   CASE WHEN w.enabled THEN NULL
                        ELSE 'not sent: the endpoint was disabled (' || w.disabled_reason || ')' END
            FROM ragsage_webhooks w
            WHERE w.namespace = ns AND event_type = ANY (w.events)
              AND (w.enabled OR w.disabled_reason IS NOT NULL)
              AND (w.principals IS NULL OR cardinality(readers) = 0 OR readers && w.principals);
        PERFORM pg_notify('ragsage_webhooks', '');
    END
    $$;

ALTER FUNCTION ragsage_publish_webhook_event(text, text, jsonb, text[]) OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_publish_webhook_event(text, text, jsonb, text[]) FROM PUBLIC;

-- A job as GET /v1/jobs/{id} shows it (Job.to_dict).
CREATE OR REPLACE FUNCTION ragsage_job_webhook_data(j ragsage_jobs) RETURNS jsonb
    LANGUAGE sql STABLE SET search_path = public, pg_temp AS $$
        SELECT jsonb_build_object(
            'id', j.id::text, 'document_id', j.document_id, 'kind', j.kind,
            'job_class', j.job_class, 'state', j.state, 'stage', j.stage,
            'filename', j.filename, 'content_hash', j.content_hash,
            'attempts', j.attempts, 'deliveries', j.deliveries,
            'lost_deliveries', j.lost_deliveries, 'version', j.version, 'error', j.error,
            'timings_ms', coalesce(j.timings, '{}'::jsonb),
            'result', CASE WHEN j.result IS NULL OR j.result = '{}'::jsonb THEN NULL ELSE j.result END,
            'created_at', j.created_at, 'updated_at', j.updated_at,
            'started_at', j.started_at, 'finished_at', j.finished_at)
    $$;

ALTER FUNCTION ragsage_job_webhook_data(ragsage_jobs) OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_job_webhook_data(ragsage_jobs) FROM PUBLIC;

-- A generation as GET /v1/reindex lists it, less the counts that change as it builds.
CREATE OR REPLACE FUNCTION ragsage_generation_webhook_data(ns text, generation_id integer)
    RETURNS jsonb
    LANGUAGE sql STABLE SET search_path = public, pg_temp AS $$
        SELECT jsonb_build_object(
            'id', g.id, 'embedder', g.embedder, 'embedding_model', g.embedding_model,
            'embedding_dim', g.embedding_dim, 'state', g.state, 'held', g.held, 'gate', g.gate)
        FROM ragsage_generations g WHERE g.namespace = ns AND g.id = generation_id
    $$;

ALTER FUNCTION ragsage_generation_webhook_data(text, integer) OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_generation_webhook_data(text, integer) FROM PUBLIC;

-- job.succeeded, job.failed, job.superseded, job.cancelled; and reindex.failed
-- when the first document of a building generation fails (its switch cannot
-- happen until that document is re-indexed or removed).
CREATE OR REPLACE FUNCTION ragsage_job_webhook_events() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
    BEGIN
        PERFORM ragsage_publish_webhook_event(
            NEW.namespace, 'job.' || NEW.state, ragsage_job_webhook_data(NEW), NEW.access);
        IF NEW.kind = 'reindex' AND NEW.state = 'failed' AND NEW.generation IS NOT NULL
           AND NOT EXISTS (
               SELECT 1 FROM ragsage_jobs o
               WHERE o.namespace = NEW.namespace AND o.kind = 'reindex'
                 AND o.generation = NEW.generation AND o.state = 'failed' AND o.id <> NEW.id)
           AND EXISTS (
               SELECT 1 FROM ragsage_generations g
               WHERE g.namespace = NEW.namespace AND g.id = NEW.generation AND g.state = 'building')
        THEN
            PERFORM ragsage_publish_webhook_event(
                NEW.namespace, 'reindex.failed',
                jsonb_build_object(
                    'generation', ragsage_generation_webhook_data(NEW.namespace, NEW.generation),
                    'reason', 'document',
                    'job', ragsage_job_webhook_data(NEW)),
                NEW.access);
        END IF;
        RETURN NULL;
    END
    $$;

ALTER FUNCTION ragsage_job_webhook_events() OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_job_webhook_events() FROM PUBLIC;

CREATE OR REPLACE TRIGGER ragsage_jobs_webhook_events
    AFTER UPDATE OF state ON ragsage_jobs FOR EACH ROW
    WHEN (OLD.state IS DISTINCT FROM NEW.state
          AND NEW.state IN ('succeeded', 'failed', 'superseded', 'cancelled'))
    EXECUTE FUNCTION ragsage_job_webhook_events();

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

-- reindex.switched when a generation becomes the active one (a finished
-- re-index, a gate's activation or a rollback); reindex.failed when a gate
-- records a verdict that refuses the switch (and was not forced past).
CREATE OR REPLACE FUNCTION ragsage_generation_webhook_events() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
    BEGIN
        IF NEW.state = 'active' AND OLD.state IS DISTINCT FROM 'active' THEN
            PERFORM ragsage_publish_webhook_event(
                NEW.namespace, 'reindex.switched',
                jsonb_build_object(
                    'generation', ragsage_generation_webhook_data(NEW.namespace, NEW.id),
                    'previous_state', OLD.state),
                '{}');
        ELSIF NEW.gate IS DISTINCT FROM OLD.gate AND NEW.gate IS NOT NULL
              AND (NEW.gate ->> 'passed') = 'false'
              AND coalesce(NEW.gate ->> 'forced', 'false') = 'false' THEN
            PERFORM ragsage_publish_webhook_event(
                NEW.namespace, 'reindex.failed',
                jsonb_build_object(
                    'generation', ragsage_generation_webhook_data(NEW.namespace, NEW.id),
                    'reason', 'gate'),
                '{}');
        END IF;
        RETURN NULL;
    END
    $$;

ALTER FUNCTION ragsage_generation_webhook_events() OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_generation_webhook_events() FROM PUBLIC;

CREATE OR REPLACE TRIGGER ragsage_generations_webhook_events
    AFTER UPDATE OF state, gate ON ragsage_generations FOR EACH ROW
    WHEN (OLD.state IS DISTINCT FROM NEW.state OR OLD.gate IS DISTINCT FROM NEW.gate)
    EXECUTE FUNCTION ragsage_generation_webhook_events();
