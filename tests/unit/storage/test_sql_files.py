"""The schema's SQL files: complete, validated where configured, each function written once."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragsage.adapters.postgres import PostgresConfig
from ragsage.adapters.postgres.dense_function import dense_function_statements
from ragsage.adapters.postgres.migrations import (
    LATEST_VERSION,
    MIGRATIONS,
    function_statements,
    migration_statements,
)
from ragsage.adapters.postgres.rows import CHUNK_COLUMNS
from ragsage.adapters.postgres.sql_files import (
    config_values,
    render,
    requirement,
    split_statements,
    sql_files,
    sql_root,
)
from ragsage.core.errors import ConfigurationError

CONFIG = PostgresConfig(
    dsn="postgresql://owner@db/rag",
    app_role="rag_reader",
    isolation_variable="rag.tenant",
    text_search_config="simple",
    embedding_dim=384,
    hnsw_m=24,
    hnsw_ef_construction=80,
)
_DEFINES = re.compile(r"CREATE (?:OR REPLACE )?FUNCTION (\w+)\(")


def _every_file() -> list[str]:
    root = sql_root()
    names = ["bootstrap.sql", "nearest.sql"]
    names += [f"migrations/{f.name}" for f in sql_files("migrations")]
    names += [f"functions/{f.name}" for f in sql_files("functions")]
    assert all(root.joinpath(name).is_file() for name in names)
    return names


def test_every_statement_renders_with_the_configured_values_and_no_placeholder_left() -> None:
    statements = [*migration_statements(CONFIG), *dense_function_statements(CONFIG, 768)]
    joined = "\n".join(statements)
    assert "{{" not in joined and "}}" not in joined.replace("'{}'", "")
    assert all(statement.strip() for statement in statements)
    assert "to_tsvector('simple'::regconfig" in joined
    assert "current_setting('rag.tenant', true)" in joined
    assert 'TO "rag_reader"' in joined
    assert "WITH (m = 24, ef_construction = 80) WHERE embedding_dim = 384" in joined
    assert "ragsage_nearest_768(" in joined
    assert "english" not in joined and "ragsage_app" not in joined


def test_a_placeholder_without_a_value_is_an_error_naming_the_file() -> None:
    with pytest.raises(
        ValueError, match=r"0099_x\.sql: no value for the placeholder \{\{owner\}\}"
    ):
        render("GRANT ALL TO {{owner}}", config_values(CONFIG), source="0099_x.sql")


@pytest.mark.parametrize(
    "field, value",
    [
        ("app_role", 'reader"; DROP TABLE ragsage_chunks; --'),
        ("text_search_config", "english'::regconfig"),
        ("isolation_variable", "no_dot"),
        ("hnsw_m", 1000),
    ],
)
def test_configured_values_are_validated_before_they_reach_sql(field: str, value: object) -> None:
    with pytest.raises(ConfigurationError):
        PostgresConfig(dsn="postgresql://owner@db/rag", **{field: value})  # type: ignore[arg-type]


def test_each_function_is_defined_in_one_file_only() -> None:
    defined: dict[str, list[str]] = {}
    for name in _every_file():
        for function in _DEFINES.findall(sql_root().joinpath(name).read_text()):
            defined.setdefault(function, []).append(name)
    assert {f: files for f, files in defined.items() if len(files) > 1} == {}
    in_steps = {f for f, files in defined.items() if files[0].startswith("migrations/")}
    # A function a stored column or an index is computed with belongs to its step.
    assert in_steps == {"ragsage_identifier_words", "ragsage_readers", "ragsage_keyword_key"}
    # Kept for servers older than migration 19, as a call of the function that replaced it.
    wrapper = sql_root().joinpath("functions/lexical_search.sql").read_text()
    assert "FROM ragsage_keyword_search(" in wrapper and "ts_rank" not in wrapper


def test_function_files_say_which_version_they_need_and_the_latest_holds_them_all() -> None:
    needs = {f.name: requirement(f) for f in sql_files("functions")}
    assert needs and all(1 <= need <= LATEST_VERSION for need in needs.values())
    everything = function_statements(CONFIG, version=LATEST_VERSION)
    assert sum(1 for s in everything if _DEFINES.match(s)) == len(needs)
    assert function_statements(CONFIG, version=1) == ()  # nothing exists to run them on yet


def test_steps_are_numbered_and_described() -> None:
    assert [m.version for m in MIGRATIONS] == list(range(1, LATEST_VERSION + 1))
    assert all(m.description and not m.description.endswith(".") for m in MIGRATIONS)
    assert LATEST_VERSION >= 20


def test_constants_the_sql_spells_agree_with_the_python_that_reads_alike() -> None:
    functions = sql_root().joinpath("functions")
    nearest = sql_root().joinpath("nearest.sql").read_text()
    columns = re.sub(r"\s+", " ", CHUNK_COLUMNS)
    assert columns in re.sub(r"\s+", " ", nearest)
    keyword = re.sub(r"\s+", " ", functions.joinpath("keyword_search.sql").read_text())
    assert f"SELECT {columns} FROM ragsage_chunks c WHERE c.ctid = r.at" in keyword


def test_semicolons_in_quotes_bodies_and_comments_do_not_split() -> None:
    sql = """-- a file header; with a semicolon
CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $fn$
BEGIN
    RAISE NOTICE 'one; two';  -- inside the body
    RETURN 1;
END $fn$;

COMMENT ON TABLE t IS 'it''s; fine';
SELECT "odd;name" FROM t; -- trailing
-- only a comment; nothing to run
"""
    assert split_statements(sql) == [
        "CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $fn$\nBEGIN\n"
        "    RAISE NOTICE 'one; two';  -- inside the body\n    RETURN 1;\nEND $fn$",
        "COMMENT ON TABLE t IS 'it''s; fine'",
        'SELECT "odd;name" FROM t',
    ]


_TEXT = st.text(alphabet=st.sampled_from("ab ;'$-\n"), max_size=20)


@given(st.lists(st.tuples(_TEXT, _TEXT), min_size=1, max_size=6))
def test_statements_split_back_into_what_was_joined(parts: list[tuple[str, str]]) -> None:
    def quoted(value: str) -> str:
        return "'" + value.replace("'", "''") + "'"

    def body(value: str) -> str:
        return "$fn$" + value.replace("$fn$", "") + "$fn$"

    statements = [f"SELECT {quoted(a)}, {body(b)}" for a, b in parts]
    assert split_statements(";\n".join(statements) + ";\n") == statements


def test_block_comments_escape_strings_and_dollar_names_are_read_as_postgres_reads_them() -> None:
    sql = "SELECT 1 /* a; /* nested; */ b; */; SELECT E'it\\'s; fine'; SELECT price$usd$ FROM t;"
    assert split_statements(sql) == [
        "SELECT 1 /* a; /* nested; */ b; */",
        "SELECT E'it\\'s; fine'",
        "SELECT price$usd$ FROM t",
    ]


def test_a_placeholder_written_otherwise_is_an_error_not_left_in_the_sql() -> None:
    with pytest.raises(ValueError, match="not written"):
        render("GRANT ALL TO {{ app_role }}", config_values(CONFIG), source="0099_x.sql")


@pytest.mark.parametrize(
    "broken", ["SELECT 'open", "DO $x$ BEGIN END", 'SELECT "open', "SELECT 1 /* open"]
)
def test_an_unterminated_quote_is_an_error(broken: str) -> None:
    with pytest.raises(ValueError, match="unterminated"):
        split_statements(broken)
