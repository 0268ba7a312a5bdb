-- Migration 3: API keys, hashed, one namespace and role each.
--
-- Function bodies are not kept here: functions/find_api_key.sql hold the current ones.

CREATE TABLE IF NOT EXISTS ragsage_api_keys (
        namespace text NOT NULL,
        id text NOT NULL,
        key_hash text NOT NULL,
        role text NOT NULL CHECK (role IN ('read', 'write', 'admin')),
        name text NOT NULL DEFAULT '',
        created_at timestamptz NOT NULL DEFAULT now(),
        revoked_at timestamptz,
        PRIMARY KEY (namespace, id)
    );

CREATE UNIQUE INDEX IF NOT EXISTS ragsage_api_keys_hash ON ragsage_api_keys (key_hash);

ALTER TABLE ragsage_api_keys ENABLE ROW LEVEL SECURITY;

ALTER TABLE ragsage_api_keys FORCE ROW LEVEL SECURITY;

DROP POLICY IF EXISTS ragsage_api_keys_namespace ON ragsage_api_keys;

CREATE POLICY ragsage_api_keys_namespace ON ragsage_api_keys USING (namespace = current_setting('{{isolation_setting}}', true)) WITH CHECK (namespace = current_setting('{{isolation_setting}}', true));

GRANT SELECT, INSERT, UPDATE, DELETE ON ragsage_api_keys TO "{{app_role}}";

GRANT SELECT ON ragsage_api_keys TO "ragsage_system";

DROP POLICY IF EXISTS ragsage_api_keys_system ON ragsage_api_keys;

CREATE POLICY ragsage_api_keys_system ON ragsage_api_keys FOR SELECT TO "ragsage_system" USING (true);
