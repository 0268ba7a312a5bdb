-- requires: 29

-- Keeps the keyword term counts of migration 29 as chunks are written: each
-- statement that inserts, deletes or changes chunk rows adds, per namespace,
-- generation and lexeme, the chunks it brought minus the chunks it took away
-- (the empty term counts the chunks themselves).  A trigger, not the engine's
-- writer, so every writer keeps them: deletes cascading from a document, a
-- worker of the previous version during an upgrade, an operator's own SQL.
-- Retired generations are counted too (a rollback makes one active again);
-- rows of a generation whose row is gone are not: a discarded generation's
-- row goes first, and its counts are deleted whole.
--
-- The namespace's fold lock is only ever tried: the writer holding it adds its
-- counts and every pending change into ragsage_term_stats; a writer that finds
-- it taken appends its counts under its own transaction's key in
-- ragsage_term_changes, touching no row another writer could hold.  The lock is
-- the transaction's, so a writer that folded keeps folding until it commits.
CREATE OR REPLACE FUNCTION ragsage_count_chunk_terms() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $fn$
    DECLARE
        ns text := coalesce(current_setting('{{isolation_setting}}', true), '');
        folding boolean;
        spaces text[];
        generations integer[];
        lexicals tsvector[];
        signs integer[];
    BEGIN
        IF TG_OP = 'INSERT' THEN
            SELECT array_agg(a.namespace), array_agg(a.generation), array_agg(a.lexical),
                    array_agg(1)
                INTO spaces, generations, lexicals, signs FROM added a;
        ELSIF TG_OP = 'DELETE' THEN
            SELECT array_agg(o.namespace), array_agg(o.generation), array_agg(o.lexical),
                    array_agg(-1)
                INTO spaces, generations, lexicals, signs FROM gone o;
        ELSE
            -- An update counts only rows whose keyword column or key changed:
            -- an access list copied onto a document's chunks moves no count.
            SELECT array_agg(r.namespace), array_agg(r.generation), array_agg(r.lexical),
                    array_agg(r.sign)
                INTO spaces, generations, lexicals, signs
                FROM added a FULL JOIN gone o
                    ON (a.namespace, a.generation, a.document_id, a.ordinal)
                        = (o.namespace, o.generation, o.document_id, o.ordinal)
                CROSS JOIN LATERAL (VALUES (a.namespace, a.generation, a.lexical, 1),
                    (o.namespace, o.generation, o.lexical, -1))
                    AS r(namespace, generation, lexical, sign)
                WHERE r.namespace IS NOT NULL
                    AND (a.namespace IS NULL OR o.namespace IS NULL
                        OR a.lexical IS DISTINCT FROM o.lexical);
        END IF;
        IF spaces IS NULL THEN RETURN NULL; END IF;
        folding := ns <> ''
            AND pg_try_advisory_xact_lock(hashtext('ragsage_term_stats'), hashtext(ns));
        WITH counted AS (SELECT r.namespace, r.generation, w.term, sum(r.sign) AS chunks
                FROM unnest(spaces, generations, lexicals, signs)
                    AS r(namespace, generation, lexical, sign),
                    unnest(coalesce(tsvector_to_array(r.lexical), '{}') || ARRAY['']) AS w(term)
                WHERE EXISTS (SELECT 1 FROM ragsage_generations g
                    WHERE g.namespace = r.namespace AND g.id = r.generation)
                GROUP BY 1, 2, 3 HAVING sum(r.sign) <> 0),
            pending AS (DELETE FROM ragsage_term_changes p WHERE folding AND p.namespace = ns
                RETURNING p.namespace, p.generation, p.term, p.chunks),
            folded AS (INSERT INTO ragsage_term_stats AS s (namespace, generation, term, chunks)
                SELECT x.namespace, x.generation, x.term, sum(x.chunks)
                FROM (SELECT * FROM counted c WHERE folding AND c.namespace = ns
                    UNION ALL SELECT * FROM pending) x
                GROUP BY 1, 2, 3 HAVING sum(x.chunks) <> 0
                ON CONFLICT (namespace, generation, term)
                DO UPDATE SET chunks = s.chunks + EXCLUDED.chunks)
        INSERT INTO ragsage_term_changes AS p (namespace, generation, term, batch, chunks)
            SELECT c.namespace, c.generation, c.term, txid_current(), c.chunks
            FROM counted c WHERE NOT (folding AND c.namespace = ns)
            ON CONFLICT (namespace, generation, term, batch)
            DO UPDATE SET chunks = p.chunks + EXCLUDED.chunks;
        RETURN NULL;
    END $fn$;

ALTER FUNCTION ragsage_count_chunk_terms() OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_count_chunk_terms() FROM PUBLIC;

CREATE OR REPLACE TRIGGER ragsage_chunks_terms_on_insert
    AFTER INSERT ON ragsage_chunks REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION ragsage_count_chunk_terms();

CREATE OR REPLACE TRIGGER ragsage_chunks_terms_on_delete
    AFTER DELETE ON ragsage_chunks REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION ragsage_count_chunk_terms();

CREATE OR REPLACE TRIGGER ragsage_chunks_terms_on_update
    AFTER UPDATE ON ragsage_chunks REFERENCING OLD TABLE AS gone NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION ragsage_count_chunk_terms();
