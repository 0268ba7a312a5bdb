-- requires: 13

CREATE OR REPLACE FUNCTION ragsage_term_counts(
        gen integer, wanted text[], cap integer)
    RETURNS TABLE (term text, chunks bigint)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp AS $fn$
    #variable_conflict use_column
    DECLARE
        ns text := current_setting('{{isolation_setting}}', true);
        missing text[];
        one text;
        found bigint;
    BEGIN
        IF ns IS NULL OR ns = '' OR gen IS NULL THEN RETURN; END IF;
        SELECT array_agg(w.t ORDER BY w.t) INTO missing FROM unnest(wanted) AS w(t)
            WHERE NOT EXISTS (SELECT 1 FROM ragsage_term_stats s
                WHERE s.namespace = ns AND s.generation = gen AND s.term = w.t
                AND (s.chunks < s.cap OR s.cap >= cap)
                AND s.counted_at > now() - make_interval(secs => 600));
        FOREACH one IN ARRAY coalesce(missing, '{}') LOOP
            IF one = '' THEN
                SELECT count(*) INTO found FROM (SELECT 1 FROM ragsage_chunks c
                    WHERE c.namespace = ns AND c.generation = gen LIMIT cap) r;
            ELSE
                EXECUTE 'SELECT count(*) FROM (SELECT 1 FROM ragsage_chunks c '
                    'WHERE c.namespace = $1 AND c.generation = $2 AND c.lexical @@ $3 '
                    'LIMIT $4) r'
                    INTO found USING ns, gen, quote_literal(one)::tsquery, cap;
            END IF;
            INSERT INTO ragsage_term_stats AS s (namespace, generation, term, chunks, cap)
                VALUES (ns, gen, one, found, cap)
                ON CONFLICT (namespace, generation, term) DO UPDATE
                SET chunks = EXCLUDED.chunks, cap = EXCLUDED.cap, counted_at = now();
        END LOOP;
        RETURN QUERY SELECT w.t, least(s.chunks, cap::bigint) FROM unnest(wanted) AS w(t)
            JOIN ragsage_term_stats s
            ON s.namespace = ns AND s.generation = gen AND s.term = w.t;
    END $fn$;

ALTER FUNCTION ragsage_term_counts(integer, text[], integer) OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_term_counts(integer, text[], integer) FROM PUBLIC;

GRANT EXECUTE ON FUNCTION ragsage_term_counts(integer, text[], integer) TO "{{app_role}}";
