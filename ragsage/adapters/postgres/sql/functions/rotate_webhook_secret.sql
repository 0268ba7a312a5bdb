-- requires: 24

-- Give an endpoint of the session's namespace a new sealed secret, keeping the
-- old one signing for `grace` seconds so receivers can switch without losing
-- a delivery.  A definer because the app role may not read the sealed column
-- it moves; the namespace is the session's own, never an argument.
CREATE OR REPLACE FUNCTION ragsage_rotate_webhook_secret(
        hook uuid, sealed text, grace double precision)
    RETURNS boolean
    LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp AS $$
        UPDATE ragsage_webhooks
        SET previous_sealed_secret = CASE WHEN grace > 0 THEN sealed_secret END,
            previous_secret_until = CASE WHEN grace > 0
                                         THEN now() + make_interval(secs => grace) END,
            sealed_secret = sealed, updated_at = now()
        WHERE namespace = current_setting('{{isolation_setting}}', true) AND id = hook
        RETURNING true
    $$;

ALTER FUNCTION ragsage_rotate_webhook_secret(uuid, text, double precision) OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_rotate_webhook_secret(uuid, text, double precision) FROM PUBLIC;

GRANT EXECUTE ON FUNCTION ragsage_rotate_webhook_secret(uuid, text, double precision) TO "{{app_role}}";
