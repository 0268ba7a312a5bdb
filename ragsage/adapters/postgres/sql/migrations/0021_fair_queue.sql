-- Migration 21: a fair queue across namespaces (job classes, turns, slot shares) and
-- the operator's per-namespace settings (shares and quotas).
--
-- Function bodies are not kept here: functions/next_job.sql holds the current one.
--
-- A worker no longer runs the job its message names: a message is a turn, and
-- the turn goes to the next job in fair order (ragsage_next_job).  What that
-- order reads is added here: each job's class (interactive uploads before a
-- namespace's bulk backlog, re-index work below both), whether it is a job
-- whose worker died or a retry (ahead of everything), when a retry may run
-- again, and when a job was last claimed (the namespace that waited longest
-- since its last turn goes first).  The per-namespace share of worker slots,
-- set by the operator, lives in ragsage_namespace_settings.

ALTER TABLE ragsage_jobs ADD COLUMN IF NOT EXISTS job_class text NOT NULL DEFAULT 'bulk'
    CHECK (job_class IN ('interactive', 'bulk', 'reindex'));

ALTER TABLE ragsage_jobs ADD COLUMN IF NOT EXISTS recovered boolean NOT NULL DEFAULT false;

ALTER TABLE ragsage_jobs ADD COLUMN IF NOT EXISTS run_after timestamptz;

ALTER TABLE ragsage_jobs ADD COLUMN IF NOT EXISTS claimed_at timestamptz;

COMMENT ON COLUMN ragsage_jobs.job_class IS 'interactive, bulk or reindex: the order of a namespace''s waiting jobs';

COMMENT ON COLUMN ragsage_jobs.recovered IS 'queued again after its worker died or a transient failure: runs before other work';

COMMENT ON COLUMN ragsage_jobs.run_after IS 'a retry waits until then';

COMMENT ON COLUMN ragsage_jobs.claimed_at IS 'the last time a worker claimed it: a namespace''s last turn';

ALTER TABLE ragsage_jobs NO FORCE ROW LEVEL SECURITY;

UPDATE ragsage_jobs SET job_class = 'reindex' WHERE kind = 'reindex';

ALTER TABLE ragsage_jobs FORCE ROW LEVEL SECURITY;

CREATE INDEX IF NOT EXISTS ragsage_jobs_waiting ON ragsage_jobs (namespace, recovered DESC, (CASE job_class WHEN 'interactive' THEN 0 WHEN 'bulk' THEN 1 ELSE 2 END), created_at) WHERE state = 'queued';

CREATE INDEX IF NOT EXISTS ragsage_jobs_turns ON ragsage_jobs (namespace, claimed_at) WHERE claimed_at IS NOT NULL;

CREATE TABLE IF NOT EXISTS ragsage_namespace_settings (
        namespace text PRIMARY KEY,
        job_slots integer CHECK (job_slots >= 0),
        quota_documents bigint CHECK (quota_documents >= 0),
        quota_bytes bigint CHECK (quota_bytes >= 0),
        quota_chunks bigint CHECK (quota_chunks >= 0),
        quota_queued_jobs bigint CHECK (quota_queued_jobs >= 0),
        search_timeout_ms integer CHECK (search_timeout_ms > 0),
        updated_at timestamptz NOT NULL DEFAULT now()
    );

COMMENT ON TABLE ragsage_namespace_settings IS 'per-namespace overrides set by the operator (the owner); a tenant reads its own row only';

COMMENT ON COLUMN ragsage_namespace_settings.job_slots IS 'jobs the namespace runs at once while others wait (0: no cap); NULL: the setting RAGSAGE_JOB_NAMESPACE_SLOTS';

COMMENT ON COLUMN ragsage_namespace_settings.search_timeout_ms IS 'how long one statement of the namespace''s searches and answers may run; NULL: RAGSAGE_SEARCH_TIMEOUT_MS';

COMMENT ON COLUMN ragsage_namespace_settings.quota_bytes IS 'each quota: 0 is none, NULL is the deployment''s setting (RAGSAGE_QUOTA_*)';

ALTER TABLE ragsage_namespace_settings ENABLE ROW LEVEL SECURITY;

ALTER TABLE ragsage_namespace_settings FORCE ROW LEVEL SECURITY;

DROP POLICY IF EXISTS ragsage_namespace_settings_namespace ON ragsage_namespace_settings;

CREATE POLICY ragsage_namespace_settings_namespace ON ragsage_namespace_settings USING (namespace = current_setting('{{isolation_setting}}', true)) WITH CHECK (namespace = current_setting('{{isolation_setting}}', true));

GRANT SELECT ON ragsage_namespace_settings TO "{{app_role}}";

GRANT SELECT ON ragsage_namespace_settings TO "ragsage_system";

DROP POLICY IF EXISTS ragsage_namespace_settings_system ON ragsage_namespace_settings;

CREATE POLICY ragsage_namespace_settings_system ON ragsage_namespace_settings FOR SELECT TO "ragsage_system" USING (true);
