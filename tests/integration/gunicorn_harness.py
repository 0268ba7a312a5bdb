"""``ragsage api`` as production runs it: gunicorn with several workers, in a process group."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from .worker_harness import POLL

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Gunicorn:
    process: subprocess.Popen[bytes]
    url: str
    port: int
    log: Path

    def logs(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def stop(self) -> None:
        """SIGTERM to the master (a graceful stop), then SIGKILL to the group if it lingers."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)


def start_gunicorn(
    env: dict[str, str], log: Path, *, workers: int = 2, threads: int = 4, timeout: float = 90
) -> Gunicorn:
    """Start ``ragsage api`` on a free port and wait until ``/healthz`` answers."""
    port = free_port()
    ragsage = str(Path(sys.executable).with_name("ragsage"))
    argv = [ragsage, "api", "--bind", f"127.0.0.1:{port}", "--workers", str(workers)]
    with log.open("ab") as handle:
        process = subprocess.Popen(
            [*argv, "--threads", str(threads)],
            cwd=ROOT,
            env=env,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    served = Gunicorn(process=process, url=f"http://127.0.0.1:{port}", port=port, log=log)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"ragsage api exited early:\n{served.logs()}")
        try:
            if httpx.get(f"{served.url}/healthz", timeout=2).status_code == 200:
                return served
        except httpx.HTTPError:
            pass
        time.sleep(POLL)
    served.stop()
    raise RuntimeError(f"ragsage api not serving in {timeout}s:\n{served.logs()}")


def raw_request(
    port: int, request: bytes, timeout: float = 10
) -> tuple[int, dict[str, str], bytes]:
    """Send bytes as they are (no client library tidying them) and read the whole reply."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as connection:
        connection.sendall(request)
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(status_line.split()[1]), headers, body
