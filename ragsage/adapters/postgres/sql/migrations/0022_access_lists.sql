-- Migration 22: access lists: who inside a namespace may read each document, enforced by the policies.
--
-- Function bodies are not kept here: functions/find_api_key.sql, keyword_search.sql,
-- lexical_search.sql, upload_room.sql, content_kept.sql and forget_content.sql hold
-- the current ones.
--
-- A document's `access` is a set of principal names (`group:sales`); empty,
-- the whole namespace reads it, as before.  The list is copied onto every row
-- that holds the document's content or derives from it (its chunks of every
-- generation, its jobs), because a policy may read only the row it guards: no
-- subquery, no function that reads a table (a distributed Postgres refuses
-- them).  A session carries its principals beside its namespace, in the
-- transaction-local setting `{{principals_setting}}`: `*` for a session bound
-- to no principal (workers, the CLI, unbound keys), the names separated by
-- commas for a bound key, and empty or unset (a forgotten preamble) for
-- nothing but open documents, in a namespace that the unset namespace setting
-- already makes empty.
--
-- A bound session reads a row whose list is empty or shares a principal with
-- it, and writes only rows it could read, before and after (the API decides
-- which lists a bound key may give: a non-empty subset of its principals).  Rows shared by
-- content hash (blobs, stored pages) cannot say whose they are, since two
-- documents with different lists may hold the same bytes: only a session bound
-- to no principal reads them; a bound one may add them, and its deletions and
-- quota counts go through the privileged functions, which read them whole.
-- Term statistics are namespace-wide counts of words: a bound session reads
-- them only through the search functions, which use them to weigh terms.

ALTER TABLE ragsage_documents ADD COLUMN IF NOT EXISTS access text[] NOT NULL DEFAULT '{}';

ALTER TABLE ragsage_chunks ADD COLUMN IF NOT EXISTS access text[] NOT NULL DEFAULT '{}';

ALTER TABLE ragsage_jobs ADD COLUMN IF NOT EXISTS access text[] NOT NULL DEFAULT '{}';

COMMENT ON COLUMN ragsage_documents.access IS 'principals who may read the document; empty: the whole namespace';

COMMENT ON COLUMN ragsage_chunks.access IS 'the document''s access list, copied so the policy reads only this row';

COMMENT ON COLUMN ragsage_jobs.access IS 'the document''s access list, copied so the policy reads only this row';

ALTER TABLE ragsage_api_keys ADD COLUMN IF NOT EXISTS principals text[] NOT NULL DEFAULT '{}';

ALTER TABLE ragsage_api_keys ADD CONSTRAINT ragsage_api_keys_admin_unbound CHECK (role <> 'admin' OR principals = '{}');

COMMENT ON COLUMN ragsage_api_keys.principals IS 'a bound key reads only documents open to the namespace or listing one of these';

DROP POLICY IF EXISTS ragsage_documents_namespace ON ragsage_documents;

CREATE POLICY ragsage_documents_namespace ON ragsage_documents USING (namespace = current_setting('{{isolation_setting}}', true) AND (current_setting('{{principals_setting}}', true) = '*' OR access = '{}' OR access && string_to_array(current_setting('{{principals_setting}}', true), ','))) WITH CHECK (namespace = current_setting('{{isolation_setting}}', true) AND (current_setting('{{principals_setting}}', true) = '*' OR access = '{}' OR access && string_to_array(current_setting('{{principals_setting}}', true), ',')));

DROP POLICY IF EXISTS ragsage_chunks_namespace ON ragsage_chunks;

CREATE POLICY ragsage_chunks_namespace ON ragsage_chunks USING (namespace = current_setting('{{isolation_setting}}', true) AND (current_setting('{{principals_setting}}', true) = '*' OR access = '{}' OR access && string_to_array(current_setting('{{principals_setting}}', true), ','))) WITH CHECK (namespace = current_setting('{{isolation_setting}}', true) AND (current_setting('{{principals_setting}}', true) = '*' OR access = '{}' OR access && string_to_array(current_setting('{{principals_setting}}', true), ',')));

DROP POLICY IF EXISTS ragsage_jobs_namespace ON ragsage_jobs;

CREATE POLICY ragsage_jobs_namespace ON ragsage_jobs USING (namespace = current_setting('{{isolation_setting}}', true) AND (current_setting('{{principals_setting}}', true) = '*' OR access = '{}' OR access && string_to_array(current_setting('{{principals_setting}}', true), ','))) WITH CHECK (namespace = current_setting('{{isolation_setting}}', true) AND (current_setting('{{principals_setting}}', true) = '*' OR access = '{}' OR access && string_to_array(current_setting('{{principals_setting}}', true), ',')));

DROP POLICY IF EXISTS ragsage_blobs_namespace ON ragsage_blobs;

CREATE POLICY ragsage_blobs_namespace ON ragsage_blobs USING (namespace = current_setting('{{isolation_setting}}', true) AND current_setting('{{principals_setting}}', true) = '*') WITH CHECK (namespace = current_setting('{{isolation_setting}}', true));

DROP POLICY IF EXISTS ragsage_pages_namespace ON ragsage_pages;

CREATE POLICY ragsage_pages_namespace ON ragsage_pages USING (namespace = current_setting('{{isolation_setting}}', true) AND current_setting('{{principals_setting}}', true) = '*') WITH CHECK (namespace = current_setting('{{isolation_setting}}', true));

DROP POLICY IF EXISTS ragsage_term_stats_namespace ON ragsage_term_stats;

CREATE POLICY ragsage_term_stats_namespace ON ragsage_term_stats FOR SELECT TO "{{app_role}}" USING (namespace = current_setting('{{isolation_setting}}', true) AND current_setting('{{principals_setting}}', true) = '*');

DROP POLICY IF EXISTS ragsage_term_stats_forget ON ragsage_term_stats;

CREATE POLICY ragsage_term_stats_forget ON ragsage_term_stats FOR DELETE TO "{{app_role}}" USING (namespace = current_setting('{{isolation_setting}}', true) AND current_setting('{{principals_setting}}', true) = '*');

-- A bound session's dense search ranks the chunks it may read exactly when they are
-- few (functions/readable_nearest.sql), which needs them found without reading the
-- namespace: each chunk's readers as "namespace principal" (or "namespace *" when
-- the list is empty), indexed.  The policies never name this expression, so no
-- plan of an unbound session is drawn to the index.
CREATE OR REPLACE FUNCTION ragsage_readers(ns text, access text[]) RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
        SELECT CASE WHEN cardinality(access) = 0 THEN ARRAY[ns || ' *']
            ELSE string_to_array(ns || ' ' || array_to_string(access, ',' || ns || ' '), ',') END
    $$;

CREATE INDEX IF NOT EXISTS ragsage_chunks_readers ON ragsage_chunks USING gin (ragsage_readers(namespace, access));

-- The key lookup now returns the key's principals: a new result type.
DROP FUNCTION IF EXISTS ragsage_find_api_key(text);

-- The privileged helpers of a bound session read the shared rows whole: the
-- stored bytes a quota counts, and whether a deletion leaves bytes unused.
GRANT SELECT, DELETE ON ragsage_blobs, ragsage_pages TO "ragsage_system";

DROP POLICY IF EXISTS ragsage_blobs_system ON ragsage_blobs;

CREATE POLICY ragsage_blobs_system ON ragsage_blobs FOR SELECT TO "ragsage_system" USING (true);

DROP POLICY IF EXISTS ragsage_blobs_system_forget ON ragsage_blobs;

CREATE POLICY ragsage_blobs_system_forget ON ragsage_blobs FOR DELETE TO "ragsage_system" USING (true);

DROP POLICY IF EXISTS ragsage_pages_system ON ragsage_pages;

CREATE POLICY ragsage_pages_system ON ragsage_pages FOR SELECT TO "ragsage_system" USING (true);

DROP POLICY IF EXISTS ragsage_pages_system_forget ON ragsage_pages;

CREATE POLICY ragsage_pages_system_forget ON ragsage_pages FOR DELETE TO "ragsage_system" USING (true);
