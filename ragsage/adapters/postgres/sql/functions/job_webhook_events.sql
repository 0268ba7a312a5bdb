-- requires: 24

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
