-- Before migration 1: pgvector, the app role, and the table that records the schema's version.

CREATE EXTENSION IF NOT EXISTS vector;

DO $$ BEGIN
        IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{{app_role}}') THEN
            CREATE ROLE "{{app_role}}" LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE
                NOINHERIT;
        END IF;
    END $$;

CREATE TABLE IF NOT EXISTS ragsage_schema (
        singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
        version integer NOT NULL,
        embedding_dim integer NOT NULL,
        text_search_config text NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
    );

ALTER TABLE ragsage_schema ENABLE ROW LEVEL SECURITY;

ALTER TABLE ragsage_schema FORCE ROW LEVEL SECURITY;

DROP POLICY IF EXISTS ragsage_schema_read ON ragsage_schema;

CREATE POLICY ragsage_schema_read ON ragsage_schema FOR SELECT USING (true);

GRANT SELECT ON ragsage_schema TO "{{app_role}}";
