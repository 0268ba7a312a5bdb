"""``ragsage mcp``: serve the retrieval tools over MCP, backed by a ragsage API.

Registered as a plugin of the ``ragsage`` command.  Nothing from the ``mcp`` SDK is
imported until the command runs, so the CLI starts without the extra installed.
The API key comes from ``RAGSAGE_API_KEY`` or a file, never from a flag, because
command-line arguments are visible to every user of the machine.
"""

from __future__ import annotations

import argparse
import os
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from ragsage.core.errors import InvalidRequest

KEY_VARIABLE = "RAGSAGE_API_KEY"
DEFAULT_API_URL = "http://127.0.0.1:8000"
LOOPBACK = ("127.0.0.1", "localhost", "::1")
MISSING_EXTRA = "ragsage mcp needs the MCP SDK (mcp>=2.3): pip install 'ragsage[mcp]'"


def register(commands: Any) -> None:
    serve = commands.add_parser(
        "mcp",
        help="serve the retrieval tools to MCP clients",
        description="Serve rag_search, rag_fetch_chunk and rag_list_sources over the Model"
        f" Context Protocol, answering from a ragsage API. The API key is read from"
        f" ${KEY_VARIABLE} or --api-key-file.",
    )
    serve.add_argument(
        "--api-url", default=DEFAULT_API_URL, help=f"the ragsage API (default {DEFAULT_API_URL})"
    )
    serve.add_argument(
        "--api-key-file",
        type=Path,
        help=f"read the API key from this file instead of ${KEY_VARIABLE}",
    )
    serve.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    serve.add_argument("--host", default="127.0.0.1", help="http transport: address to bind")
    serve.add_argument("--port", type=int, default=8765, help="http transport: port to bind")
    serve.add_argument(
        "--timeout", type=float, default=30.0, help="seconds to wait for each API call"
    )
    serve.set_defaults(handler=_serve, asynchronous=False)


def _serve(args: argparse.Namespace) -> int:
    if not _sdk_installed():
        print(MISSING_EXTRA, file=sys.stderr)
        return 2
    import anyio

    from ragsage.agent.http_backend import HttpToolBackend
    from ragsage.agent.mcp_server import build_server, serve_http, serve_stdio
    from ragsage.agent.tools import build_tools

    key = api_key(args.api_key_file)
    with HttpToolBackend(args.api_url, key, timeout=args.timeout) as backend:
        # Fail at start-up, where a person is watching, not on the model's first call.
        backend.check()
        server = build_server(build_tools(backend))
        if args.transport == "http":
            if args.host not in LOOPBACK:
                # The MCP endpoint has no authentication of its own: whoever reaches it
                # searches with this key.
                print(
                    f"warning: serving MCP on {args.host}:{args.port} without authentication;"
                    " anyone who can connect can search with this API key",
                    file=sys.stderr,
                )
            anyio.run(lambda: serve_http(server, host=args.host, port=args.port))
        else:
            anyio.run(serve_stdio, server)
    return 0


def api_key(path: Path | None) -> str:
    """The API key from ``path`` if given, else from the environment."""
    if path is not None:
        try:
            key = path.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise InvalidRequest(f"cannot read the API key file {path}: {exc.strerror}") from exc
        if not key:
            raise InvalidRequest(f"the API key file {path} is empty")
        return key
    key = os.environ.get(KEY_VARIABLE, "").strip()
    if not key:
        raise InvalidRequest(f"set {KEY_VARIABLE} (or pass --api-key-file) to the API key to use")
    return key


def _sdk_installed() -> bool:
    try:
        major = int(version("mcp").split(".")[0])
    except (PackageNotFoundError, ValueError):
        return False
    return major >= 2
