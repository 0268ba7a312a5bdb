"""Storage configuration and SQL assembly, checked without a database."""

from __future__ import annotations

import re

import pytest

from ragsage.adapters.postgres import (
    PostgresConfig,
    isolation_preamble,
    redact,
    safe_identifier,
    safe_setting_name,
)
from ragsage.core.errors import ConfigurationError
from ragsage.core.scopes import Scope

OWNER = "postgresql://owner:s3cret@db.internal:5432/rag"
APP = "postgresql://ragsage_app:app-pw@db.internal:5432/rag"


@pytest.mark.parametrize("name", ['x"; DROP TABLE t; --', "1abc", "a b", "", "a" * 64])
def test_unsafe_identifiers_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match="not a plain SQL identifier"):
        safe_identifier(name)


@pytest.mark.parametrize("name", ["namespace", "a.b.c", "a.", ".b", "a.b; --"])
def test_setting_names_must_be_prefix_dot_name(name: str) -> None:
    with pytest.raises(ValueError, match="prefix.name"):
        safe_setting_name(name)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"app_role": "bad role"}, "not a plain SQL identifier"),
        ({"isolation_variable": "nodot"}, "prefix.name"),
        ({"text_search_config": "english'; --"}, "not a plain SQL identifier"),
        ({"embedding_dim": 4096}, "between 1 and 2000"),
        ({"pool_size": 0}, "pool_size"),
        ({"ef_search": 0}, "ef_search"),
        ({"app_dsn": "postgresql://someone@db/rag"}, "logs in as 'someone'"),
        ({"dsn": "mysql://x@y/z"}, "must start with postgresql://"),
    ],
)
def test_bad_configuration_is_refused_by_name(changes: dict[str, object], message: str) -> None:
    settings: dict[str, object] = {"dsn": OWNER, "app_dsn": APP, **changes}
    with pytest.raises(ConfigurationError, match=message):
        PostgresConfig(**settings)  # type: ignore[arg-type]


def test_secrets_stay_out_of_repr_and_messages() -> None:
    config = PostgresConfig(dsn=OWNER, app_dsn=APP)
    assert "s3cret" not in repr(config) and "app-pw" not in repr(config)
    assert redact(OWNER) == "postgresql://owner:***@db.internal:5432/rag"


def _settings(sql: str) -> dict[str, str]:
    """The ``SET LOCAL name = 'value'`` commands of a preamble, as a mapping."""
    found = dict(re.findall(r"SET LOCAL ([\w.]+) = '([^']*)'", sql))
    assert sql.count(";") + 1 == len(found) + sql.count("SET LOCAL ROLE")
    return found


def test_the_preamble_pins_each_setting_with_set_local() -> None:
    config = PostgresConfig(dsn=OWNER, app_dsn=APP)
    (statement,) = isolation_preamble(config, Scope("acme-corp"))
    # SET LOCAL, not set_config(): a distributed Postgres forwards only the former.
    assert "set_config" not in statement.sql and statement.parameters == {}
    values = _settings(statement.sql)
    assert values["ragsage.namespace"] == "acme-corp"
    assert values["ragsage.principals"] == "*"  # bound to no principal: reads every document
    assert values["hnsw.iterative_scan"] == "relaxed_order"
    # No parallel workers for scoped statements: starting them cost more than the search.
    assert values["max_parallel_workers_per_gather"] == "0"
    assert "ROLE" not in statement.sql  # the app login needs no role switch


def test_a_bound_scope_pins_its_principals() -> None:
    config = PostgresConfig(dsn=OWNER, app_dsn=APP)
    scope = Scope("acme", frozenset({"user:ana@example.com", "group:sales", "k=:v"}))
    (statement,) = isolation_preamble(config, scope)
    values = _settings(statement.sql)
    assert values["ragsage.principals"] == "group:sales,k=:v,user:ana@example.com"
    (system,) = isolation_preamble(config, None)
    assert _settings(system.sql)["ragsage.principals"] == ""  # the system session: none at all


def test_a_value_the_preamble_could_not_write_plainly_is_refused() -> None:
    config = PostgresConfig(dsn=OWNER, app_dsn=APP)
    # Scope refuses these first; the preamble refuses them again on its own.
    for bad in ("acme'; RESET ROLE; --", "a b", "x%s", "a\\b"):
        scope = object.__new__(Scope)
        object.__setattr__(scope, "namespace", bad)
        object.__setattr__(scope, "principals", None)
        with pytest.raises(ValueError, match="may not"):
            isolation_preamble(config, scope)


def test_principal_names_that_would_break_the_setting_are_refused() -> None:
    for bad in ("a,b", "*", " x", "", "x" * 201, "ünï"):
        with pytest.raises(ValueError):
            Scope("acme", frozenset({bad}))
    with pytest.raises(ValueError, match="at least one"):
        Scope("acme", frozenset())


def test_without_an_app_login_the_preamble_switches_role_first() -> None:
    config = PostgresConfig(dsn=OWNER)
    (statement,) = isolation_preamble(config, Scope("acme"))
    assert statement.sql.startswith('SET LOCAL ROLE "ragsage_app"; ')
