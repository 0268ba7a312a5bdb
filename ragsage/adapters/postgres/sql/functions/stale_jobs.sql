-- requires: 2

CREATE OR REPLACE FUNCTION ragsage_stale_jobs(
        unsent_grace double precision, requeue_after double precision)
    RETURNS TABLE (namespace text, job_id uuid)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
        SELECT j.namespace, j.id FROM ragsage_jobs j
        WHERE (j.state = 'running' AND j.lease_expires_at < now())
           OR (j.state = 'queued' AND j.enqueued_at IS NULL
               AND j.updated_at < now() - make_interval(secs => unsent_grace))
           OR (j.state = 'queued'
               AND j.enqueued_at < now() - make_interval(secs => requeue_after))
        ORDER BY j.created_at LIMIT 1000
    $$;

ALTER FUNCTION ragsage_stale_jobs(double precision, double precision) OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_stale_jobs(double precision, double precision) FROM PUBLIC;

GRANT EXECUTE ON FUNCTION ragsage_stale_jobs(double precision, double precision) TO "{{app_role}}";
