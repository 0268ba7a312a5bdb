-- requires: 31
-- Migration 19's keyword search function: migration 16's ranking with a plan kept per backend.
--
-- Every earlier keyword function assembled its final statement as text and ran
-- it with `EXECUTE`, because the ranking expression names each query term.
-- `EXECUTE` parses and plans on every call: on 242 real pages that was about
-- 0.9 of the 3 ms the function spent.  This one writes the statement once, with
-- a fixed number of term slots, so PL/pgSQL prepares it on a backend's first
-- search and runs the kept plan after that (`plan_cache_mode` is forced to
-- the generic plan, which the ranking needs no custom plan for).  The rank,
-- candidates and phrase bonus are the ones migration 16 computed, term for
-- term; only the order in which a rank's terms are added differs, which moves
-- no ranking a `real` can tell apart.
--
-- It reads chunks as `ragsage_system`, outside the policies, so it applies
-- their rule itself (migration 22): the caller's namespace, and a chunk only if
-- the caller is bound to no principal, the chunk's list is empty, or the list
-- shares one of the caller's principals.  Term weights still count the whole
-- namespace (docs/tenants.md, "Access lists").
--
-- Since migration 29 the term counts are kept as chunks are written
-- (functions/count_terms.sql): the function reads them and writes nothing, so a
-- hot standby can run it.  Since 31 it finds candidates through the index keyed
-- by namespace: each match asks for the namespace's own lexeme too (`mine_key`).
-- Since 34 a question holding a snake_case name is split like one holding a
-- dotted or camelCase name, through ragsage_name_words (migration 34).

CREATE OR REPLACE FUNCTION ragsage_keyword_search(
        query_text text, with_syntax boolean, k integer, common_rows integer,
        sample_rows integer, document_ids text[], sources text[], metadata jsonb,
        created_after timestamptz, created_before timestamptz,
        weighted boolean, target_generation integer, carried integer)
    RETURNS TABLE (document_id text, ordinal integer, chunk_text text,
        embed_text text, heading_path text[], page_numbers integer[],
        chunk_metadata jsonb, source text, created_at timestamptz, start_char integer,
        end_char integer, rank real)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = public, pg_temp SET plan_cache_mode = force_generic_plan AS $fn$
    #variable_conflict use_column
    DECLARE
        ns text := current_setting('{{isolation_setting}}', true);
        mine_key tsquery;
        mine text := current_setting('{{principals_setting}}', true);
        everyone boolean := coalesce(mine = '*', false);
        readers text[] := coalesce(string_to_array(mine, ','), '{}');
        gen integer;
        terms text[];
        rarest text;
        whole tsquery;
        hits bigint;
        candidates tsquery;
        ranking tsquery;
        phrase tsquery;
        held tsquery;
        plain boolean := true;
        limit_rows integer;
        total double precision := 10 * (common_rows + 1);
        q1 tsquery;
        w1 double precision;
        q2 tsquery;
        w2 double precision;
        q3 tsquery;
        w3 double precision;
        q4 tsquery;
        w4 double precision;
        q5 tsquery;
        w5 double precision;
        q6 tsquery;
        w6 double precision;
        q7 tsquery;
        w7 double precision;
        q8 tsquery;
        w8 double precision;
        q9 tsquery;
        w9 double precision;
        q10 tsquery;
        w10 double precision;
        q11 tsquery;
        w11 double precision;
        q12 tsquery;
        w12 double precision;
        q13 tsquery;
        w13 double precision;
        q14 tsquery;
        w14 double precision;
        q15 tsquery;
        w15 double precision;
        q16 tsquery;
        w16 double precision;
        q17 tsquery;
        w17 double precision;
        q18 tsquery;
        w18 double precision;
        q19 tsquery;
        w19 double precision;
        q20 tsquery;
        w20 double precision;
        q21 tsquery;
        w21 double precision;
        q22 tsquery;
        w22 double precision;
        q23 tsquery;
        w23 double precision;
        q24 tsquery;
        w24 double precision;
        q25 tsquery;
        w25 double precision;
        q26 tsquery;
        w26 double precision;
        q27 tsquery;
        w27 double precision;
        q28 tsquery;
        w28 double precision;
        q29 tsquery;
        w29 double precision;
        q30 tsquery;
        w30 double precision;
        q31 tsquery;
        w31 double precision;
        q32 tsquery;
        w32 double precision;
    BEGIN
        IF ns IS NULL OR ns = '' THEN RETURN; END IF;
        mine_key := quote_literal(' ' || ns)::tsquery;
        -- The generation, the phrase and the terms in one statement.  Two
        -- terms or more make a phrase (three nodes): one word is just the word.
        SELECT g.id, CASE WHEN numnode(p.phrase) >= 3 THEN p.phrase END,
            CASE WHEN NOT with_syntax THEN (SELECT (array_agg(DISTINCT t ORDER BY t))[
                1:32] FROM unnest(tsvector_to_array(to_tsvector(
                    '{{tsconfig}}'::regconfig, CASE WHEN query_text ~ '[A-Za-z0-9_][./:]+[A-Za-z_]|[a-z][A-Z]|[A-Z][A-Z][a-z]|[A-Za-z0-9]_+[A-Za-z0-9]'
                    THEN query_text || ' ' || ragsage_name_words(query_text)
                    ELSE query_text END))) t) END
            INTO gen, phrase, terms
            FROM ragsage_generations g,
                phraseto_tsquery('{{tsconfig}}'::regconfig, query_text) AS p(phrase)
            WHERE g.namespace = ns AND CASE WHEN target_generation IS NULL
                THEN g.state = 'active'
                ELSE g.id = target_generation AND g.state IN ('active', 'building') END;
        IF gen IS NULL THEN RETURN; END IF;
        IF with_syntax THEN
            candidates := websearch_to_tsquery('{{tsconfig}}'::regconfig, query_text);
            ranking := candidates;
        ELSE
            IF terms IS NULL THEN RETURN; END IF;
            -- One read of the counts gives every weight, the ranking query
            -- and the candidates: the rarest term always, then the next
            -- rarest while all their chunks stay within sample_rows.
            -- LATERAL keeps each term to probes of the two tables' keys:
            -- joined plainly, a small statistics table was read whole.
            WITH s AS (SELECT w.t, least(coalesce(c.chunks, 0), common_rows + 1) AS hits
                FROM unnest(terms) AS w(t) LEFT JOIN LATERAL (SELECT sum(x.chunks) AS chunks
                    FROM (SELECT c.chunks FROM ragsage_term_stats c
                        WHERE c.namespace = ns AND c.generation = gen AND c.term = w.t
                        UNION ALL
                        SELECT p.chunks FROM ragsage_term_changes p
                        WHERE p.namespace = ns AND p.generation = gen AND p.term = w.t) x
                    ) c ON true),
            a AS (SELECT array_agg(quote_literal(s.t)::tsquery ORDER BY s.t)
                    FILTER (WHERE s.hits > 0) AS q,
                array_agg(ln(1.0 + (total - s.hits + 0.5) / (s.hits + 0.5))
                    ORDER BY s.t) FILTER (WHERE s.hits > 0) AS w
                FROM s),
            -- Terms by rarity: the rarest, and the rare ones that fit.
            r AS (SELECT string_agg(CASE WHEN x.n <= common_rows AND (x.before = 0
                        OR x.before + x.n <= sample_rows) THEN quote_literal(x.t)
                        END, ' | ' ORDER BY x.n, x.t)::tsquery AS rare,
                    (array_agg(x.t ORDER BY x.n, x.t))[1] AS rarest
                FROM (SELECT s.t, s.hits AS n,
                        sum(s.hits) OVER (ORDER BY s.hits, s.t) - s.hits AS before
                    FROM s) x)
            SELECT r.rarest, r.rare, a.q[1], a.w[1], a.q[2], a.w[2], a.q[3], a.w[3], a.q[4], a.w[4], a.q[5], a.w[5], a.q[6], a.w[6], a.q[7], a.w[7], a.q[8], a.w[8], a.q[9], a.w[9], a.q[10], a.w[10], a.q[11], a.w[11], a.q[12], a.w[12], a.q[13], a.w[13], a.q[14], a.w[14], a.q[15], a.w[15], a.q[16], a.w[16], a.q[17], a.w[17], a.q[18], a.w[18], a.q[19], a.w[19], a.q[20], a.w[20], a.q[21], a.w[21], a.q[22], a.w[22], a.q[23], a.w[23], a.q[24], a.w[24], a.q[25], a.w[25], a.q[26], a.w[26], a.q[27], a.w[27], a.q[28], a.w[28], a.q[29], a.w[29], a.q[30], a.w[30], a.q[31], a.w[31], a.q[32], a.w[32]
            INTO rarest, candidates, q1, w1, q2, w2, q3, w3, q4, w4, q5, w5, q6, w6, q7, w7, q8, w8, q9, w9, q10, w10, q11, w11, q12, w12, q13, w13, q14, w14, q15, w15, q16, w16, q17, w17, q18, w18, q19, w19, q20, w20, q21, w21, q22, w22, q23, w23, q24, w24, q25, w25, q26, w26, q27, w27, q28, w28, q29, w29, q30, w30, q31, w31, q32, w32
            FROM a, r;
            plain := NOT weighted OR q1 IS NULL;
            IF plain THEN
                ranking := array_to_string(
                    ARRAY(SELECT quote_literal(t) FROM unnest(terms) t), ' | ')::tsquery;
            END IF;
            IF candidates IS NULL THEN
                whole := array_to_string(
                    ARRAY(SELECT quote_literal(t) FROM unnest(terms) t), ' & ')::tsquery;
                -- Every term is common: the chunks holding all of them when
                -- there are enough, else the rarest term's, a sample either
                -- way; and the chunks the sample could miss are held.
                SELECT count(*) INTO hits FROM (SELECT 1 FROM ragsage_chunks c
                    WHERE (c.namespace || '') = ns AND c.generation = gen AND (everyone OR c.access = '{}' OR c.access && readers) AND ragsage_keyword_key(c.namespace, c.lexical) @@ (whole && mine_key) LIMIT k) s;
                IF hits < k THEN
                    held := whole;
                    candidates := quote_literal(rarest)::tsquery;
                ELSE
                    held := phrase;
                    candidates := whole;
                END IF;
                limit_rows := sample_rows;
            END IF;
        END IF;
        IF candidates IS NULL OR numnode(candidates) = 0 THEN RETURN; END IF;
        -- Two statements, so the usual search sorts no union away.
        IF held IS NULL THEN
        RETURN QUERY
            SELECT c.document_id, c.ordinal,
                CASE WHEN r.place <= carried THEN c.text END, CASE WHEN r.place <= carried THEN c.embed_text END, CASE WHEN r.place <= carried THEN c.heading_path END, CASE WHEN r.place <= carried THEN c.page_numbers END, CASE WHEN r.place <= carried THEN c.metadata END, CASE WHEN r.place <= carried THEN c.source END, CASE WHEN r.place <= carried THEN c.created_at END, CASE WHEN r.place <= carried THEN c.start_char END, CASE WHEN r.place <= carried THEN c.end_char END,
                r.rank
            FROM (SELECT t.at, t.document_id, t.ordinal, t.rank, row_number() OVER (
                    ORDER BY t.rank DESC, t.document_id, t.ordinal) AS place
                FROM (SELECT t.at, t.document_id, t.ordinal, (t.base * CASE
                        WHEN phrase IS NOT NULL AND t.lexical @@ phrase
                        THEN 2.0 ELSE 1 END)::real AS rank
                    FROM (SELECT h.at, h.document_id, h.ordinal, h.lexical,
                            CASE WHEN plain THEN ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, ranking, 1)
                            ELSE coalesce(w1 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q1, 1), 0)
                                + coalesce(w2 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q2, 1), 0)
                                + coalesce(w3 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q3, 1), 0)
                                + coalesce(w4 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q4, 1), 0)
                                + CASE WHEN q5 IS NULL THEN 0 ELSE
                                coalesce(w5 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q5, 1), 0)
                                + coalesce(w6 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q6, 1), 0)
                                + coalesce(w7 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q7, 1), 0)
                                + coalesce(w8 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q8, 1), 0)
                                + CASE WHEN q9 IS NULL THEN 0 ELSE
                                coalesce(w9 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q9, 1), 0)
                                + coalesce(w10 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q10, 1), 0)
                                + coalesce(w11 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q11, 1), 0)
                                + coalesce(w12 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q12, 1), 0)
                                + CASE WHEN q13 IS NULL THEN 0 ELSE
                                coalesce(w13 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q13, 1), 0)
                                + coalesce(w14 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q14, 1), 0)
                                + coalesce(w15 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q15, 1), 0)
                                + coalesce(w16 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q16, 1), 0)
                                + CASE WHEN q17 IS NULL THEN 0 ELSE
                                coalesce(w17 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q17, 1), 0)
                                + coalesce(w18 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q18, 1), 0)
                                + coalesce(w19 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q19, 1), 0)
                                + coalesce(w20 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q20, 1), 0)
                                + CASE WHEN q21 IS NULL THEN 0 ELSE
                                coalesce(w21 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q21, 1), 0)
                                + coalesce(w22 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q22, 1), 0)
                                + coalesce(w23 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q23, 1), 0)
                                + coalesce(w24 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q24, 1), 0)
                                + CASE WHEN q25 IS NULL THEN 0 ELSE
                                coalesce(w25 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q25, 1), 0)
                                + coalesce(w26 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q26, 1), 0)
                                + coalesce(w27 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q27, 1), 0)
                                + coalesce(w28 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q28, 1), 0)
                                + CASE WHEN q29 IS NULL THEN 0 ELSE
                                coalesce(w29 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q29, 1), 0)
                                + coalesce(w30 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q30, 1), 0)
                                + coalesce(w31 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q31, 1), 0)
                                + coalesce(w32 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q32, 1), 0) END END END END END END END END AS base
    FROM (SELECT c.ctid AS at, c.document_id, c.ordinal, c.lexical FROM ragsage_chunks c WHERE (c.namespace || '') = ns AND c.generation = gen AND (everyone OR c.access = '{}' OR c.access && readers) AND ragsage_keyword_key(c.namespace, c.lexical) @@ (candidates && mine_key) AND (document_ids IS NULL OR c.document_id = ANY(document_ids)) AND (sources IS NULL OR c.source = ANY(sources)) AND (ragsage_keyword_search.metadata IS NULL OR c.metadata @> ragsage_keyword_search.metadata) AND (created_after IS NULL OR c.created_at >= created_after) AND (created_before IS NULL OR c.created_at <= created_before) LIMIT limit_rows) h
                        ORDER BY base DESC, h.document_id, h.ordinal LIMIT 2 * k) t
                    ORDER BY rank DESC, t.document_id, t.ordinal LIMIT k) t) r
            CROSS JOIN LATERAL (SELECT c.document_id, c.ordinal, c.text, c.embed_text, c.heading_path, c.page_numbers, c.metadata, c.source, c.created_at, c.start_char, c.end_char
                FROM ragsage_chunks c WHERE c.ctid = r.at AND (c.namespace || '') = ns LIMIT 1) c
            ORDER BY r.place;
        ELSE
        RETURN QUERY
            SELECT c.document_id, c.ordinal,
                CASE WHEN r.place <= carried THEN c.text END, CASE WHEN r.place <= carried THEN c.embed_text END, CASE WHEN r.place <= carried THEN c.heading_path END, CASE WHEN r.place <= carried THEN c.page_numbers END, CASE WHEN r.place <= carried THEN c.metadata END, CASE WHEN r.place <= carried THEN c.source END, CASE WHEN r.place <= carried THEN c.created_at END, CASE WHEN r.place <= carried THEN c.start_char END, CASE WHEN r.place <= carried THEN c.end_char END,
                r.rank
            FROM (SELECT t.at, t.document_id, t.ordinal, t.rank, row_number() OVER (
                    ORDER BY t.rank DESC, t.document_id, t.ordinal) AS place
                FROM (SELECT t.at, t.document_id, t.ordinal, (t.base * CASE
                        WHEN phrase IS NOT NULL AND t.lexical @@ phrase
                        THEN 2.0 ELSE 1 END)::real AS rank
                    FROM (SELECT h.at, h.document_id, h.ordinal, h.lexical,
                            CASE WHEN plain THEN ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, ranking, 1)
                            ELSE coalesce(w1 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q1, 1), 0)
                                + coalesce(w2 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q2, 1), 0)
                                + coalesce(w3 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q3, 1), 0)
                                + coalesce(w4 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q4, 1), 0)
                                + CASE WHEN q5 IS NULL THEN 0 ELSE
                                coalesce(w5 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q5, 1), 0)
                                + coalesce(w6 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q6, 1), 0)
                                + coalesce(w7 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q7, 1), 0)
                                + coalesce(w8 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q8, 1), 0)
                                + CASE WHEN q9 IS NULL THEN 0 ELSE
                                coalesce(w9 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q9, 1), 0)
                                + coalesce(w10 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q10, 1), 0)
                                + coalesce(w11 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q11, 1), 0)
                                + coalesce(w12 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q12, 1), 0)
                                + CASE WHEN q13 IS NULL THEN 0 ELSE
                                coalesce(w13 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q13, 1), 0)
                                + coalesce(w14 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q14, 1), 0)
                                + coalesce(w15 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q15, 1), 0)
                                + coalesce(w16 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q16, 1), 0)
                                + CASE WHEN q17 IS NULL THEN 0 ELSE
                                coalesce(w17 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q17, 1), 0)
                                + coalesce(w18 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q18, 1), 0)
                                + coalesce(w19 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q19, 1), 0)
                                + coalesce(w20 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q20, 1), 0)
                                + CASE WHEN q21 IS NULL THEN 0 ELSE
                                coalesce(w21 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q21, 1), 0)
                                + coalesce(w22 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q22, 1), 0)
                                + coalesce(w23 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q23, 1), 0)
                                + coalesce(w24 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q24, 1), 0)
                                + CASE WHEN q25 IS NULL THEN 0 ELSE
                                coalesce(w25 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q25, 1), 0)
                                + coalesce(w26 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q26, 1), 0)
                                + coalesce(w27 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q27, 1), 0)
                                + coalesce(w28 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q28, 1), 0)
                                + CASE WHEN q29 IS NULL THEN 0 ELSE
                                coalesce(w29 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q29, 1), 0)
                                + coalesce(w30 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q30, 1), 0)
                                + coalesce(w31 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q31, 1), 0)
                                + coalesce(w32 * ts_rank('{0.1, 0.2, 0.4, 0.1}', h.lexical, q32, 1), 0) END END END END END END END END AS base
    FROM ((SELECT c.ctid AS at, c.document_id, c.ordinal, c.lexical FROM ragsage_chunks c WHERE (c.namespace || '') = ns AND c.generation = gen AND (everyone OR c.access = '{}' OR c.access && readers) AND ragsage_keyword_key(c.namespace, c.lexical) @@ (candidates && mine_key) AND (document_ids IS NULL OR c.document_id = ANY(document_ids)) AND (sources IS NULL OR c.source = ANY(sources)) AND (ragsage_keyword_search.metadata IS NULL OR c.metadata @> ragsage_keyword_search.metadata) AND (created_after IS NULL OR c.created_at >= created_after) AND (created_before IS NULL OR c.created_at <= created_before) LIMIT limit_rows) UNION (SELECT c.ctid, c.document_id, c.ordinal, c.lexical FROM ragsage_chunks c WHERE (c.namespace || '') = ns AND c.generation = gen AND (everyone OR c.access = '{}' OR c.access && readers) AND ragsage_keyword_key(c.namespace, c.lexical) @@ (held && mine_key) AND (document_ids IS NULL OR c.document_id = ANY(document_ids)) AND (sources IS NULL OR c.source = ANY(sources)) AND (ragsage_keyword_search.metadata IS NULL OR c.metadata @> ragsage_keyword_search.metadata) AND (created_after IS NULL OR c.created_at >= created_after) AND (created_before IS NULL OR c.created_at <= created_before))) h
                        ORDER BY base DESC, h.document_id, h.ordinal LIMIT 2 * k) t
                    ORDER BY rank DESC, t.document_id, t.ordinal LIMIT k) t) r
            CROSS JOIN LATERAL (SELECT c.document_id, c.ordinal, c.text, c.embed_text, c.heading_path, c.page_numbers, c.metadata, c.source, c.created_at, c.start_char, c.end_char
                FROM ragsage_chunks c WHERE c.ctid = r.at AND (c.namespace || '') = ns LIMIT 1) c
            ORDER BY r.place;
        END IF;
    END $fn$;

ALTER FUNCTION ragsage_keyword_search(text, boolean, integer, integer, integer, text[], text[], jsonb, timestamptz, timestamptz, boolean, integer, integer) OWNER TO "ragsage_system";

REVOKE ALL ON FUNCTION ragsage_keyword_search(text, boolean, integer, integer, integer, text[], text[], jsonb, timestamptz, timestamptz, boolean, integer, integer) FROM PUBLIC;

GRANT EXECUTE ON FUNCTION ragsage_keyword_search(text, boolean, integer, integer, integer, text[], text[], jsonb, timestamptz, timestamptz, boolean, integer, integer) TO "{{app_role}}";
