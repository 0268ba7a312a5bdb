-- Migration 2: uploads: document status, blobs, jobs, resolved pages, system functions.
--
-- Function bodies are not kept here: functions/job_counts.sql, functions/namespaces.sql, functions/stale_jobs.sql hold the current ones.

ALTER TABLE ragsage_documents
    ADD COLUMN IF NOT EXISTS external_id text,
    ADD COLUMN IF NOT EXISTS filename text,
    ADD COLUMN IF NOT EXISTS media_type text,
    ADD COLUMN IF NOT EXISTS size_bytes bigint,
    ADD COLUMN IF NOT EXISTS status text NOT NULL DEFAULT 'ready'
        CHECK (status IN ('queued', 'processing', 'ready', 'failed')),
    ADD COLUMN IF NOT EXISTS error text;

ALTER TABLE ragsage_documents NO FORCE ROW LEVEL SECURITY;

UPDATE ragsage_documents SET external_id = source, filename = source WHERE external_id IS NULL;

ALTER TABLE ragsage_documents FORCE ROW LEVEL SECURITY;

ALTER TABLE ragsage_documents ALTER COLUMN external_id SET NOT NULL;

CREATE UNIQUE INDEX IF NOT EXISTS ragsage_documents_external
    ON ragsage_documents (namespace, external_id);

CREATE TABLE IF NOT EXISTS ragsage_blobs (
        namespace text NOT NULL,
        content_hash text NOT NULL,
        data bytea NOT NULL,
        size_bytes bigint NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (namespace, content_hash)
    );

ALTER TABLE ragsage_blobs ALTER COLUMN data SET STORAGE EXTERNAL;

CREATE TABLE IF NOT EXISTS ragsage_jobs (
        namespace text NOT NULL,
        id uuid NOT NULL,
        document_id text NOT NULL,
        kind text NOT NULL CHECK (kind IN ('ingest', 'reindex')),
        state text NOT NULL
            CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
        stage text,
        content_hash text NOT NULL,
        filename text NOT NULL,
        media_type text,
        metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
        generation integer,
        attempts integer NOT NULL DEFAULT 0,
        deliveries integer NOT NULL DEFAULT 0,
        error text,
        timings jsonb NOT NULL DEFAULT '{}'::jsonb,
        result jsonb,
        lease_expires_at timestamptz,
        enqueued_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        started_at timestamptz,
        finished_at timestamptz,
        PRIMARY KEY (namespace, id)
    );

CREATE INDEX IF NOT EXISTS ragsage_jobs_recent ON ragsage_jobs (namespace, created_at);

CREATE INDEX IF NOT EXISTS ragsage_jobs_document
    ON ragsage_jobs (namespace, document_id, created_at);

CREATE INDEX IF NOT EXISTS ragsage_jobs_open ON ragsage_jobs (state, lease_expires_at)
    WHERE state IN ('queued', 'running');

CREATE TABLE IF NOT EXISTS ragsage_pages (
        namespace text NOT NULL,
        content_hash text NOT NULL,
        number integer NOT NULL,
        text text NOT NULL,
        route text NOT NULL CHECK (route IN ('text', 'vision')),
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (namespace, content_hash, number)
    );

ALTER TABLE ragsage_blobs ENABLE ROW LEVEL SECURITY;

ALTER TABLE ragsage_blobs FORCE ROW LEVEL SECURITY;

DROP POLICY IF EXISTS ragsage_blobs_namespace ON ragsage_blobs;

CREATE POLICY ragsage_blobs_namespace ON ragsage_blobs USING (namespace = current_setting('{{isolation_setting}}', true)) WITH CHECK (namespace = current_setting('{{isolation_setting}}', true));

GRANT SELECT, INSERT, UPDATE, DELETE ON ragsage_blobs TO "{{app_role}}";

ALTER TABLE ragsage_jobs ENABLE ROW LEVEL SECURITY;

ALTER TABLE ragsage_jobs FORCE ROW LEVEL SECURITY;

DROP POLICY IF EXISTS ragsage_jobs_namespace ON ragsage_jobs;

CREATE POLICY ragsage_jobs_namespace ON ragsage_jobs USING (namespace = current_setting('{{isolation_setting}}', true)) WITH CHECK (namespace = current_setting('{{isolation_setting}}', true));

GRANT SELECT, INSERT, UPDATE, DELETE ON ragsage_jobs TO "{{app_role}}";

ALTER TABLE ragsage_pages ENABLE ROW LEVEL SECURITY;

ALTER TABLE ragsage_pages FORCE ROW LEVEL SECURITY;

DROP POLICY IF EXISTS ragsage_pages_namespace ON ragsage_pages;

CREATE POLICY ragsage_pages_namespace ON ragsage_pages USING (namespace = current_setting('{{isolation_setting}}', true)) WITH CHECK (namespace = current_setting('{{isolation_setting}}', true));

GRANT SELECT, INSERT, UPDATE, DELETE ON ragsage_pages TO "{{app_role}}";

DO $$ BEGIN
        IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'ragsage_system') THEN
            CREATE ROLE "ragsage_system" NOLOGIN NOSUPERUSER NOBYPASSRLS NOINHERIT;
        END IF;
    END $$;

GRANT "ragsage_system" TO CURRENT_USER;

GRANT USAGE ON SCHEMA public TO "ragsage_system";

GRANT SELECT ON ragsage_jobs, ragsage_documents TO "ragsage_system";

DROP POLICY IF EXISTS ragsage_jobs_system ON ragsage_jobs;

CREATE POLICY ragsage_jobs_system ON ragsage_jobs FOR SELECT TO "ragsage_system" USING (true);

DROP POLICY IF EXISTS ragsage_documents_system ON ragsage_documents;

CREATE POLICY ragsage_documents_system ON ragsage_documents FOR SELECT TO "ragsage_system" USING (true);
