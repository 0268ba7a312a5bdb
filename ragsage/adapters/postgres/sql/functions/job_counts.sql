-- requires: 2

CREATE OR REPLACE FUNCTION ragsage_job_counts()
    RETURNS TABLE (namespace text, state text, jobs bigint)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
        SELECT j.namespace, j.state, count(*) FROM ragsage_jobs j GROUP BY 1, 2
    $$;

ALTER FUNCTION ragsage_job_counts() OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_job_counts() FROM PUBLIC;

GRANT EXECUTE ON FUNCTION ragsage_job_counts() TO "{{app_role}}";
