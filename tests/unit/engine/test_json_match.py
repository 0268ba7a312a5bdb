"""A metadata filter compares by JSON's rules in Python, as jsonb does in every search."""

from __future__ import annotations

from datetime import UTC, datetime

from ragsage.core import json_match
from ragsage.core.filters import SearchFilters


def test_booleans_are_not_numbers_and_numbers_compare_by_value() -> None:
    assert not json_match.equal(True, 1) and not json_match.equal(0, False)
    assert json_match.equal(1, 1.0) and json_match.equal(True, True)
    assert not json_match.equal("1", 1) and not json_match.equal(None, False)
    assert json_match.equal([1, {"a": True}], [1.0, {"a": True}])
    assert not json_match.equal([1, {"a": True}], [1, {"a": 1}])


def test_containment_follows_jsonb_below_the_top_level() -> None:
    have = {"tags": ["a", "b"], "owner": {"team": "hr", "size": 3}, "public": True}
    assert json_match.contains(have, {"tags": ["b"], "owner": {"size": 3.0}})
    assert not json_match.contains(have, {"tags": "a"})  # an inner array holds no bare scalar
    assert not json_match.contains(have, {"public": 1})
    assert not json_match.contains(have, {"missing": None})


def test_a_filter_on_true_admits_no_document_tagged_one() -> None:
    wanted = SearchFilters(metadata={"public": True})
    when = datetime(2026, 1, 1, tzinfo=UTC)
    assert wanted.admits("d1", "a.md", {"public": True}, when)
    assert not wanted.admits("d2", "b.md", {"public": 1}, when)
    assert SearchFilters(metadata={"version": 2}).admits("d3", "c.md", {"version": 2.0}, when)


def test_narrowing_by_two_filters_that_disagree_only_in_json_type_passes_nothing() -> None:
    granted = SearchFilters(metadata={"public": True})
    narrowed = granted.narrowing(SearchFilters(metadata={"public": 1}))
    assert narrowed.document_ids == frozenset()
