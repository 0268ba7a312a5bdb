"""The soak's files (real ones, generated, and ones that must fail) and its worker processes."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragsage.cli.worker import celery_worker_argv
from ragsage.core.jobs import Upload

ROOT = Path(__file__).resolve().parents[1]


def real_files(limit: int, rng: random.Random) -> list[Path]:
    """Readable real files of several kinds, a few of each, at most ``limit``."""
    pools: dict[str, list[Path]] = {"html": [], "py": [], "txt": [], "md": []}
    roots = [Path("/usr/share/doc"), *Path("/usr/lib").glob("python3*")]
    for root in roots:
        for path in root.rglob("*"):
            kind = path.suffix.lstrip(".").replace("htm", "html").replace("htmll", "html")
            if kind in pools and not path.is_symlink() and path.is_file():
                size = path.stat().st_size
                if 2_000 <= size <= 400_000:
                    pools[kind].append(path)
    chosen: list[Path] = []
    share = max(1, limit // len(pools))
    for paths in pools.values():
        rng.shuffle(paths)
        chosen.extend(sorted(paths[:share]))
    return chosen[:limit]


def generated(number: int) -> bytes:
    parts = [f"# Field report {number}\n"]
    for section in range(12):
        parts.append(
            f"\n## Site {section}\n\nCrew {number} measured the flow at well W{section} "
            f"as {number * 3 + section} litres a minute and replaced filter F{number}.\n"
        )
    return "".join(parts).encode()


def edition(number: int) -> bytes:
    return "".join(
        [f"# Versioned handbook, edition {number}\n"]
        + [
            f"\n## Part {part}\n\nEdition {number} of part {part} says to check gauge "
            f"G{part} every {number + part} hours and to log the reading.\n"
            for part in range(20)
        ]
    ).encode()


def must_fail() -> list[Upload]:
    return [
        Upload("corrupt.pdf", b"%PDF-1.7\n" + os.urandom(4096)),
        Upload("zeros.docx", bytes(8192)),
        Upload("one-line.txt", b"lorem ipsum dolor " * (90 * 1024 * 1024 // 18)),
    ]


@dataclass
class Workers:
    """Two Celery workers, each one pool process, each in its own process group."""

    env: dict[str, str]
    queues: str
    logs: Path
    mains: list[subprocess.Popen[bytes] | None] = field(default_factory=lambda: [None, None])

    def start(self, index: int) -> None:
        argv = celery_worker_argv(self.queues, concurrency=1, loglevel="WARNING")
        log = (self.logs / f"worker-{index}.log").open("ab")
        self.mains[index] = subprocess.Popen(
            [*argv, f"--hostname=soak{index}-{time.time_ns()}@%h"],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def pool_children(self, index: int) -> list[int]:
        main = self.mains[index]
        if main is None or main.poll() is not None:
            return []
        children = Path(f"/proc/{main.pid}/task/{main.pid}/children")
        try:
            return [int(pid) for pid in children.read_text().split()]
        except OSError:
            return []

    def kill_whole(self, index: int) -> None:
        main = self.mains[index]
        if main is not None and main.poll() is None:
            os.killpg(main.pid, signal.SIGKILL)
            main.wait(10)

    def stop(self) -> None:
        for index, main in enumerate(self.mains):
            if main is not None and main.poll() is None:
                main.terminate()
                try:
                    main.wait(30)
                except subprocess.TimeoutExpired:
                    self.kill_whole(index)


@dataclass
class Kill:
    """A SIGKILL and the jobs running at that moment: (attempts, lease end) each."""

    number: int
    at: float
    running: dict[str, tuple[int, Any]]
    victims: set[str] | None = None  # known once the survivors' leases were renewed
