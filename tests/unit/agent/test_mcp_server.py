"""The MCP server as an MCP client sees it, connected in-process with the SDK's own Client."""

from __future__ import annotations

import json
from importlib.metadata import PackageNotFoundError
from pathlib import Path

import pytest
from mcp import Client
from mcp.types import TextContent

from ragsage.agent.mcp_server import build_server, session_key
from ragsage.agent.tools import build_tools
from ragsage.cli import main, mcp
from ragsage.core.errors import InvalidRequest

from .corpus import sample


def text_of(result: object) -> str:
    content = result.content  # type: ignore[attr-defined]
    assert len(content) == 1 and isinstance(content[0], TextContent)
    return content[0].text


async def test_clients_see_the_same_tools_an_openai_agent_gets() -> None:
    tools = build_tools(sample())
    async with Client(build_server(tools)) as client:
        listed = (await client.list_tools()).tools
    assert [(t.name, t.description, t.input_schema) for t in listed] == [
        (t.name, t.description, t.parameters) for t in tools
    ]


async def test_a_search_answers_with_the_json_payload() -> None:
    async with Client(build_server(build_tools(sample()))) as client:
        result = await client.call_tool("rag_search", {"query": "encryption", "top_k": 1})
    assert not result.is_error
    payload = json.loads(text_of(result))
    assert payload["results"][0]["source"] == "security.md"
    assert payload["results"][0]["citation"] == 1
    assert result.structured_content == payload


async def test_a_bad_argument_is_an_error_result_the_model_can_read() -> None:
    async with Client(build_server(build_tools(sample()))) as client:
        result = await client.call_tool("rag_fetch_chunk", {"chunk_id": 7})
    assert result.is_error
    assert json.loads(text_of(result)) == {
        "error": "rag_fetch_chunk: chunk_id must be a string, got a number"
    }


async def test_an_unknown_tool_is_named() -> None:
    async with Client(build_server(build_tools(sample()))) as client:
        result = await client.call_tool("rag_delete_everything", {})
    assert result.is_error
    assert "no tool named 'rag_delete_everything'" in text_of(result)


async def test_the_server_instructions_carry_the_citation_rules() -> None:
    async with Client(build_server(build_tools(sample()))) as client:
        instructions = client.instructions
    assert instructions is not None and "[1]" in instructions


def test_without_the_sdk_the_command_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def missing(name: str) -> str:
        raise PackageNotFoundError(name)

    monkeypatch.setattr(mcp, "version", missing)
    assert main(["mcp"]) == 2
    assert "pip install 'ragsage[mcp]'" in capsys.readouterr().err


def test_without_a_key_the_command_says_where_to_put_one(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("RAGSAGE_API_KEY", raising=False)
    assert main(["mcp", "--api-url", "http://127.0.0.1:9"]) == 2
    assert "set RAGSAGE_API_KEY (or pass --api-key-file)" in capsys.readouterr().err


def test_the_key_file_wins_over_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGSAGE_API_KEY", "rsk_from_env")
    path = tmp_path / "key"
    path.write_text("rsk_from_file\n", encoding="utf-8")
    assert mcp.api_key(path) == "rsk_from_file"
    assert mcp.api_key(None) == "rsk_from_env"


def test_an_unreadable_or_empty_key_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest, match="cannot read the API key file .*nope"):
        mcp.api_key(tmp_path / "nope")
    (tmp_path / "empty").write_text("\n", encoding="utf-8")
    with pytest.raises(InvalidRequest, match="the API key file .*empty is empty"):
        mcp.api_key(tmp_path / "empty")


def test_an_unreachable_api_stops_the_command_at_start_up(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RAGSAGE_API_KEY", "rsk_test_key_123")
    assert main(["mcp", "--api-url", "http://127.0.0.1:9", "--timeout", "5"]) == 2
    err = capsys.readouterr().err
    assert "cannot reach ragsage API at http://127.0.0.1:9" in err
    assert "rsk_test_key_123" not in err


async def test_citation_numbers_run_on_across_a_session() -> None:
    server = build_server(build_tools(sample()))
    async with Client(server) as client:
        first = json.loads(text_of(await client.call_tool("rag_search", {"query": "encryption"})))
        second = json.loads(
            text_of(await client.call_tool("rag_search", {"query": "holiday laptops"}))
        )
    numbers = {r["chunk_id"]: r["citation"] for r in first["results"]}
    assert sorted(numbers.values()) == list(range(1, len(numbers) + 1))
    for result in second["results"]:
        # A chunk seen before keeps its number; a new one gets the next free one.
        assert result["citation"] == numbers.setdefault(result["chunk_id"], len(numbers) + 1)
    assert len(numbers) > len(first["results"])  # the second search brought new sources

    # A new stdio client is a new process, hence a new server.
    async with Client(build_server(build_tools(sample()))) as fresh:
        again = json.loads(text_of(await fresh.call_tool("rag_search", {"query": "holiday"})))
    assert [r["citation"] for r in again["results"]] == [1, 2, 3]


def test_http_sessions_are_told_apart_by_their_session_header() -> None:
    class Request:
        def __init__(self, headers: dict[str, str]) -> None:
            self.headers = headers

    assert session_key(Request({"mcp-session-id": "a1"})) == "a1"
    assert session_key(Request({})) is None
    assert session_key(None) is None


def test_only_the_most_recent_sessions_are_remembered() -> None:
    from collections import OrderedDict

    from ragsage.agent.mcp_server import MAX_SESSIONS, _session_numbers

    numbering: OrderedDict[str | None, dict[str, int]] = OrderedDict()
    _session_numbers(numbering, "first")["chunk"] = 1
    for number in range(MAX_SESSIONS):
        _session_numbers(numbering, f"s{number}")
    assert len(numbering) == MAX_SESSIONS and "first" not in numbering
    assert _session_numbers(numbering, "s5") is numbering["s5"]
