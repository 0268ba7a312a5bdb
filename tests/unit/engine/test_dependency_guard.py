from __future__ import annotations

import json

import pytest

from ..fresh_python import run_fresh
from ..import_guard import HEAVY


@pytest.mark.parametrize(
    "modules",
    [
        "ragsage",
        "ragsage, ragsage.adapters.parsing",
        "ragsage.parsing, ragsage.parsing.chunking, ragsage.contextualizing, ragsage.caching",
        "ragsage.testing, ragsage.ingestion, ragsage.query",
        "ragsage.cli",
        "ragsage.library.shipit",
    ],
)
def test_the_engine_imports_without_the_heavy_stack(modules: str) -> None:
    probe = (
        f"import sys, json; import {modules}; "
        f"print(json.dumps(sorted(m for m in {list(HEAVY)!r} if m in sys.modules)))"
    )
    out = run_fresh(probe)
    assert json.loads(out.stdout) == []
