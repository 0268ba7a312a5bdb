"""The retrieval tools as an LLM sees and calls them: schemas, answers, and every way to fail."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from ragsage.agent.tools import Tool, build_tools, prompt_section
from ragsage.core.errors import RagsageError, StorageError

from .corpus import Corpus, sample


def tools(backend: Any = None) -> dict[str, Tool]:
    return {tool.name: tool for tool in build_tools(backend or sample())}


def answer(tool: Tool, arguments: Any = None) -> dict[str, Any]:
    payload = json.loads(tool(arguments))
    assert isinstance(payload, dict)
    return payload


def test_the_three_tools_are_offered() -> None:
    assert list(tools()) == ["rag_search", "rag_fetch_chunk", "rag_list_sources"]


@pytest.mark.parametrize("name", ["rag_search", "rag_fetch_chunk", "rag_list_sources"])
def test_each_schema_is_valid_json_schema_that_refuses_unknown_fields(name: str) -> None:
    schema = tools()[name].parameters
    Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    for spec in schema["properties"].values():
        assert spec["description"]


def test_openai_schema_has_the_chat_completions_shape() -> None:
    for tool in tools().values():
        entry = tool.openai_schema()
        assert entry == {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
            },
        }
        json.dumps(entry)
        assert len(tool.description) > 60


def test_search_defaults_and_cites_from_one() -> None:
    corpus = sample()
    found = answer(tools(corpus)["rag_search"], '{"query": "paid holiday days"}')
    assert found["query"] == "paid holiday days"
    assert found["total_found"] == 3
    assert [hit["citation"] for hit in found["results"]] == [1, 2, 3]
    assert found["results"][0]["text"] == "Employees get 25 days of paid holiday each year."
    assert corpus.calls == [("search", {"query": "paid holiday days", "top_k": 5, "rerank": False})]


def test_search_passes_top_k_and_reranking_through() -> None:
    corpus = sample()
    arguments = {"query": "holiday", "top_k": 2, "enable_reranking": True}
    found = answer(tools(corpus)["rag_search"], arguments)
    assert len(found["results"]) == 2
    assert corpus.calls[0][1] == {"query": "holiday", "top_k": 2, "rerank": True}


def test_search_with_nothing_relevant_says_so_with_an_empty_list() -> None:
    found = answer(tools()["rag_search"], {"query": "quarterly revenue"})
    assert found["total_found"] == 0 and found["results"] == []


def test_a_whole_number_written_as_a_float_is_accepted() -> None:
    corpus = sample()
    answer(tools(corpus)["rag_search"], '{"query": "holiday", "top_k": 3.0}')
    assert corpus.calls[0][1]["top_k"] == 3


def test_null_for_an_optional_argument_means_its_default() -> None:
    corpus = sample()
    answer(tools(corpus)["rag_search"], '{"query": "holiday", "top_k": null}')
    assert corpus.calls[0][1]["top_k"] == 5


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ('{"query": "x", "top_k": "five"}', "top_k must be a whole number, got a string 'five'"),
        ('{"query": "x", "top_k": 0}', "top_k must be between 1 and 20, got 0"),
        ('{"query": "x", "top_k": 21}', "top_k must be between 1 and 20, got 21"),
        ('{"query": "x", "top_k": 2.5}', "top_k must be a whole number"),
        ('{"query": "x", "top_k": true}', "top_k must be a whole number, got a boolean"),
        ('{"query": "x", "enable_reranking": "yes"}', "enable_reranking must be true or false"),
        ('{"query": 42}', "query must be a string, got a number"),
        ('{"query": "   "}', "query must not be empty"),
        ("{}", "missing required argument 'query'"),
        ('{"query": null}', "missing required argument 'query'"),
        ('{"query": "x", "filters": {}}', "unknown argument 'filters'"),
        ('{"query": "x"', "the arguments are not valid JSON"),
        ('["x"]', "the arguments must be a JSON object, got an array"),
        ('"holiday"', "the arguments must be a JSON object, got a string"),
    ],
)
def test_bad_search_arguments_come_back_as_an_error_naming_the_problem(
    arguments: str, message: str
) -> None:
    corpus = sample()
    payload = answer(tools(corpus)["rag_search"], arguments)
    assert set(payload) == {"error"}
    assert payload["error"].startswith("rag_search: ")
    assert message in payload["error"]
    assert corpus.calls == []


def test_an_overlong_query_is_refused_before_the_backend() -> None:
    payload = answer(tools()["rag_search"], {"query": "word " * 2000})
    assert "query is too long (10000 characters, at most 8000)" in payload["error"]


def test_fetch_chunk_returns_the_chunk_with_its_neighbours() -> None:
    chunk = answer(
        tools()["rag_fetch_chunk"],
        '{"chunk_id": "doc-handbook.md:1", "chunks_above": 1, "chunks_below": 5}',
    )
    assert chunk["text"] == "Holiday requests go to your manager two weeks ahead."
    assert [c["chunk_id"] for c in chunk["context_above"]] == ["doc-handbook.md:0"]
    assert [c["chunk_id"] for c in chunk["context_below"]] == ["doc-handbook.md:2"]


def test_fetch_of_an_unknown_chunk_names_it() -> None:
    payload = answer(tools()["rag_fetch_chunk"], {"chunk_id": "doc-nowhere:9"})
    assert payload == {"error": "no chunk with id 'doc-nowhere:9'"}


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"chunk_id": 7}, "chunk_id must be a string, got a number"),
        ({"chunk_id": "a", "chunks_above": 6}, "chunks_above must be between 0 and 5, got 6"),
        ({"chunk_id": "a", "chunks_below": -1}, "chunks_below must be between 0 and 5, got -1"),
        ({}, "missing required argument 'chunk_id'"),
    ],
)
def test_bad_fetch_arguments_come_back_as_an_error(arguments: Any, message: str) -> None:
    payload = answer(tools()["rag_fetch_chunk"], arguments)
    assert message in payload["error"]


@pytest.mark.parametrize("arguments", [None, "", "{}", {}])
def test_list_sources_takes_no_arguments(arguments: Any) -> None:
    assert answer(tools()["rag_list_sources"], arguments) == {
        "sources": ["handbook.md", "security.md"]
    }


def test_list_sources_refuses_arguments_it_does_not_have() -> None:
    payload = answer(tools()["rag_list_sources"], {"source": "x"})
    assert payload == {
        "error": "rag_list_sources: unknown argument 'source' (accepted arguments: none)"
    }


class Failing(Corpus):
    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error

    def tool_search(self, query: str, *, top_k: int, rerank: bool) -> dict[str, Any]:
        raise self.error

    def tool_list_sources(self) -> list[str]:
        raise self.error


@pytest.mark.parametrize(
    "error", [StorageError("the database is unavailable; retry"), ValueError("bad value")]
)
def test_a_backend_error_of_ours_is_shown_to_the_model(error: Exception) -> None:
    payload = answer(tools(Failing(error))["rag_search"], {"query": "holiday"})
    assert payload == {"error": str(error)}


def test_an_unexpected_backend_failure_hides_its_message(caplog: pytest.LogCaptureFixture) -> None:
    backend = Failing(RuntimeError("connect to postgres://admin:hunter2@db failed"))
    payload = answer(tools(backend)["rag_list_sources"])
    assert payload == {
        "error": "rag_list_sources failed unexpectedly; the details are in the server log"
    }
    assert "hunter2" not in json.dumps(payload)
    assert "rag_list_sources failed unexpectedly" in caplog.text


def test_an_error_without_a_message_still_says_which_tool_failed() -> None:
    payload = answer(tools(Failing(RagsageError()))["rag_search"], {"query": "x"})
    assert payload == {"error": "rag_search failed (RagsageError)"}


def test_editing_a_tools_schema_does_not_change_what_is_enforced() -> None:
    search = tools()["rag_search"]
    search.parameters["properties"]["top_k"]["maximum"] = 1000
    assert "between 1 and 20" in answer(search, {"query": "x", "top_k": 500})["error"]


def test_the_prompt_section_explains_the_tools_and_the_citation_rules() -> None:
    text = prompt_section(build_tools(sample()))
    for name in ("rag_search", "rag_fetch_chunk", "rag_list_sources"):
        assert f"`{name}`" in text
    assert "[1]" in text and "citation" in text
    assert "never invent sources" in text
    assert "do not cover it" in text
    assert prompt_section() == text


def test_the_prompt_section_mentions_only_the_tools_given() -> None:
    search_only = [tools()["rag_search"]]
    text = prompt_section(search_only)
    assert "`rag_search`" in text and "`rag_fetch_chunk`" not in text


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)
search_like = st.fixed_dictionaries(
    {},
    optional={
        "query": json_values,
        "top_k": st.integers(-5, 30) | json_values,
        "enable_reranking": st.booleans() | json_values,
        "other": json_values,
    },
)


@settings(max_examples=300, deadline=None)
@given(arguments=st.one_of(json_values, search_like, st.text()))
def test_whatever_the_model_sends_every_tool_answers_with_a_json_object(arguments: Any) -> None:
    for tool in build_tools(sample()):
        payload = json.loads(
            tool(arguments if isinstance(arguments, str) else json.dumps(arguments))
        )
        assert isinstance(payload, dict)
        if "error" in payload:
            assert isinstance(payload["error"], str) and payload["error"]


@settings(max_examples=300, deadline=None)
@given(arguments=search_like)
def test_the_tool_accepts_exactly_what_its_published_schema_accepts(
    arguments: dict[str, Any],
) -> None:
    # Two deliberate leniencies (null means the default; a blank query is refused)
    # are left out: otherwise the hand-written checks and the schema must agree.
    if any(value is None for value in arguments.values()):
        return
    if isinstance(arguments.get("query"), str) and not arguments["query"].strip():
        return
    search = tools()["rag_search"]
    schema_ok = Draft202012Validator(search.parameters).is_valid(arguments)
    payload = answer(search, arguments)
    # The backend may still refuse a valid query (no words in it); only argument errors,
    # which carry the tool's name, must match the schema's verdict.
    refused = str(payload.get("error", "")).startswith("rag_search: ")
    assert refused != schema_ok, payload


def test_arguments_nested_too_deeply_are_an_error_payload_not_a_crash() -> None:
    search = build_tools(sample())[0]
    assert json.loads(search("[" * 100_000)) == {
        "error": "rag_search: the arguments are nested too deeply"
    }
