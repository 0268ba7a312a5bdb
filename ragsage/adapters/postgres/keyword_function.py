"""Migration 19's keyword search function: migration 16's ranking with a plan kept per backend.

Every earlier keyword function assembled its final statement as text and ran
it with ``EXECUTE``, because the ranking expression names each query term.
``EXECUTE`` parses and plans on every call: on 242 real pages that was about
0.9 of the 3 ms the function spent.  This one writes the statement once, with
a fixed number of term slots, so PL/pgSQL prepares it on a backend's first
search and runs the kept plan after that (``plan_cache_mode`` is forced to
the generic plan, which the ranking needs no custom plan for).  The rank,
candidates and phrase bonus are the ones migration 16 computed, term for
term; only the order in which a rank's terms are added differs, which moves
no ranking a ``real`` can tell apart.
"""

from __future__ import annotations

from ragsage.adapters.postgres.config import PostgresConfig, safe_identifier, safe_setting_name
from ragsage.adapters.postgres.rows import CHUNK_COLUMNS

# Query terms ranked; the function keeps the first this many (in term order),
# as every keyword function since migration 7 has.
TERM_SLOTS = 32
# Slots are added in blocks; a block whose first slot is empty ends the sum,
# so a ten-term query evaluates three blocks, not eight.
_BLOCK = 4
# ts_rank's weights for labels D, C, B, A (headings, A, count as body text, D; migration 7).
_WEIGHTS = "'{0.1, 0.2, 0.4, 0.1}'"

SIGNATURE = (
    "ragsage_keyword_search(text, boolean, integer, integer, integer, text[], text[], "
    "jsonb, timestamptz, timestamptz, boolean, integer, integer)"
)


def _slot(number: int) -> str:
    return f"coalesce(w{number} * ts_rank({_WEIGHTS}, h.lexical, q{number}, 1), 0)"


def _weighted_rank() -> str:
    """The sum of ``w_i * ts_rank(q_i)`` over the filled slots, block by block."""
    blocks = [
        " + ".join(_slot(first + offset) for offset in range(_BLOCK))
        for first in range(1, TERM_SLOTS + 1, _BLOCK)
    ]
    expression = blocks[-1]
    for index in range(len(blocks) - 2, -1, -1):
        following = index * _BLOCK + _BLOCK + 1
        expression = (
            f"{blocks[index]} + CASE WHEN q{following} IS NULL THEN 0 ELSE {expression} END"
        )
    return expression


# Arguments that share a name with a chunk column are qualified by the function's name.
_ARGUMENT = "ragsage_keyword_search."


_FILTERS = (
    "AND (document_ids IS NULL OR c.document_id = ANY(document_ids)) "
    "AND (sources IS NULL OR c.source = ANY(sources)) "
    f"AND ({_ARGUMENT}metadata IS NULL OR c.metadata @> {_ARGUMENT}metadata) "
    "AND (created_after IS NULL OR c.created_at >= created_after) "
    "AND (created_before IS NULL OR c.created_at <= created_before)"
)


# The namespace is compared as ``namespace || ''`` so that no plan can reach
# the candidates through the primary key: a generic plan does not know the
# namespace, and a table of many tenants makes that key look more selective
# than the keyword index, which would then read a whole big namespace.
_OWN_ROWS = "(c.namespace || '') = ns AND c.generation = gen"


# The chunk columns after the key, kept only for the first ``carried`` rows.
_CARRIED = ", ".join(
    f"CASE WHEN r.place <= carried THEN c.{column.strip()[2:]} END"
    for column in CHUNK_COLUMNS.split(",")[2:]
)


def _results(candidates_from: str, phrase_bonus: float) -> str:
    """The ranked rows, best first, from the candidate rows ``candidates_from`` yields as ``h``."""
    return f"""                RETURN QUERY
                    SELECT c.document_id, c.ordinal,
                        {_CARRIED},
                        r.rank
                    FROM (SELECT t.at, t.document_id, t.ordinal, t.rank, row_number() OVER (
                            ORDER BY t.rank DESC, t.document_id, t.ordinal) AS place
                        FROM (SELECT t.at, t.document_id, t.ordinal, (t.base * CASE
                                WHEN phrase IS NOT NULL AND t.lexical @@ phrase
                                THEN {float(phrase_bonus)!r} ELSE 1 END)::real AS rank
                            FROM (SELECT h.at, h.document_id, h.ordinal, h.lexical,
                                    CASE WHEN plain THEN ts_rank({_WEIGHTS}, h.lexical, ranking, 1)
                                    ELSE {_weighted_rank()} END AS base
{candidates_from}
                                ORDER BY base DESC, h.document_id, h.ordinal LIMIT 2 * k) t
                            ORDER BY rank DESC, t.document_id, t.ordinal LIMIT k) t) r
                    CROSS JOIN LATERAL (SELECT {CHUNK_COLUMNS}
                        FROM ragsage_chunks c WHERE c.ctid = r.at LIMIT 1) c
                    ORDER BY r.place;"""


# The sampled candidates; with ``held``, the rows the sample could have missed too.
_SAMPLED = (
    "(SELECT c.ctid AS at, c.document_id, c.ordinal, c.lexical FROM ragsage_chunks c "
    f"WHERE {_OWN_ROWS} AND c.lexical @@ candidates {_FILTERS} LIMIT limit_rows)"
)
_HELD = (
    "(SELECT c.ctid, c.document_id, c.ordinal, c.lexical FROM ragsage_chunks c "
    f"WHERE {_OWN_ROWS} AND c.lexical @@ held {_FILTERS})"
)


def keyword_search_statements(
    config: PostgresConfig,
    *,
    system_role: str,
    phrase_bonus: float,
    identifier_hint: str,
    lifetime: int,
) -> tuple[str, ...]:
    """The function, its owner and its one grant, to the app role."""
    tsconfig = safe_identifier(config.text_search_config)
    setting = safe_setting_name(config.isolation_variable)
    role = safe_identifier(config.app_role)
    slots = "\n".join(
        f"                q{n} tsquery;\n                w{n} double precision;"
        for n in range(1, TERM_SLOTS + 1)
    )
    sampled_only = _results(f"FROM {_SAMPLED} h", phrase_bonus)
    with_held = _results(f"FROM ({_SAMPLED} UNION {_HELD}) h", phrase_bonus)
    numbers = range(1, TERM_SLOTS + 1)
    slot_reads = ", ".join(f"a.q[{n}], a.w[{n}]" for n in numbers)
    slot_targets = ", ".join(f"q{n}, w{n}" for n in numbers)
    body = f"""CREATE FUNCTION ragsage_keyword_search(
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
                ns text := current_setting('{setting}', true);
                gen integer;
                terms text[];
                missing text[];
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
{slots}
            BEGIN
                IF ns IS NULL OR ns = '' THEN RETURN; END IF;
                -- The generation, the phrase and the terms in one statement.  Two
                -- terms or more make a phrase (three nodes): one word is just the word.
                SELECT g.id, CASE WHEN numnode(p.phrase) >= 3 THEN p.phrase END,
                    CASE WHEN NOT with_syntax THEN (SELECT (array_agg(DISTINCT t ORDER BY t))[
                        1:{TERM_SLOTS}] FROM unnest(tsvector_to_array(to_tsvector(
                            '{tsconfig}'::regconfig, CASE WHEN query_text ~ '{identifier_hint}'
                            THEN query_text || ' ' || ragsage_identifier_words(query_text)
                            ELSE query_text END))) t) END
                    INTO gen, phrase, terms
                    FROM ragsage_generations g,
                        phraseto_tsquery('{tsconfig}'::regconfig, query_text) AS p(phrase)
                    WHERE g.namespace = ns AND CASE WHEN target_generation IS NULL
                        THEN g.state = 'active'
                        ELSE g.id = target_generation AND g.state IN ('active', 'building') END;
                IF gen IS NULL THEN RETURN; END IF;
                IF with_syntax THEN
                    candidates := websearch_to_tsquery('{tsconfig}'::regconfig, query_text);
                    ranking := candidates;
                ELSE
                    IF terms IS NULL THEN RETURN; END IF;
                    -- One read of the cached counts gives every weight, the ranking
                    -- query and the candidates: the rarest term always, then the
                    -- next rarest while all their chunks stay within sample_rows.
                    -- Counts missing or stale are counted, and the read made again.
                    FOR attempt IN 1..2 LOOP
                        -- LATERAL and LIMIT keep each term to one probe of the key:
                        -- joined plainly, a small statistics table was read whole.
                        WITH s AS (SELECT w.t, least(c.chunks, common_rows + 1) AS hits,
                                c.term IS NOT NULL
                                AND (c.chunks < c.cap OR c.cap >= common_rows + 1)
                                AND c.counted_at > now() - make_interval(secs => {lifetime})
                                AS fresh
                            FROM unnest(terms) AS w(t) LEFT JOIN LATERAL (SELECT c.term,
                                    c.chunks, c.cap, c.counted_at FROM ragsage_term_stats c
                                WHERE c.namespace = ns AND c.generation = gen AND c.term = w.t
                                LIMIT 1) c ON true),
                        a AS (SELECT array_agg(s.t ORDER BY s.t) FILTER (WHERE NOT s.fresh)
                                AS missing,
                            array_agg(quote_literal(s.t)::tsquery ORDER BY s.t)
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
                                FROM s WHERE s.hits IS NOT NULL) x)
                        SELECT a.missing, r.rarest, r.rare, {slot_reads}
                        INTO missing, rarest, candidates, {slot_targets}
                        FROM a, r;
                        EXIT WHEN missing IS NULL OR attempt = 2;
                        PERFORM 1 FROM ragsage_term_counts(gen, missing, common_rows + 1);
                    END LOOP;
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
                            WHERE {_OWN_ROWS} AND c.lexical @@ whole LIMIT k) s;
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
{sampled_only}
                ELSE
{with_held}
                END IF;
            END $fn$"""
    return (
        f"DROP FUNCTION IF EXISTS {SIGNATURE}",
        body,
        f'ALTER FUNCTION {SIGNATURE} OWNER TO "{safe_identifier(system_role)}"',
        f"REVOKE ALL ON FUNCTION {SIGNATURE} FROM PUBLIC",
        f'GRANT EXECUTE ON FUNCTION {SIGNATURE} TO "{role}"',
    )
