-- requires: 24

-- Writing webhook events: the outbox half of webhooks (migration 24).
--
-- The triggers (job_webhook_events.sql, document_webhook_events.sql,
-- generation_webhook_events.sql) run inside the transaction of the change
-- they report and call this, so an event commits exactly when its change
-- does.  An event is written only if an endpoint of the namespace wants its
-- type and may see it (an endpoint bound to principals sees an event about a
-- document only if the document's access list is open or names one of them),
-- with one delivery per such endpoint: pending for an enabled endpoint,
-- failed at once for one the workers disabled (kept for a replay), none for
-- one an admin switched off.  A NOTIFY at commit wakes the dispatcher.  The
-- data is what the API returns for the object (never document text); tests
-- hold the two to the same shape.

CREATE OR REPLACE FUNCTION ragsage_publish_webhook_event(
        ns text, event_type text, payload jsonb, readers text[])
    RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
    DECLARE
        event_id uuid;
        hook record;
    BEGIN
        -- Locked for key share as they are read: an endpoint deleted meanwhile is
        -- waited for and then skipped, never a foreign-key error in the job's commit.
        FOR hook IN
            SELECT w.id, w.enabled, w.disabled_reason FROM ragsage_webhooks w
            WHERE w.namespace = ns AND event_type = ANY (w.events)
              AND (w.enabled OR w.disabled_reason IS NOT NULL)
              AND ragsage_webhook_admits(w.principals, readers)
            FOR KEY SHARE
        LOOP
            IF event_id IS NULL THEN
                event_id := gen_random_uuid();
                INSERT INTO ragsage_webhook_events (namespace, id, type, data, access)
                    VALUES (ns, event_id, event_type, payload, coalesce(readers, '{}'));
            END IF;
            INSERT INTO ragsage_webhook_deliveries
                    (namespace, webhook_id, event_id, state, last_error)
                VALUES (ns, hook.id, event_id,
                        CASE WHEN hook.enabled THEN 'pending' ELSE 'failed' END,
                        CASE WHEN hook.enabled THEN NULL
                             ELSE 'not sent: the endpoint was disabled ('
                                  || hook.disabled_reason || ')' END);
        END LOOP;
        IF event_id IS NOT NULL THEN
            PERFORM pg_notify('ragsage_webhooks', '');
        END IF;
    END
    $$;

ALTER FUNCTION ragsage_publish_webhook_event(text, text, jsonb, text[]) OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_publish_webhook_event(text, text, jsonb, text[]) FROM PUBLIC;
