-- requires: 24

-- One of the dispatcher's doors across namespaces (migration 24).  It serves
-- the system session only (pinned to no namespace): a tenant's session, bound
-- or not, gets nothing through it.

-- Record how attempt `attempt` of a delivery went: 'delivered', 'retry' (due
-- again in `retry_in` seconds), 'failed' (its schedule is spent) or 'unsent'
-- (this worker could not sign it: an operator's mistake, not the endpoint's,
-- so the attempt is handed back uncounted and due again in `retry_in`).  A
-- result for an attempt that is no longer the delivery's latest (its claim ran
-- out and another sender took it) is dropped: 'stale'.  A delivery given up
-- while its endpoint has failed ever since that delivery's first attempt means
-- the endpoint kept failing for a whole schedule: it is disabled with the
-- reason, and its other pending deliveries not being sent right now fail with
-- it, to be replayed once fixed ('disabled').  A failed attempt at an endpoint
-- disabled meanwhile fails for good.  The endpoint row is written only when
-- its state changes (its first failure, the success that ends a failure, the
-- disabling), so the many records of a failing endpoint do not queue behind
-- one another; a disabling leaves deliveries in flight to their senders, so
-- it never waits on a record that waits on it.
CREATE OR REPLACE FUNCTION ragsage_record_webhook_delivery(
        ns text, hook uuid, event uuid, attempt integer, outcome text, status integer,
        latency real, error text, retry_in double precision)
    RETURNS text
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    DECLARE
        first_try timestamptz;
        tried_at timestamptz;
        since timestamptz;
        live boolean;
        result text := outcome;
    BEGIN
        IF coalesce(current_setting('{{isolation_setting}}', true), '') <> '' THEN
            RETURN 'stale';  -- a tenant's session: not the dispatcher
        END IF;
        IF outcome NOT IN ('delivered', 'retry', 'failed', 'unsent') THEN
            RAISE EXCEPTION 'unknown delivery outcome %', outcome;
        END IF;
        SELECT w.enabled, w.failing_since INTO live, since FROM ragsage_webhooks w
        WHERE w.namespace = ns AND w.id = hook;
        IF NOT FOUND THEN
            RETURN 'stale';  -- deleted meanwhile, with its deliveries
        END IF;
        IF outcome = 'unsent' THEN
            UPDATE ragsage_webhook_deliveries d
            SET attempts = d.attempts - 1, claimed_until = NULL, last_error = error,
                next_attempt_at = clock_timestamp() + make_interval(secs => retry_in)
            WHERE d.namespace = ns AND d.webhook_id = hook AND d.event_id = event
              AND d.state = 'pending' AND d.attempts = attempt;
            RETURN CASE WHEN FOUND THEN 'unsent' ELSE 'stale' END;
        END IF;
        IF outcome = 'retry' AND NOT live THEN
            result := 'failed';
        END IF;
        UPDATE ragsage_webhook_deliveries d
        SET state = CASE result WHEN 'retry' THEN 'pending' ELSE result END,
            next_attempt_at = CASE WHEN result = 'retry'
                                   THEN clock_timestamp() + make_interval(secs => retry_in)
                                   ELSE d.next_attempt_at END,
            claimed_until = NULL, last_status = status, last_latency_ms = latency,
            last_error = error
        WHERE d.namespace = ns AND d.webhook_id = hook AND d.event_id = event
          AND d.state = 'pending' AND d.attempts = attempt
        RETURNING d.first_attempt_at, d.last_attempt_at INTO first_try, tried_at;
        IF NOT FOUND THEN
            RETURN 'stale';
        END IF;
        IF result = 'delivered' THEN
            IF since IS NOT NULL THEN
                UPDATE ragsage_webhooks SET failing_since = NULL
                WHERE namespace = ns AND id = hook AND failing_since IS NOT NULL;
            END IF;
            RETURN 'delivered';
        END IF;
        IF since IS NULL THEN
            -- Failing since this attempt began, unless another record said so first.
            UPDATE ragsage_webhooks SET failing_since = coalesce(failing_since, tried_at)
            WHERE namespace = ns AND id = hook
            RETURNING failing_since INTO since;
        END IF;
        IF result = 'retry' THEN
            RETURN 'retry';
        END IF;
        IF NOT live OR since IS NULL OR since > first_try THEN
            RETURN 'failed';
        END IF;
        UPDATE ragsage_webhooks
        SET enabled = false, updated_at = now(),
            disabled_reason = 'every delivery failed since '
                || to_char(since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
                || '; the last: ' || coalesce(error, 'no answer')
        WHERE namespace = ns AND id = hook;
        UPDATE ragsage_webhook_deliveries d
        SET state = 'failed', last_error = coalesce(d.last_error || '; ', '')
                || 'not sent: the endpoint was disabled'
        WHERE d.namespace = ns AND d.webhook_id = hook AND d.state = 'pending'
          AND (d.claimed_until IS NULL OR d.claimed_until < clock_timestamp());
        RETURN 'disabled';
    END
    $$;

ALTER FUNCTION ragsage_record_webhook_delivery(text, uuid, uuid, integer, text, integer, real, text, double precision) OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_record_webhook_delivery(text, uuid, uuid, integer, text, integer, real, text, double precision) FROM PUBLIC;

GRANT EXECUTE ON FUNCTION ragsage_record_webhook_delivery(text, uuid, uuid, integer, text, integer, real, text, double precision) TO "{{app_role}}";
