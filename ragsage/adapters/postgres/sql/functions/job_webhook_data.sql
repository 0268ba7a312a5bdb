-- requires: 28

-- A job as GET /v1/jobs/{id} shows it (Job.to_dict).
CREATE OR REPLACE FUNCTION ragsage_job_webhook_data(j ragsage_jobs) RETURNS jsonb
    LANGUAGE sql STABLE SET search_path = public, pg_temp AS $$
        SELECT jsonb_build_object(
            'id', j.id::text, 'document_id', j.document_id, 'kind', j.kind,
            'job_class', j.job_class, 'state', j.state, 'stage', j.stage,
            'progress', CASE WHEN j.state = 'running' AND j.progress_done IS NOT NULL
                AND j.progress_total IS NOT NULL
                THEN jsonb_build_object('done', j.progress_done, 'total', j.progress_total) END,
            'filename', j.filename, 'content_hash', j.content_hash,
            'attempts', j.attempts, 'deliveries', j.deliveries,
            'lost_deliveries', j.lost_deliveries, 'version', j.version, 'error', j.error,
            'timings_ms', coalesce(j.timings, '{}'::jsonb),
            'result', CASE WHEN j.result IS NULL OR j.result = '{}'::jsonb THEN NULL ELSE j.result END,
            'created_at', j.created_at, 'updated_at', j.updated_at,
            'started_at', j.started_at, 'finished_at', j.finished_at)
    $$;

ALTER FUNCTION ragsage_job_webhook_data(ragsage_jobs) OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_job_webhook_data(ragsage_jobs) FROM PUBLIC;
