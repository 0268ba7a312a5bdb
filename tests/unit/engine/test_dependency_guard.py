from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ..import_guard import HEAVY


@pytest.mark.parametrize(
    "modules",
    [
        "ragsage",
        "ragsage, ragsage.adapters.parsing",
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
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert json.loads(out.stdout) == []
