-- Migration 1: generations, documents and chunks under Row-Level Security.

CREATE TABLE IF NOT EXISTS ragsage_generations (
        namespace text NOT NULL,
        id integer NOT NULL,
        embedding_model text NOT NULL,
        embedding_dim integer NOT NULL CHECK (embedding_dim BETWEEN 1 AND 2000),
        state text NOT NULL CHECK (state IN ('building', 'active', 'retired')),
        created_at timestamptz NOT NULL DEFAULT now(),
        activated_at timestamptz,
        PRIMARY KEY (namespace, id)
    );

CREATE UNIQUE INDEX IF NOT EXISTS ragsage_generations_one_active
    ON ragsage_generations (namespace) WHERE state = 'active';

CREATE TABLE IF NOT EXISTS ragsage_documents (
        namespace text NOT NULL,
        id text NOT NULL,
        content_hash text NOT NULL,
        title text NOT NULL,
        source text NOT NULL,
        metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (namespace, id)
    );

CREATE INDEX IF NOT EXISTS ragsage_documents_hash
    ON ragsage_documents (namespace, content_hash);

CREATE TABLE IF NOT EXISTS ragsage_chunks (
        namespace text NOT NULL,
        generation integer NOT NULL,
        document_id text NOT NULL,
        ordinal integer NOT NULL CHECK (ordinal >= 0),
        text text NOT NULL,
        embed_text text NOT NULL,
        heading_path text[] NOT NULL DEFAULT '{}',
        headings text NOT NULL DEFAULT '',
        page_numbers integer[] NOT NULL DEFAULT '{}',
        metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
        source text NOT NULL,
        created_at timestamptz,
        embedding_model text NOT NULL,
        embedding_dim integer NOT NULL,
        embedding vector NOT NULL,
        lexical tsvector GENERATED ALWAYS AS (
            setweight(to_tsvector('{{tsconfig}}'::regconfig, headings), 'A')
            || setweight(to_tsvector('{{tsconfig}}'::regconfig, text), 'D')
        ) STORED,
        inserted_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (namespace, generation, document_id, ordinal),
        CHECK (vector_dims(embedding) = embedding_dim),
        FOREIGN KEY (namespace, document_id) REFERENCES ragsage_documents (namespace, id)
            ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED
    );

CREATE INDEX IF NOT EXISTS ragsage_chunks_document
    ON ragsage_chunks (namespace, document_id, generation, ordinal);

CREATE INDEX IF NOT EXISTS ragsage_chunks_lexical ON ragsage_chunks USING gin (lexical);

CREATE INDEX IF NOT EXISTS ragsage_chunks_embedding_{{embedding_dim}} ON ragsage_chunks USING hnsw ((embedding::vector({{embedding_dim}})) vector_cosine_ops) WITH (m = {{hnsw_m}}, ef_construction = {{hnsw_ef_construction}}) WHERE embedding_dim = {{embedding_dim}};

GRANT USAGE ON SCHEMA public TO "{{app_role}}";

ALTER TABLE ragsage_generations ENABLE ROW LEVEL SECURITY;

ALTER TABLE ragsage_generations FORCE ROW LEVEL SECURITY;

DROP POLICY IF EXISTS ragsage_generations_namespace ON ragsage_generations;

CREATE POLICY ragsage_generations_namespace ON ragsage_generations USING (namespace = current_setting('{{isolation_setting}}', true)) WITH CHECK (namespace = current_setting('{{isolation_setting}}', true));

GRANT SELECT, INSERT, UPDATE, DELETE ON ragsage_generations TO "{{app_role}}";

ALTER TABLE ragsage_documents ENABLE ROW LEVEL SECURITY;

ALTER TABLE ragsage_documents FORCE ROW LEVEL SECURITY;

DROP POLICY IF EXISTS ragsage_documents_namespace ON ragsage_documents;

CREATE POLICY ragsage_documents_namespace ON ragsage_documents USING (namespace = current_setting('{{isolation_setting}}', true)) WITH CHECK (namespace = current_setting('{{isolation_setting}}', true));

GRANT SELECT, INSERT, UPDATE, DELETE ON ragsage_documents TO "{{app_role}}";

ALTER TABLE ragsage_chunks ENABLE ROW LEVEL SECURITY;

ALTER TABLE ragsage_chunks FORCE ROW LEVEL SECURITY;

DROP POLICY IF EXISTS ragsage_chunks_namespace ON ragsage_chunks;

CREATE POLICY ragsage_chunks_namespace ON ragsage_chunks USING (namespace = current_setting('{{isolation_setting}}', true)) WITH CHECK (namespace = current_setting('{{isolation_setting}}', true));

GRANT SELECT, INSERT, UPDATE, DELETE ON ragsage_chunks TO "{{app_role}}";
