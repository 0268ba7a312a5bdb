"""Attack 5's root: Python and Postgres must answer a metadata filter alike.

Searches filter with jsonb containment in SQL; chunks by id, sources and the
in-memory stores filter in Python.  Any value on which the two disagree is a
document one path hides and another serves, so this property test asks both
about many generated metadata and filters, real Postgres on one side.
"""

from __future__ import annotations

import json
from typing import Any

import psycopg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragsage.core import json_match

# Few distinct values, so that generated filters often match, and the values
# Python confuses (True and 1, 1 and 1.0, 0 and False) meet often.
SCALARS = st.sampled_from([True, False, 0, 1, 1.0, 2.5, -1, "1", "true", "a", "", None])
KEYS = st.sampled_from(["public", "team", "tags", "n"])
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=2),
    max_leaves=5,
)
OBJECTS = st.dictionaries(KEYS, VALUES, max_size=3)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(pairs=st.lists(st.tuples(OBJECTS, OBJECTS), min_size=50, max_size=50))
def test_python_and_postgres_agree_on_every_filter(
    database_url: str, pairs: list[tuple[dict[str, Any], dict[str, Any]]]
) -> None:
    with psycopg.connect(database_url, autocommit=True) as connection:
        rows = connection.execute(
            "SELECT m::jsonb @> f::jsonb FROM unnest(%s::text[], %s::text[]) AS p(m, f)",
            ([json.dumps(m) for m, _ in pairs], [json.dumps(f) for _, f in pairs]),
        ).fetchall()
    for (metadata, wanted), (in_sql,) in zip(pairs, rows, strict=True):
        assert json_match.contains(metadata, wanted) is in_sql, (metadata, wanted)
