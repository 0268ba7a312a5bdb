-- requires: 24

-- One of the dispatcher's doors across namespaces (migration 24).  It serves
-- the system session only (pinned to no namespace): a tenant's session, bound
-- or not, gets nothing through it.

-- Claim due deliveries to send now.  The caller says what it already keeps in
-- flight, per endpoint and per namespace; no endpoint gets more than
-- `per_endpoint` and no namespace more than `per_namespace` at once, so one
-- tenant's slow or dead endpoints hold a bounded share of the sender.  Every
-- namespace's first claim comes before any namespace's second, oldest due
-- first within each rank.  Each enabled endpoint is visited once and reads at
-- most its own allowance of due rows through its index, so a large backlog
-- costs a round nothing more.  A delivery the endpoint may no longer see (its
-- principals narrowed since) is not sent.  A claimed delivery counts its
-- attempt and is the sender's for `lease` seconds: if the sender dies
-- mid-send it is due again after that.  Returned with what signing and
-- sending it needs: the endpoint's sealed secrets (the previous one only
-- while its rotation grace lasts) and the event.
CREATE OR REPLACE FUNCTION ragsage_claim_webhook_deliveries(
        wanted integer, per_endpoint integer, per_namespace integer,
        busy_hooks uuid[], hook_counts integer[], busy_namespaces text[],
        namespace_counts integer[], lease double precision)
    RETURNS TABLE (namespace text, webhook_id uuid, event_id uuid, attempts integer,
                   first_attempt_at timestamptz, url text, sealed_secret text,
                   previous_sealed_secret text, event_type text, event_created_at timestamptz,
                   data jsonb)
    LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp AS $$
        WITH hooks_busy AS (
            SELECT b.hook, b.n FROM unnest(busy_hooks, hook_counts) AS b(hook, n)
        ),
        namespaces_busy AS (
            SELECT b.ns, b.n FROM unnest(busy_namespaces, namespace_counts) AS b(ns, n)
        ),
        candidates AS (
            SELECT d.namespace, d.webhook_id, d.event_id, d.next_attempt_at,
                   row_number() OVER (PARTITION BY w.namespace, w.id
                                      ORDER BY d.next_attempt_at) AS place
            FROM ragsage_webhooks w
            LEFT JOIN hooks_busy h ON h.hook = w.id
            CROSS JOIN LATERAL (
                SELECT d.namespace, d.webhook_id, d.event_id, d.next_attempt_at
                FROM ragsage_webhook_deliveries d
                JOIN ragsage_webhook_events e ON e.namespace = d.namespace AND e.id = d.event_id
                WHERE d.namespace = w.namespace AND d.webhook_id = w.id
                  AND d.state = 'pending' AND d.next_attempt_at <= now()
                  AND ragsage_webhook_admits(w.principals, e.access)
                ORDER BY d.next_attempt_at
                LIMIT greatest(per_endpoint - coalesce(h.n, 0), 0)
            ) d
            WHERE w.enabled
              AND coalesce(current_setting('{{isolation_setting}}', true), '') = ''
        ),
        ranked AS (
            SELECT c.*, row_number() OVER (PARTITION BY c.namespace
                                           ORDER BY c.place, c.next_attempt_at) AS rank
            FROM candidates c
        ),
        chosen AS (
            SELECT d.namespace, d.webhook_id, d.event_id FROM ragsage_webhook_deliveries d
            JOIN ranked r ON r.namespace = d.namespace AND r.webhook_id = d.webhook_id
                 AND r.event_id = d.event_id
            LEFT JOIN namespaces_busy b ON b.ns = r.namespace
            WHERE r.rank <= per_namespace - coalesce(b.n, 0)
              AND d.state = 'pending' AND d.next_attempt_at <= now()
            ORDER BY r.rank, r.next_attempt_at
            LIMIT wanted
            FOR UPDATE OF d SKIP LOCKED
        ),
        -- One instant for the whole claim: a first attempt's start must equal the
        -- delivery's first_attempt_at exactly (the disabling rule compares them).
        moment AS (SELECT clock_timestamp() AS at),
        claimed AS (
            UPDATE ragsage_webhook_deliveries d
            SET attempts = d.attempts + 1,
                next_attempt_at = m.at + make_interval(secs => lease),
                claimed_until = m.at + make_interval(secs => lease),
                first_attempt_at = coalesce(d.first_attempt_at, m.at),
                last_attempt_at = m.at
            FROM chosen c, moment m
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

ALTER FUNCTION ragsage_claim_webhook_deliveries(integer, integer, integer, uuid[], integer[], text[], integer[], double precision) OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_claim_webhook_deliveries(integer, integer, integer, uuid[], integer[], text[], integer[], double precision) FROM PUBLIC;

GRANT EXECUTE ON FUNCTION ragsage_claim_webhook_deliveries(integer, integer, integer, uuid[], integer[], text[], integer[], double precision) TO "{{app_role}}";
