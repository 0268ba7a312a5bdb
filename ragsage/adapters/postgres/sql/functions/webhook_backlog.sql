-- requires: 24

-- What waits to be sent across every namespace: how many deliveries, and the
-- age in seconds of the oldest event among them (the metrics' backlog age, 0
-- when nothing waits);
-- for the system session only, as the dispatcher's doors are.
CREATE OR REPLACE FUNCTION ragsage_webhook_backlog()
    RETURNS TABLE (pending bigint, oldest_age double precision)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
        SELECT count(*), coalesce(extract(epoch FROM now() - min(e.created_at)), 0)::double precision
        FROM ragsage_webhook_deliveries d
        JOIN ragsage_webhook_events e ON e.namespace = d.namespace AND e.id = d.event_id
        JOIN ragsage_webhooks w ON w.namespace = d.namespace AND w.id = d.webhook_id
        WHERE d.state = 'pending' AND w.enabled
          AND coalesce(current_setting('{{isolation_setting}}', true), '') = ''
    $$;

ALTER FUNCTION ragsage_webhook_backlog() OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_webhook_backlog() FROM PUBLIC;

GRANT EXECUTE ON FUNCTION ragsage_webhook_backlog() TO "{{app_role}}";
