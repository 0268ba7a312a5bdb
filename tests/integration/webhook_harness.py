"""A real webhook receiver process for the webhook tests, and real documents to upload."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from .worker_harness import POLL

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Receiver:
    """``webhook_receiver.py`` running on loopback; what it got is read from its log."""

    process: subprocess.Popen[bytes]
    url: str
    log: Path

    def records(self, path: str | None = None) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        found = [json.loads(line) for line in self.log.read_text().splitlines() if line]
        return [r for r in found if path is None or r["path"] == path]

    def delivered(self, path: str) -> list[dict[str, Any]]:
        """The events answered 200 at ``path``, bodies parsed."""
        return [
            {**record, "event": json.loads(record["body"])}
            for record in self.records(path)
            if record["status"] == 200
        ]

    def mode(self, path: str, mode: str) -> None:
        """Answer ``path`` with ``ok``, ``fail`` (500) or ``hang`` from now on."""
        reply = httpx.post(f"{self.url}/_mode{path}", content=mode, timeout=5)
        assert reply.status_code == 200

    def wait_for(self, path: str, wanted: int, timeout: float = 60) -> list[dict[str, Any]]:
        """Until ``wanted`` distinct events were answered 200 at ``path``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self.delivered(path)
            if len({r["headers"]["webhook-id"] for r in got}) >= wanted:
                return got
            time.sleep(POLL)
        raise AssertionError(f"{path}: {len(self.delivered(path))} of {wanted} events arrived")


@pytest.fixture(name="receiver")
def receiver_fixture(tmp_path: Path) -> Iterator[Receiver]:
    port_file, log = tmp_path / "receiver.port", tmp_path / "receiver.jsonl"
    script = Path(__file__).with_name("webhook_receiver.py")
    process = subprocess.Popen([sys.executable, str(script), str(port_file), str(log)])
    try:
        deadline = time.monotonic() + 20
        while not (port_file.exists() and port_file.read_text().strip()):
            assert process.poll() is None and time.monotonic() < deadline, "receiver did not start"
            time.sleep(0.05)
        yield Receiver(process, f"http://127.0.0.1:{port_file.read_text().strip()}", log)
    finally:
        process.kill()
        process.wait(10)


def real_sections(count: int, words: int = 100) -> list[tuple[str, bytes]]:
    """``count`` documents cut from the project's own docs: runs of whole paragraphs."""
    sections: list[tuple[str, bytes]] = []
    for page in sorted((ROOT / "docs").glob("*.md")):
        run: list[str] = []
        for paragraph in re.split(r"\n\s*\n", page.read_text()):
            run.append(paragraph)
            if sum(len(p.split()) for p in run) >= words:
                sections.append((f"{page.stem}-{len(sections)}.md", "\n\n".join(run).encode()))
                run = []
    assert len(sections) >= count, f"only {len(sections)} sections in docs/"
    return sections[:count]
