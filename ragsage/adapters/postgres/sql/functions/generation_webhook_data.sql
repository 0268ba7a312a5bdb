-- requires: 24

-- A generation as GET /v1/reindex lists it, less the counts that change as it builds.
CREATE OR REPLACE FUNCTION ragsage_generation_webhook_data(ns text, generation_id integer)
    RETURNS jsonb
    LANGUAGE sql STABLE SET search_path = public, pg_temp AS $$
        SELECT jsonb_build_object(
            'id', g.id, 'embedder', g.embedder, 'embedding_model', g.embedding_model,
            'embedding_dim', g.embedding_dim, 'state', g.state, 'held', g.held, 'gate', g.gate)
        FROM ragsage_generations g WHERE g.namespace = ns AND g.id = generation_id
    $$;

ALTER FUNCTION ragsage_generation_webhook_data(text, integer) OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_generation_webhook_data(text, integer) FROM PUBLIC;
