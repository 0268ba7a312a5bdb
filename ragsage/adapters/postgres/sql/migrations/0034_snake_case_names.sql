-- Migration 34: a snake_case name is also a keyword of its own.
--
-- The text-search parser cuts `run_connecting` at its underscore, so a
-- question naming it matched every chunk that says "run" or "connecting" and
-- none better than the one defining it.  The identifier split (migration 7)
-- now ends with every snake_case name run together (`runconnecting`), one
-- rare word for the whole name, as `ThreadPoolExecutor` always was; the
-- writer's Python split (core.text.identifier_words) does the same.  The
-- keyword search function (functions/keyword_search.sql) now splits a
-- question that holds such a name too.  Chunks written before this step keep
-- their keyword column (their name parts still match); a re-index adds the
-- whole names.

CREATE OR REPLACE FUNCTION ragsage_identifier_words(t text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $fn$
    SELECT concat_ws(' ', nullif(camel.words, ''), nullif(snake.words, '')) FROM
    (SELECT coalesce(string_agg(lower(p), ' '), '') AS words FROM
        regexp_matches(t, '[A-Za-z_][A-Za-z0-9_]*(?:[./:]+[A-Za-z_][A-Za-z0-9_]*)+'
            '|[A-Za-z0-9]*[a-z][A-Z][A-Za-z0-9]*|[A-Z]+[A-Z][a-z][A-Za-z0-9]*', 'g') AS m(ident),
        LATERAL (
            SELECT s FROM regexp_split_to_table(m.ident[1], '[./:]+') s
                WHERE s <> '' AND s <> m.ident[1]
            UNION ALL
            SELECT c FROM regexp_split_to_table(m.ident[1], '[./:]+') s,
                LATERAL regexp_split_to_table(
                    regexp_replace(regexp_replace(s, '([A-Z]+)([A-Z][a-z])', '\1 \2', 'g'),
                        '([a-z0-9])([A-Z])', '\1 \2', 'g'), ' ') c
                WHERE s <> '' AND c <> s
        ) parts(p)) camel,
    (SELECT coalesce(string_agg(lower(replace(n.name[1], '_', '')), ' '), '') AS words
        FROM regexp_matches(t, '[A-Za-z0-9]+(?:[_]+[A-Za-z0-9]+)+', 'g') AS n(name)) snake
    $fn$;
