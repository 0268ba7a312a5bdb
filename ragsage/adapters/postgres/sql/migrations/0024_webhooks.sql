-- Migration 24: webhooks: endpoints per namespace, an outbox of events, and their deliveries.
--
-- Function bodies are not kept here: functions/*_webhook_events.sql hold the
-- triggers that write events (through publish_webhook_event.sql), and
-- claim_webhook_deliveries.sql, record_webhook_delivery.sql,
-- purge_webhook_events.sql and webhook_backlog.sql the doors the dispatcher
-- works through.
--
-- An event row is written by a trigger on the row whose change it reports, so
-- it commits or rolls back with that change (an outbox): a job that reaches a
-- terminal state, a document deleted, a generation switched in or a re-index
-- that cannot finish.  Only events some endpoint of the namespace wants are
-- written, each with one delivery row per such endpoint.  A delivery carries
-- its own schedule (next_attempt_at): the workers scan for due rows, so a retry
-- hours away waits in the database, never in the broker.
--
-- An endpoint's signing secret is sealed with the operator's key
-- (RAGSAGE_WEBHOOK_KEYS) before it reaches the database, and the app role may
-- write those columns but never select them: the dispatcher reads them
-- through ragsage_claim_webhook_deliveries.

CREATE TABLE IF NOT EXISTS ragsage_webhooks (
        namespace text NOT NULL,
        id uuid NOT NULL,
        url text NOT NULL CHECK (length(url) <= 2048),
        events text[] NOT NULL CHECK (cardinality(events) > 0),
        enabled boolean NOT NULL DEFAULT true,
        principals text[],
        description text NOT NULL DEFAULT '' CHECK (length(description) <= 500),
        sealed_secret text NOT NULL,
        previous_sealed_secret text,
        previous_secret_until timestamptz,
        disabled_reason text,
        failing_since timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (namespace, id)
    );

COMMENT ON TABLE ragsage_webhooks IS 'where a namespace''s events are posted, signed with the endpoint''s secret';

COMMENT ON COLUMN ragsage_webhooks.principals IS 'NULL: every event; else only events about documents these principals may read';

COMMENT ON COLUMN ragsage_webhooks.sealed_secret IS 'the signing secret, encrypted with the operator''s key; never selectable by the app role';

COMMENT ON COLUMN ragsage_webhooks.previous_sealed_secret IS 'the secret before the last rotation, still signing until previous_secret_until';

COMMENT ON COLUMN ragsage_webhooks.disabled_reason IS 'why the workers disabled the endpoint (it kept failing); NULL when an admin disabled it or it is enabled';

CREATE TABLE IF NOT EXISTS ragsage_webhook_events (
        namespace text NOT NULL,
        id uuid NOT NULL,
        type text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        data jsonb NOT NULL,
        access text[] NOT NULL DEFAULT '{}',
        PRIMARY KEY (namespace, id)
    );

COMMENT ON TABLE ragsage_webhook_events IS 'the outbox: one row per change some endpoint wants, written in the change''s own transaction';

COMMENT ON COLUMN ragsage_webhook_events.access IS 'the access list of the document the event concerns; empty: the whole namespace';

CREATE TABLE IF NOT EXISTS ragsage_webhook_deliveries (
        namespace text NOT NULL,
        webhook_id uuid NOT NULL,
        event_id uuid NOT NULL,
        state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
        attempts integer NOT NULL DEFAULT 0,
        next_attempt_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        first_attempt_at timestamptz,
        last_attempt_at timestamptz,
        claimed_until timestamptz,
        last_status integer,
        last_latency_ms real,
        last_error text,
        created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        PRIMARY KEY (namespace, webhook_id, event_id),
        FOREIGN KEY (namespace, webhook_id) REFERENCES ragsage_webhooks (namespace, id) ON DELETE CASCADE,
        FOREIGN KEY (namespace, event_id) REFERENCES ragsage_webhook_events (namespace, id) ON DELETE CASCADE
    );

COMMENT ON TABLE ragsage_webhook_deliveries IS 'one event for one endpoint: its state, schedule and last attempt';

COMMENT ON COLUMN ragsage_webhook_deliveries.next_attempt_at IS 'a pending delivery is due then; while one is being sent, when its sender''s claim runs out';

COMMENT ON COLUMN ragsage_webhook_deliveries.claimed_until IS 'while a sender holds the delivery: when its claim runs out; NULL otherwise';

COMMENT ON COLUMN ragsage_webhook_deliveries.last_attempt_at IS 'when the latest attempt began';

CREATE INDEX IF NOT EXISTS ragsage_webhook_deliveries_due ON ragsage_webhook_deliveries (namespace, webhook_id, next_attempt_at) WHERE state = 'pending';

CREATE INDEX IF NOT EXISTS ragsage_webhook_deliveries_recent ON ragsage_webhook_deliveries (namespace, webhook_id, created_at DESC);

CREATE INDEX IF NOT EXISTS ragsage_webhook_deliveries_event ON ragsage_webhook_deliveries (namespace, event_id);

CREATE INDEX IF NOT EXISTS ragsage_webhook_events_age ON ragsage_webhook_events (created_at);

ALTER TABLE ragsage_webhooks ENABLE ROW LEVEL SECURITY;

ALTER TABLE ragsage_webhooks FORCE ROW LEVEL SECURITY;

ALTER TABLE ragsage_webhook_events ENABLE ROW LEVEL SECURITY;

ALTER TABLE ragsage_webhook_events FORCE ROW LEVEL SECURITY;

ALTER TABLE ragsage_webhook_deliveries ENABLE ROW LEVEL SECURITY;

ALTER TABLE ragsage_webhook_deliveries FORCE ROW LEVEL SECURITY;

CREATE POLICY ragsage_webhooks_namespace ON ragsage_webhooks USING (namespace = current_setting('{{isolation_setting}}', true)) WITH CHECK (namespace = current_setting('{{isolation_setting}}', true));

-- An event about a document is as readable as the document (migration 22's rule).
CREATE POLICY ragsage_webhook_events_namespace ON ragsage_webhook_events USING (namespace = current_setting('{{isolation_setting}}', true) AND (current_setting('{{principals_setting}}', true) = '*' OR access = '{}' OR access && string_to_array(current_setting('{{principals_setting}}', true), ','))) WITH CHECK (namespace = current_setting('{{isolation_setting}}', true));

CREATE POLICY ragsage_webhook_deliveries_namespace ON ragsage_webhook_deliveries USING (namespace = current_setting('{{isolation_setting}}', true)) WITH CHECK (namespace = current_setting('{{isolation_setting}}', true));

GRANT SELECT (namespace, id, url, events, enabled, principals, description, previous_secret_until, disabled_reason, failing_since, created_at, updated_at) ON ragsage_webhooks TO "{{app_role}}";

GRANT INSERT, UPDATE, DELETE ON ragsage_webhooks TO "{{app_role}}";

GRANT SELECT, UPDATE, DELETE ON ragsage_webhook_events TO "{{app_role}}";

GRANT SELECT, UPDATE, DELETE ON ragsage_webhook_deliveries TO "{{app_role}}";

-- The triggers and the dispatcher's doors run as the system role, across namespaces.
GRANT SELECT, UPDATE ON ragsage_webhooks TO "ragsage_system";

GRANT SELECT, INSERT, UPDATE, DELETE ON ragsage_webhook_events, ragsage_webhook_deliveries TO "ragsage_system";

CREATE POLICY ragsage_webhooks_system ON ragsage_webhooks TO "ragsage_system" USING (true) WITH CHECK (true);

CREATE POLICY ragsage_webhook_events_system ON ragsage_webhook_events TO "ragsage_system" USING (true) WITH CHECK (true);

CREATE POLICY ragsage_webhook_deliveries_system ON ragsage_webhook_deliveries TO "ragsage_system" USING (true) WITH CHECK (true);
