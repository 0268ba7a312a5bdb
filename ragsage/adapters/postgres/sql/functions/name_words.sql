-- requires: 7

-- The words a text's code names add to the keyword index: migration 7's split
-- of dotted and camelCase names, then every snake_case name run together
-- (migration 34).  The writer's twin is ragsage.core.text.identifier_words; the
-- two must agree word for word (tests/integration/test_identifier_words.py).
CREATE OR REPLACE FUNCTION ragsage_name_words(t text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $fn$
    SELECT concat_ws(' ', nullif(ragsage_identifier_words(t), ''), nullif(
        (SELECT string_agg(lower(replace(n.name[1], '_', '')), ' ')
            FROM regexp_matches(t, '[A-Za-z0-9]+(?:[_]+[A-Za-z0-9]+)+', 'g') AS n(name)), ''))
    $fn$;
