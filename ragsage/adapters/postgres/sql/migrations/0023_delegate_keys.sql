-- Migration 23: delegate keys, which sign the restricted keys a product hands to its users.
--
-- Function bodies are not kept here: functions/find_signer.sql holds the current one.
--
-- A delegate key may do what a write key does, and it also holds a signing
-- secret: the HMAC key of the restricted keys (JWTs) issued under it, by the
-- API or offline by the product's backend, which received the secret once.
-- The API verifies a restricted key with its parent's secret, read through
-- ragsage_find_signer; the app role may write the column (creation, rotation)
-- but never select it, so no listing, no policy mistake and no query of the
-- app's sessions can show a secret.

ALTER TABLE ragsage_api_keys DROP CONSTRAINT IF EXISTS ragsage_api_keys_role_check;

ALTER TABLE ragsage_api_keys ADD CONSTRAINT ragsage_api_keys_role_check CHECK (role IN ('read', 'write', 'delegate', 'admin'));

ALTER TABLE ragsage_api_keys ADD COLUMN IF NOT EXISTS signing_secret text;

ALTER TABLE ragsage_api_keys ADD CONSTRAINT ragsage_api_keys_delegate_signs CHECK ((role = 'delegate') = (signing_secret IS NOT NULL));

COMMENT ON COLUMN ragsage_api_keys.signing_secret IS 'a delegate key''s HMAC key for the restricted keys issued under it; never selectable by the app role';

REVOKE SELECT ON ragsage_api_keys FROM "{{app_role}}";

GRANT SELECT (namespace, id, key_hash, role, name, created_at, revoked_at, principals) ON ragsage_api_keys TO "{{app_role}}";
