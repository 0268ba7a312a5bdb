from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragsage.cli import main

from .conftest import HANDBOOK


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "handbook.md").write_text(HANDBOOK)
    (docs / "pricing.txt").write_text("The Pro plan costs 49 euros per month.")
    return tmp_path


def run(workdir: Path, *args: str) -> int:
    return main([*args, "--state", str(workdir / "state.json")])


def test_ingest_then_query_prints_a_cited_answer(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(workdir, "ingest", str(workdir / "docs")) == 0
    out = capsys.readouterr().out
    assert "ingested" in out and "2 ingested, 0 failed" in out

    assert run(workdir, "query", "How much is the Pro plan per month?") == 0
    out = capsys.readouterr().out
    assert "49 euros" in out and "[1]" in out
    assert "Sources:" in out and "pricing.txt" in out

    assert run(workdir, "query", "Who won the 1998 world cup?") == 0
    out = capsys.readouterr().out
    assert "could not find" in out and "Sources:" not in out


def test_reingesting_unchanged_files_reports_them_unchanged(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(workdir, "ingest", str(workdir / "docs"))
    before = (workdir / "state.json").read_bytes()
    capsys.readouterr()
    assert run(workdir, "ingest", str(workdir / "docs")) == 0
    assert "0 ingested" in capsys.readouterr().out
    assert (workdir / "state.json").read_bytes() == before


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("empty.md", b"", "empty.md: the file is empty"),
        ("garbage.txt", b"\x00\xff\xfe\x81\x9c binary", "garbage.txt: not valid UTF-8"),
        ("archive.7z", b"7z\xbc\xaf\x27\x1c\x00\x04\xff", "archive.7z: unsupported format"),
    ],
)
def test_bad_files_exit_non_zero_naming_the_file_and_leave_the_state_alone(
    workdir: Path, capsys: pytest.CaptureFixture[str], name: str, content: bytes, message: str
) -> None:
    run(workdir, "ingest", str(workdir / "docs"))
    state = workdir / "state.json"
    before = (state.read_bytes(), state.stat().st_mtime_ns)
    bad = workdir / name
    bad.write_bytes(content)
    capsys.readouterr()

    assert run(workdir, "ingest", str(bad)) == 1
    assert message in capsys.readouterr().err
    assert (state.read_bytes(), state.stat().st_mtime_ns) == before


def test_a_missing_file_and_a_corrupt_state_are_clear_errors(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(workdir, "ingest", str(workdir / "nope.md")) == 1
    assert "nope.md: cannot read" in capsys.readouterr().err
    (workdir / "state.json").write_text("{not json")
    assert run(workdir, "query", "anything") == 2
    assert "cannot read the corpus" in capsys.readouterr().err


def test_namespaces_are_separate_corpora(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(workdir, "ingest", str(workdir / "docs"), "--namespace", "team-a")
    capsys.readouterr()
    run(workdir, "query", "How much is the Pro plan?", "--namespace", "team-b")
    assert "could not find" in capsys.readouterr().out


def test_the_console_script_runs_in_a_fresh_process(workdir: Path) -> None:
    script = Path(sys.executable).with_name("ragsage")
    env = {**os.environ, "RAGSAGE_STATE": str(workdir / "env-state.json")}
    ingest = subprocess.run(
        [str(script), "ingest", str(workdir / "docs")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert ingest.returncode == 0, ingest.stderr
    assert (workdir / "env-state.json").exists()
    query = subprocess.run(
        [str(script), "search", "paid holiday days"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert query.returncode == 0 and "handbook.md" in query.stdout
