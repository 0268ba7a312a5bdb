"""``ragsage mcp`` end to end: a real API over real Postgres, the server as a subprocess,
and the MCP SDK's own stdio client talking to it."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult, TextContent

from ragsage.core.documents import RawSource
from ragsage.core.keys import Role
from ragsage.core.scopes import Scope
from ragsage.runtime import build_runtime
from ragsage.settings import Settings

from .api_harness import ApiServer, make_key
from .helpers import HOTEL_DETAILS
from .worker_harness import Deployment

ACME = Scope("acme")
TRAVEL = (
    b"# Travel policy\n\n## Hotels\n\nHotel stays are reimbursed up to 180 euros per night in "
    b"Paris and 120 euros elsewhere. " + HOTEL_DETAILS + b"\n\n## Trains\n\nFirst class is "
    b"allowed for journeys over four hours.\n"
)
SECURITY = (
    b"# Security\n\n## Laptops\n\nEvery laptop uses full-disk encryption and locks after five "
    b"minutes.\n"
)
RAGSAGE = Path(sys.executable).with_name("ragsage")


async def ingest(settings: Settings, name: str, data: bytes) -> None:
    runtime = build_runtime(settings)
    try:
        pipeline = runtime.pipeline(await runtime.embedder_for_scope(ACME))
        prepared = await pipeline.prepare(ACME, RawSource(data, name))
        async with runtime.database.session(ACME) as session:
            vectors, lexical, documents = runtime.stores(session, embedder=pipeline.embedder)
            await pipeline.store(
                ACME,
                prepared,
                vector_store=vectors,
                lexical_store=lexical,
                document_store=documents,
            )
    finally:
        await runtime.aclose()


def ingest_both(settings: Settings) -> None:
    """The travel policy and the security notes, in namespace acme."""
    asyncio.run(ingest(settings, "travel.md", TRAVEL))
    asyncio.run(ingest(settings, "security.md", SECURITY))


def server_env(key: str) -> dict[str, str]:
    # Only what the command needs: the key, and where to find this checkout's packages.
    return {"RAGSAGE_API_KEY": key, "PYTHONPATH": os.pathsep.join(sys.path)}


def payload(result: CallToolResult) -> dict[str, Any]:
    assert len(result.content) == 1 and isinstance(result.content[0], TextContent)
    loaded: dict[str, Any] = json.loads(result.content[0].text)
    return loaded


async def use_tools(params: StdioServerParameters, errlog: TextIO) -> dict[str, Any]:
    """Talk to the server the way a desktop MCP client would; keep what it answered."""
    async with (
        stdio_client(params, errlog=errlog) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        seen: dict[str, Any] = {"listed": (await session.list_tools()).tools}
        seen["found"] = payload(
            await session.call_tool("rag_search", {"query": "hotel night in Paris"})
        )
        top = seen["found"]["results"][0]
        seen["chunk"] = payload(
            await session.call_tool(
                "rag_fetch_chunk", {"chunk_id": top["chunk_id"], "chunks_below": 1}
            )
        )
        seen["missing"] = await session.call_tool("rag_fetch_chunk", {"chunk_id": "no-such-chunk"})
        seen["sources"] = payload(await session.call_tool("rag_list_sources", {}))
        seen["bad"] = await session.call_tool("rag_search", {"query": "hotel", "top_k": "five"})
        return seen


def test_an_mcp_client_searches_fetches_and_lists_through_the_api(
    deployment: Deployment, api: ApiServer, tmp_path: Path
) -> None:
    ingest_both(deployment.settings)
    key = make_key(deployment.settings, ACME.namespace, Role.READ)
    params = StdioServerParameters(
        command=str(RAGSAGE), args=["mcp", "--api-url", api.url], env=server_env(key)
    )
    with (tmp_path / "mcp.log").open("w") as errlog:
        seen = asyncio.run(use_tools(params, errlog))
    listed, found, chunk = seen["listed"], seen["found"], seen["chunk"]
    missing, sources, bad = seen["missing"], seen["sources"], seen["bad"]
    top = found["results"][0]

    assert [tool.name for tool in listed] == ["rag_search", "rag_fetch_chunk", "rag_list_sources"]
    assert listed[0].input_schema["required"] == ["query"]
    assert listed[0].input_schema["additionalProperties"] is False

    assert found["query"] == "hotel night in Paris"
    assert top["citation"] == 1
    assert top["source"] == "travel.md"
    assert "180 euros per night" in top["text"]
    assert top["heading_path"] == ["Travel policy", "Hotels"]

    assert chunk["chunk_id"] == top["chunk_id"]
    assert chunk["source"] == "travel.md" and "180 euros" in chunk["text"]
    assert chunk["context_above"] == []
    assert [c["text"] for c in chunk["context_below"]] and all(
        "Hotel stays" not in c["text"] for c in chunk["context_below"]
    )

    assert missing.is_error
    assert payload(missing) == {"error": "no chunk with id 'no-such-chunk'"}
    assert sources == {"sources": ["security.md", "travel.md"]}
    assert bad.is_error and "top_k must be a whole number" in payload(bad)["error"]


def test_with_a_wrong_key_the_server_refuses_to_start(
    deployment: Deployment, api: ApiServer
) -> None:
    wrong = "rsk_this_key_was_never_issued"
    ran = subprocess.run(
        [str(RAGSAGE), "mcp", "--api-url", api.url],
        env=server_env(wrong),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 2
    assert ran.stdout == ""
    assert f"the API key was refused by the ragsage API at {api.url}" in ran.stderr
    assert wrong not in ran.stderr


def test_with_no_api_listening_the_server_says_where_it_looked(tmp_path: Path) -> None:
    ran = subprocess.run(
        [str(RAGSAGE), "mcp", "--api-url", "http://127.0.0.1:9", "--timeout", "5"],
        env=server_env("rsk_whatever"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 2
    assert "cannot reach ragsage API at http://127.0.0.1:9" in ran.stderr


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def list_over_http(url: str) -> tuple[list[str], dict[str, Any]]:
    deadline = time.monotonic() + 30
    while True:
        try:
            async with Client(url) as client:
                names = [tool.name for tool in (await client.list_tools()).tools]
                return names, payload(await client.call_tool("rag_list_sources", {}))
        except Exception:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.3)


def test_the_streamable_http_transport_serves_the_same_tools(
    deployment: Deployment, api: ApiServer, tmp_path: Path
) -> None:
    asyncio.run(ingest(deployment.settings, "travel.md", TRAVEL))
    key = make_key(deployment.settings, ACME.namespace, Role.READ)
    port = free_port()
    command = [str(RAGSAGE), "mcp", "--api-url", api.url, "--transport", "http"]
    with (tmp_path / "mcp-http.log").open("w") as log:
        server = subprocess.Popen(
            [*command, "--port", str(port)], env=server_env(key), stdout=log, stderr=log
        )
        try:
            names, sources = asyncio.run(list_over_http(f"http://127.0.0.1:{port}/mcp"))
        finally:
            server.terminate()
            server.wait(timeout=30)
    assert names == ["rag_search", "rag_fetch_chunk", "rag_list_sources"]
    assert sources == {"sources": ["travel.md"]}


async def search_and_list(params: StdioServerParameters, errlog: TextIO) -> dict[str, Any]:
    async with (
        stdio_client(params, errlog=errlog) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        found = payload(await session.call_tool("rag_search", {"query": "hotel night in Paris"}))
        listed = payload(await session.call_tool("rag_list_sources", {}))
        return {"found": found, "sources": listed}


def test_an_mcp_server_runs_on_a_restricted_key_and_keeps_to_its_filters(
    deployment: Deployment, api: ApiServer, tmp_path: Path
) -> None:
    ingest_both(deployment.settings)
    delegate = make_key(deployment.settings, ACME.namespace, Role.DELEGATE)
    issued = api.client(delegate).post(
        "/v1/restricted-keys",
        json={
            "principals": ["user:agent"],
            "expires_in": 300,
            "filters": {"sources": ["security.md"]},
        },
    )
    assert issued.status_code == 201, issued.text
    params = StdioServerParameters(
        command=str(RAGSAGE),
        args=["mcp", "--api-url", api.url],
        env=server_env(issued.json()["key"]),
    )
    with (tmp_path / "mcp.log").open("w") as errlog:
        seen = asyncio.run(search_and_list(params, errlog))
    assert seen["sources"] == {"sources": ["security.md"]}
    assert {hit["source"] for hit in seen["found"]["results"]} <= {"security.md"}
    assert all("180 euros" not in hit["text"] for hit in seen["found"]["results"])
