-- requires: 24

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
