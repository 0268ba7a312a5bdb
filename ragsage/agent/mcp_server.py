"""The retrieval tools as a Model Context Protocol server, on the official ``mcp`` SDK.

The low-level ``Server`` is used rather than the decorator API so that MCP clients see
exactly the schemas and descriptions an OpenAI-style agent gets from
:func:`~ragsage.agent.tools.build_tools`.  Each result is one text block holding the
tool's JSON payload (also given as structured content); an ``{"error": ...}`` payload
is flagged as an error result so the client's model knows the call did not work.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import anyio
import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from ragsage import __version__
from ragsage.agent.tools import Tool, prompt_section

SERVER_NAME = "ragsage"
# Sessions whose citation numbers are remembered; an HTTP server sees many.
MAX_SESSIONS = 1000


def build_server(tools: Sequence[Tool]) -> Server[Any]:
    """An MCP server offering ``tools``; its instructions are the tools' prompt section."""
    by_name = {tool.name: tool for tool in tools}
    listing = types.ListToolsResult(
        tools=[
            types.Tool(name=tool.name, description=tool.description, input_schema=tool.parameters)
            for tool in tools
        ]
    )

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return listing

    # Citation numbers per client session, first seen first: a model that
    # searches twice must not be handed two different sources both called [1].
    numbering: OrderedDict[str | None, dict[str, int]] = OrderedDict()

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool = by_name.get(params.name)
        if tool is None:
            known = ", ".join(by_name)
            text = json.dumps({"error": f"no tool named {params.name!r} (tools: {known})"})
        else:
            # The backends block on HTTP or a database; keep the event loop serving.
            text = await anyio.to_thread.run_sync(tool, params.arguments or {})
            text = _numbered(text, _session_numbers(numbering, session_key(ctx.request)))
        return _result(text)

    return Server(
        SERVER_NAME,
        version=__version__,
        instructions=prompt_section(tools),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def session_key(request: object) -> str | None:
    """Which client session a tool call belongs to.

    Over streamable HTTP each client session has an ``Mcp-Session-Id`` header;
    over stdio the process serves exactly one client, so there is one session
    (``None``).
    """
    headers = getattr(request, "headers", None)
    value = headers.get("mcp-session-id") if headers is not None else None
    return value if isinstance(value, str) else None


def _session_numbers(
    numbering: OrderedDict[str | None, dict[str, int]], key: str | None
) -> dict[str, int]:
    """The session's citation numbers; the least recently used sessions are forgotten."""
    seen = numbering.pop(key, None) or {}
    numbering[key] = seen
    while len(numbering) > MAX_SESSIONS:
        numbering.popitem(last=False)
    return seen


def _numbered(text: str, seen: dict[str, int]) -> str:
    """``text`` with each search result's citation renumbered in the session's order."""
    payload = json.loads(text)
    results = payload.get("results") if isinstance(payload, dict) else None
    if not isinstance(results, list):
        return text
    for result in results:
        chunk_id = result.get("chunk_id") if isinstance(result, dict) else None
        if isinstance(chunk_id, str):
            result["citation"] = seen.setdefault(chunk_id, len(seen) + 1)
    return json.dumps(payload)


def _result(text: str) -> types.CallToolResult:
    payload = json.loads(text)
    failed = isinstance(payload, dict) and set(payload) == {"error"}
    return types.CallToolResult(
        content=[types.TextContent(text=text)],
        structured_content=payload if isinstance(payload, dict) else None,
        is_error=failed,
    )


async def serve_stdio(server: Server[Any]) -> None:
    """Serve one client over this process's stdin and stdout until it disconnects."""
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def serve_http(server: Server[Any], *, host: str, port: int) -> None:
    """Serve MCP's streamable-HTTP transport at ``http://host:port/mcp``."""
    import uvicorn

    app = server.streamable_http_app(host=host)
    await uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning")).serve()
