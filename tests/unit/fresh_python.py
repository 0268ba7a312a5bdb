"""Run code in a fresh interpreter, for tests about what an import loads or does."""

from __future__ import annotations

import subprocess
import sys


def run_fresh(code: str) -> subprocess.CompletedProcess[str]:
    """``python -c code`` with this interpreter; raises if it exits non-zero."""
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
