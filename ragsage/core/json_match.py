"""How a metadata filter compares values: JSON's rules, the same in Python as in Postgres.

Searches filter in SQL with jsonb containment (``metadata @> filter``); reads
that filter in Python (a chunk opened by id, a list of sources, the
in-memory stores) must answer exactly as that SQL would, or a document one
path hides is served by another.  Python's ``==`` is not JSON's: ``True == 1``
and ``1 == 1.0`` are both true in Python, while JSON (and jsonb) keeps
booleans apart from numbers but compares numbers by value.  Everything that
evaluates a metadata filter in Python goes through :func:`contains`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def equal(one: Any, other: Any) -> bool:
    """JSON equality: numbers by value, booleans only to booleans, arrays and objects deeply."""
    if isinstance(one, bool) or isinstance(other, bool):
        return isinstance(one, bool) and isinstance(other, bool) and one is other
    if _number(one) or _number(other):
        return _number(one) and _number(other) and one == other
    if isinstance(one, str) or isinstance(other, str):
        return isinstance(one, str) and isinstance(other, str) and one == other
    if one is None or other is None:
        return one is None and other is None
    if _array(one) and _array(other):
        return len(one) == len(other) and all(map(equal, one, other))
    if isinstance(one, Mapping) and isinstance(other, Mapping):
        return one.keys() == other.keys() and all(equal(one[key], other[key]) for key in one)
    return False


def contains(have: Any, wanted: Any) -> bool:
    """jsonb's ``have @> wanted`` below the top level, which is what a metadata filter asks.

    An object contains another whose every key it holds with a containing
    value; an array contains another whose every element some element of it
    contains; anything else must be equal.  (Postgres lets a top-level array
    contain a bare scalar; a filter's top level is always an object.)
    """
    if isinstance(wanted, Mapping):
        return isinstance(have, Mapping) and all(
            key in have and contains(have[key], value) for key, value in wanted.items()
        )
    if _array(wanted):
        return _array(have) and all(any(contains(item, part) for item in have) for part in wanted)
    return equal(have, wanted)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _array(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)
