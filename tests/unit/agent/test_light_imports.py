"""The tools and the command stay importable without the SDKs they use at run time."""

from __future__ import annotations

import json

from ..fresh_python import run_fresh

HEAVY = ["mcp", "httpx", "anyio", "uvicorn", "starlette", "sqlalchemy", "flask", "openai"]


def test_the_tools_and_the_command_load_no_sdk() -> None:
    probe = (
        "import sys, json; import ragsage.agent, ragsage.agent.tools, ragsage.cli.mcp; "
        f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    )
    out = run_fresh(probe)
    assert json.loads(out.stdout) == []
