-- requires: 24

-- One of the dispatcher's doors across namespaces (migration 24).  It serves
-- the system session only (pinned to no namespace): a tenant's session, bound
-- or not, gets nothing through it.

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
