"""The built wheel carries every file the installed package reads, not only its modules."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from .helpers import REPO


def test_the_wheel_holds_every_tracked_data_file_of_the_packages(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(tmp_path), "."],
        cwd=REPO,
        check=True,
        timeout=600,
    )
    (wheel,) = tmp_path.glob("ragsage-*.whl")
    held = set(zipfile.ZipFile(wheel).namelist())
    tracked = subprocess.run(
        ["git", "ls-files", "ragsage", "api", "worker"],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    data = [path for path in tracked if not path.endswith(".py")]
    # The schema's SQL, the vendored tokenizer, the web page: a wheel without them
    # installs cleanly and fails on first use.
    assert any(path.endswith(".sql") for path in data)
    assert sorted(path for path in data if path not in held) == []
