-- requires: 24

-- The dispatcher's doors to webhook deliveries across namespaces (migration 24).
--
-- They serve the system session only (pinned to no namespace): a tenant's
-- session, bound or not, claims, records and purges nothing through them.

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

-- Record how attempt `attempt` of a delivery went: 'delivered', 'retry' (due
-- again in `retry_in` seconds) or 'failed' (its schedule is spent).  A result
-- for an attempt that is no longer the delivery's latest (its claim ran out
-- and another sender took it) is dropped: 'stale'.  A delivery given up while
-- its endpoint has failed ever since that delivery's first attempt means the
-- endpoint kept failing for a whole schedule: it is disabled with the reason,
-- and its other pending deliveries fail with it, to be replayed once fixed
-- ('disabled').
CREATE OR REPLACE FUNCTION ragsage_record_webhook_delivery(
        ns text, hook uuid, event uuid, attempt integer, outcome text, status integer,
        latency real, error text, retry_in double precision)
    RETURNS text
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    DECLARE
        first_try timestamptz;
        tried_at timestamptz;
        since timestamptz;
    BEGIN
        IF coalesce(current_setting('{{isolation_setting}}', true), '') <> '' THEN
            RETURN 'stale';  -- a tenant's session: not the dispatcher
        END IF;
        IF outcome NOT IN ('delivered', 'retry', 'failed') THEN
            RAISE EXCEPTION 'unknown delivery outcome %', outcome;
        END IF;
        UPDATE ragsage_webhook_deliveries d
        SET state = CASE outcome WHEN 'retry' THEN 'pending' ELSE outcome END,
            next_attempt_at = CASE WHEN outcome = 'retry'
                                   THEN clock_timestamp() + make_interval(secs => retry_in)
                                   ELSE d.next_attempt_at END,
            last_status = status, last_latency_ms = latency, last_error = error
        WHERE d.namespace = ns AND d.webhook_id = hook AND d.event_id = event
          AND d.state = 'pending' AND d.attempts = attempt
        RETURNING d.first_attempt_at, d.last_attempt_at INTO first_try, tried_at;
        IF NOT FOUND THEN
            RETURN 'stale';
        END IF;
        IF outcome = 'delivered' THEN
            UPDATE ragsage_webhooks SET failing_since = NULL
            WHERE namespace = ns AND id = hook AND failing_since IS NOT NULL;
            RETURN 'delivered';
        END IF;
        -- Failing since this attempt began, unless it already was.
        UPDATE ragsage_webhooks SET failing_since = coalesce(failing_since, tried_at)
        WHERE namespace = ns AND id = hook
        RETURNING failing_since INTO since;
        IF outcome = 'retry' THEN
            RETURN 'retry';
        END IF;
        IF since IS NULL OR since > first_try THEN
            RETURN 'failed';
        END IF;
        UPDATE ragsage_webhooks
        SET enabled = false, updated_at = now(),
            disabled_reason = 'every delivery failed since '
                || to_char(since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
                || '; the last: ' || coalesce(error, 'no answer')
        WHERE namespace = ns AND id = hook AND enabled;
        UPDATE ragsage_webhook_deliveries d
        SET state = 'failed', last_error = coalesce(d.last_error || '; ', '')
                || 'not sent: the endpoint was disabled'
        WHERE d.namespace = ns AND d.webhook_id = hook AND d.state = 'pending';
        RETURN 'disabled';
    END
    $$;

ALTER FUNCTION ragsage_record_webhook_delivery(text, uuid, uuid, integer, text, integer, real, text, double precision) OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_record_webhook_delivery(text, uuid, uuid, integer, text, integer, real, text, double precision) FROM PUBLIC;

GRANT EXECUTE ON FUNCTION ragsage_record_webhook_delivery(text, uuid, uuid, integer, text, integer, real, text, double precision) TO "{{app_role}}";

-- Delete events every endpoint received more than `delivered_keep` seconds
-- ago, and events with nothing left to send (some never delivered, kept for
-- a replay) after `undelivered_keep`; at most `batch` per call.
CREATE OR REPLACE FUNCTION ragsage_purge_webhook_events(
        delivered_keep double precision, undelivered_keep double precision, batch integer)
    RETURNS bigint
    LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp AS $$
        WITH old AS (
            SELECT e.namespace, e.id FROM ragsage_webhook_events e
            WHERE e.created_at < now() - make_interval(secs => least(delivered_keep, undelivered_keep))
              AND coalesce(current_setting('{{isolation_setting}}', true), '') = ''
              AND NOT EXISTS (
                  SELECT 1 FROM ragsage_webhook_deliveries d
                  WHERE d.namespace = e.namespace AND d.event_id = e.id AND d.state = 'pending')
              AND (e.created_at < now() - make_interval(secs => undelivered_keep)
                   OR (e.created_at < now() - make_interval(secs => delivered_keep)
                       AND NOT EXISTS (
                           SELECT 1 FROM ragsage_webhook_deliveries d
                           WHERE d.namespace = e.namespace AND d.event_id = e.id
                             AND d.state <> 'delivered')))
            ORDER BY e.created_at
            LIMIT batch
        ),
        gone AS (
            DELETE FROM ragsage_webhook_events e USING old
            WHERE e.namespace = old.namespace AND e.id = old.id
            RETURNING 1
        )
        SELECT count(*) FROM gone
    $$;

ALTER FUNCTION ragsage_purge_webhook_events(double precision, double precision, integer) OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_purge_webhook_events(double precision, double precision, integer) FROM PUBLIC;

GRANT EXECUTE ON FUNCTION ragsage_purge_webhook_events(double precision, double precision, integer) TO "{{app_role}}";

-- What waits to be sent across every namespace: how many deliveries, and the
-- creation time of the oldest event among them (the metrics' backlog age).
CREATE OR REPLACE FUNCTION ragsage_webhook_backlog()
    RETURNS TABLE (pending bigint, oldest timestamptz)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
        SELECT count(*), min(e.created_at)
        FROM ragsage_webhook_deliveries d
        JOIN ragsage_webhook_events e ON e.namespace = d.namespace AND e.id = d.event_id
        JOIN ragsage_webhooks w ON w.namespace = d.namespace AND w.id = d.webhook_id
        WHERE d.state = 'pending' AND w.enabled
    $$;

ALTER FUNCTION ragsage_webhook_backlog() OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_webhook_backlog() FROM PUBLIC;

GRANT EXECUTE ON FUNCTION ragsage_webhook_backlog() TO "{{app_role}}";
