-- requires: 24

-- One of the dispatcher's doors across namespaces (migration 24).  It serves
-- the system session only (pinned to no namespace): a tenant's session, bound
-- or not, gets nothing through it.

-- Claim due deliveries to send now: at most `per_endpoint` of each endpoint,
-- first ones of every endpoint before second ones (so one endpoint's backlog
-- never starves another's), skipping endpoints this dispatcher already keeps
-- busy and rows another dispatcher holds.  A claimed delivery counts its
-- attempt and is not due again for `lease` seconds: a sender that dies
-- mid-send leaves it to be sent again then.  Returned with what signing and
-- sending it needs: the endpoint's sealed secrets (the previous one only
-- while its rotation grace lasts) and the event.
CREATE OR REPLACE FUNCTION ragsage_claim_webhook_deliveries(
        wanted integer, per_endpoint integer, busy uuid[], lease double precision)
    RETURNS TABLE (namespace text, webhook_id uuid, event_id uuid, attempts integer,
                   first_attempt_at timestamptz, url text, sealed_secret text,
                   previous_sealed_secret text, event_type text, event_created_at timestamptz,
                   data jsonb)
    LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp AS $$
        WITH candidates AS (
            SELECT d.namespace, d.webhook_id, d.event_id,
                   row_number() OVER (PARTITION BY d.namespace, d.webhook_id
                                      ORDER BY d.next_attempt_at) AS place
            FROM ragsage_webhook_deliveries d
            JOIN ragsage_webhooks w ON w.namespace = d.namespace AND w.id = d.webhook_id
            WHERE d.state = 'pending' AND d.next_attempt_at <= now() AND w.enabled
              AND d.webhook_id <> ALL (busy)
              AND coalesce(current_setting('{{isolation_setting}}', true), '') = ''
        ),
        chosen AS (
            SELECT d.namespace, d.webhook_id, d.event_id FROM ragsage_webhook_deliveries d
            JOIN candidates c ON c.namespace = d.namespace AND c.webhook_id = d.webhook_id
                 AND c.event_id = d.event_id
            WHERE c.place <= per_endpoint AND d.state = 'pending' AND d.next_attempt_at <= now()
            ORDER BY c.place, d.next_attempt_at
            LIMIT wanted
            FOR UPDATE OF d SKIP LOCKED
        ),
        claimed AS (
            UPDATE ragsage_webhook_deliveries d
            SET attempts = d.attempts + 1,
                next_attempt_at = clock_timestamp() + make_interval(secs => lease),
                first_attempt_at = coalesce(d.first_attempt_at, clock_timestamp()),
                last_attempt_at = clock_timestamp()
            FROM chosen c
            WHERE d.namespace = c.namespace AND d.webhook_id = c.webhook_id
              AND d.event_id = c.event_id
            RETURNING d.namespace, d.webhook_id, d.event_id, d.attempts, d.first_attempt_at
        )
        SELECT c.namespace, c.webhook_id, c.event_id, c.attempts, c.first_attempt_at, w.url,
               w.sealed_secret,
               CASE WHEN w.previous_secret_until > now() THEN w.previous_sealed_secret END,
               e.type, e.created_at, e.data
        FROM claimed c
        JOIN ragsage_webhooks w ON w.namespace = c.namespace AND w.id = c.webhook_id
        JOIN ragsage_webhook_events e ON e.namespace = c.namespace AND e.id = c.event_id
    $$;

ALTER FUNCTION ragsage_claim_webhook_deliveries(integer, integer, uuid[], double precision) OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_claim_webhook_deliveries(integer, integer, uuid[], double precision) FROM PUBLIC;

GRANT EXECUTE ON FUNCTION ragsage_claim_webhook_deliveries(integer, integer, uuid[], double precision) TO "{{app_role}}";
