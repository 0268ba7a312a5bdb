-- Migration 36: delegate keys' signing secrets are sealed with the operator's key.
--
-- Function bodies are not kept here: functions/find_signer.sql holds the current one.
--
-- Migration 23 kept a delegate key's signing secret in plaintext, out of the
-- app role's column grants but returned by ragsage_find_signer to any app-role
-- session, and key ids are public (a restricted key's kid).  From here the
-- secret is stored sealed (Fernet, under RAGSAGE_SEALING_KEYS) in
-- sealed_signing_secret, and the function returns only that: the plaintext
-- exists in the process that verifies tokens, never in a row an app-role
-- session can read.  SQL never sees the sealing key, so the secrets stored
-- before this step stay in signing_secret until the application seals them
-- (`ragsage migrate` with RAGSAGE_SEALING_KEYS set, or `ragsage secrets seal`),
-- and until then their restricted keys are refused.

ALTER TABLE ragsage_api_keys ADD COLUMN IF NOT EXISTS sealed_signing_secret text;

ALTER TABLE ragsage_api_keys DROP CONSTRAINT IF EXISTS ragsage_api_keys_delegate_signs;

ALTER TABLE ragsage_api_keys ADD CONSTRAINT ragsage_api_keys_delegate_signs CHECK ((role = 'delegate') = (signing_secret IS NOT NULL OR sealed_signing_secret IS NOT NULL));

ALTER TABLE ragsage_api_keys ADD CONSTRAINT ragsage_api_keys_one_secret CHECK (signing_secret IS NULL OR sealed_signing_secret IS NULL);

COMMENT ON COLUMN ragsage_api_keys.signing_secret IS 'a delegate key''s signing secret in plaintext, made before migration 36 and not yet sealed; never written since';

COMMENT ON COLUMN ragsage_api_keys.sealed_signing_secret IS 'a delegate key''s HMAC key for the restricted keys issued under it, sealed with the operator''s key; never selectable by the app role';
