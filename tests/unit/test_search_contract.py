"""One search contract: the API, the facade and the agent tools accept and refuse alike."""

from __future__ import annotations

import inspect
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from api.schemas.query import QueryRequest, RetrievalOptionsBody, SearchRequest
from ragsage import RAG, InvalidRequest
from ragsage.agent.tool_arguments import SearchArguments, published_schema
from ragsage.agent.tool_limits import MAX_TOOL_TOP_K
from ragsage.agent.tools import build_tools
from ragsage.query.options import MAX_QUERY_CHARS
from ragsage.query.requests import SearchOptions, python_options

from .agent.corpus import sample

_ANY = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 150),
    st.floats(-2, 200, allow_nan=False),
    st.text(max_size=3),
    st.lists(st.integers(0, 3), max_size=2),
)
_OPTIONS = st.fixed_dictionaries(
    {},
    optional={
        name: _ANY
        for name in (
            "top_k",
            "hybrid_alpha",
            "rerank",
            "min_score",
            "recency_bias",
            "recency_half_life_days",
            "chunks_above",
            "chunks_below",
        )
    },
)


def _api_accepts(values: dict[str, Any]) -> bool:
    try:
        RetrievalOptionsBody.model_validate(values)
    except ValidationError:
        return False
    return True


def _facade_accepts(values: dict[str, Any]) -> bool:
    try:
        python_options(values)
    except InvalidRequest:
        return False
    return True


@settings(max_examples=400, deadline=None)
@given(values=_OPTIONS)
def test_the_facade_accepts_exactly_the_options_a_request_body_may_hold(
    values: dict[str, Any],
) -> None:
    # The engine's own checks stand behind both; they must never be what refuses.
    assert _facade_accepts(values) == _api_accepts(values), values


def test_the_api_models_are_the_contract_itself() -> None:
    assert issubclass(RetrievalOptionsBody, SearchOptions)
    assert issubclass(SearchRequest, SearchOptions)
    assert QueryRequest.model_fields["options"].annotation is RetrievalOptionsBody
    assert RetrievalOptionsBody.model_fields.keys() == SearchOptions.model_fields.keys()


def test_the_facade_takes_every_option_of_the_contract_by_name() -> None:
    facade = set(inspect.signature(RAG.search).parameters) - {"self", "query"}
    # The one spelling the facade keeps: recency_half_life_days is the contract's too.
    assert facade == set(SearchOptions.model_fields)


def test_a_facade_mistake_names_the_argument_as_the_api_would() -> None:
    with RAG.default() as rag:
        with pytest.raises(InvalidRequest, match="top_k must be between 1 and 100, got 0"):
            rag.search("x", top_k=0)
        with pytest.raises(InvalidRequest, match="recency_bias must be true or false"):
            rag.search("x", recency_bias=1)  # type: ignore[arg-type]
        with pytest.raises(InvalidRequest, match="unknown filter 'doc_ids'"):
            rag.search("x", filters={"doc_ids": ["a"]})


def test_the_search_tool_publishes_the_schema_its_model_generates() -> None:
    (search, *_) = build_tools(sample())
    assert search.parameters == published_schema(SearchArguments)
    properties = search.parameters["properties"]
    assert set(properties) == {"query", "top_k", "enable_reranking"}
    # The bounds come from the shared field types and the tool's own limit.
    assert properties["query"]["maxLength"] == MAX_QUERY_CHARS
    assert properties["top_k"]["maximum"] == MAX_TOOL_TOP_K


def test_python_values_a_caller_already_has_are_taken_as_python_means_them() -> None:
    import numpy as np

    options = python_options({"top_k": np.int64(3), "hybrid_alpha": np.float32(0.5)})
    assert (options.top_k, options.hybrid_alpha) == (3, 0.5)
    found = python_options({}, {"document_ids": {"a": 1}.keys(), "sources": ("x.md",)})
    assert found.filters is not None and found.filters.document_ids == frozenset({"a"})
    assert found.filters.sources == frozenset({"x.md"})
    # Metadata is compared as the stores compare it, whatever its values.
    tagged = python_options({}, {"metadata": {"tags": ["a", "b"], "owner": None}})
    assert tagged.filters is not None and tagged.filters.metadata == {
        "tags": ["a", "b"],
        "owner": None,
    }


def test_a_timestamp_without_a_zone_is_read_as_utc_so_filtering_never_fails() -> None:
    with RAG.default() as rag:
        rag.index_text("Refunds are paid within five days.", document_id="refunds")
        assert rag.search("refunds", filters={"created_after": "2000-01-01"}).results
        assert rag.search("refunds", filters={"created_before": "2000-01-01"}).results == ()


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"recency_half_life_days": 0}, "must be more than 0 and at most 36500, got 0"),
        ({"hybrid_alpha": "x"}, "hybrid_alpha must be a number, got a string 'x'"),
        ({"rerank": "no"}, "rerank must be true or false, got a string 'no'"),
    ],
)
def test_facade_messages_say_what_the_rule_is(values: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidRequest, match=message):
        python_options(values)


def test_a_misspelt_tool_argument_is_named_before_the_one_it_leaves_missing() -> None:
    (search, fetch, _) = build_tools(sample())
    error = json.loads(search('{"querx": "refunds"}'))["error"]
    assert "unknown argument 'querx'" in error
    assert "must not be empty" in json.loads(fetch('{"chunk_id": "   "}'))["error"]
