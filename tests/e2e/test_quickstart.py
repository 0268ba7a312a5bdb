"""The README's quick start, run the way a new user runs it.

A fresh clone, ``make run`` in the background (sharing this venv, as the
Makefile allows), the printed key used over HTTP to upload and ask, then Ctrl-C
— after which nothing it started may still be running.  Its one-line failures
(a second instance, a busy port, a damaged data directory) are checked too.
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
from standardwebhooks.webhooks import Webhook

ROOT = Path(__file__).resolve().parents[2]
VENV = Path(sys.executable).parent.parent
RAGSAGE = str(Path(sys.executable).with_name("ragsage"))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def processes_under(folder: Path) -> list[psutil.Process]:
    """Processes whose working directory or command line points into ``folder``."""
    found = []
    for process in psutil.process_iter():
        try:
            inside = str(folder) in " ".join(process.cmdline()) or process.cwd().startswith(
                str(folder)
            )
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        if inside and process.pid != os.getpid():
            found.append(process)
    return found


@pytest.fixture
def clone(tmp_path: Path) -> Iterator[Path]:
    target = tmp_path / "ragsage"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(target)], check=True, timeout=120)
    yield target
    for process in processes_under(target):
        process.kill()


def wait_for(output: Path, pattern: str, process: subprocess.Popen[bytes], timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = output.read_text(errors="replace")
        if re.search(pattern, text):
            return text
        if process.poll() is not None:
            raise AssertionError(f"make run exited early:\n{text[-4000:]}")
        time.sleep(0.5)
    raise AssertionError(f"no {pattern!r} within {timeout}s:\n{output.read_text()[-4000:]}")


def test_make_run_from_a_fresh_clone(clone: Path, tmp_path: Path) -> None:
    port = free_port()
    output = tmp_path / "make-run.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGSAGE_")}
    with output.open("wb") as log:
        run = subprocess.Popen(
            ["make", "run", f"VENV={VENV}", f"PORT={port}"],
            cwd=clone,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    with contextlib.ExitStack() as stack:
        _exercise(run, output, port, env, clone, stack)
    assert "Stopped. Data kept in" in output.read_text()
    time.sleep(1)
    assert processes_under(clone) == []
    assert (clone / ".ragsage" / "stack" / "postgres" / "PG_VERSION").exists()


def _exercise(
    run: subprocess.Popen[bytes],
    output: Path,
    port: int,
    env: dict[str, str],
    clone: Path,
    stack: contextlib.ExitStack,
) -> None:
    try:
        text = wait_for(output, r"Serving on http://127\.0\.0\.1:\d+", run, timeout=300)
        key = re.search(r"(rsk_[a-z0-9]{10}_[A-Za-z0-9_-]{43}(?:_[A-Za-z0-9_-]{22})?)", text)
        assert key, text
        assert "[1]" in text and "Sources:" in text  # the example answer was cited
        # ... in prose, citing the section its sentence comes from.
        assert "## Tenancy" not in text and "Every row carries the namespace" in text
        assert "ragsage-overview.md — ragsage overview > Tenancy" in text
        # The page's one-click sign-in link carries a one-time code, never the key, in
        # the fragment only; the code is exchanged for the key once, and only once.
        link = re.search(rf"http://127\.0\.0\.1:{port}/#code=([A-Za-z0-9_=-]+)", text)
        assert link, text
        assert f"#key={key.group(1)}" not in text and "works once, within 15 minutes" in text
        page = httpx.get(f"http://127.0.0.1:{port}/", timeout=30)
        assert page.status_code == 200 and "Content-Security-Policy" in page.headers
        exchange = {"code": link.group(1)}
        signed = httpx.post(f"http://127.0.0.1:{port}/v1/sign-in", json=exchange, timeout=30)
        assert signed.status_code == 200 and signed.json() == {"key": key.group(1)}, signed.text
        again = httpx.post(f"http://127.0.0.1:{port}/v1/sign-in", json=exchange, timeout=30)
        assert again.status_code == 410, again.text
        assert again.json()["error"]["code"] == "sign_in_code_used"

        client = httpx.Client(
            base_url=f"http://127.0.0.1:{port}",
            headers={"Authorization": f"Bearer {key.group(1)}"},
            timeout=60,
        )
        stack.callback(client.close)
        # The stack sends webhooks out of the box: its own operator key, local receivers allowed.
        heard = _Receiver()
        stack.callback(heard.close)
        hook = client.post(
            "/v1/webhooks", json={"url": heard.url, "events": ["job.succeeded"]}
        ).json()
        assert hook["secret"].startswith("whsec_"), hook
        note = b"# Parking\n\nVisitors park on level minus two, bays 40 to 55."
        job = client.post("/v1/documents", files={"file": ("parking.md", note)}).json()
        deadline = time.monotonic() + 60
        while client.get(f"/v1/jobs/{job['job_id']}").json()["state"] != "succeeded":
            assert time.monotonic() < deadline
            time.sleep(0.3)
        answer = client.post("/v1/query", json={"question": "Where do visitors park?"}).json()
        assert "level minus two" in answer["answer"]
        assert answer["citations"][0]["source"] == "parking.md"
        event = heard.wait(timeout=30)
        verified = Webhook(hook["secret"]).verify(event["body"], event["headers"])
        assert verified["type"] == "job.succeeded" and verified["data"]["id"] == job["job_id"]
        # And chat tools can ask it on OpenAI's protocol.
        chat = client.post(
            "/v1/chat/completions",
            json={
                "model": "ragsage",
                "messages": [{"role": "user", "content": "Where do visitors park?"}],
            },
        ).json()
        assert "level minus two" in chat["choices"][0]["message"]["content"]

        second = subprocess.run(
            [RAGSAGE, "up", "--port", str(free_port())],
            cwd=clone,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert second.returncode == 1
        assert second.stderr.count("\n") == 1 and "already running" in second.stderr
    finally:
        os.killpg(run.pid, signal.SIGINT)  # Ctrl-C in the terminal
        run.wait(90)


def test_a_busy_port_and_a_damaged_data_directory_get_one_line_each(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGSAGE_")}
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        refused = subprocess.run(
            [RAGSAGE, "up", "--data-dir", str(tmp_path / "a"), "--port", str(taken)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1
    assert f"port {taken}" in refused.stderr and "--port N" in refused.stderr

    damaged = tmp_path / "b"
    (damaged / "postgres").mkdir(parents=True)
    (damaged / "postgres" / "PG_VERSION").write_text("not a version\n")
    broken = subprocess.run(
        [RAGSAGE, "up", "--data-dir", str(damaged), "--port", str(free_port())],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert broken.returncode == 1 and broken.stderr.count("\n") == 1, broken.stderr
    assert "move" in broken.stderr and str(damaged) in broken.stderr
    assert processes_under(damaged) == []


class _Receiver:
    """A webhook receiver on loopback that keeps the first request it gets."""

    def __init__(self) -> None:
        got: queue.Queue[dict[str, Any]] = queue.Queue()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the name http.server calls
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                got.put({"body": body, "headers": dict(self.headers.items())})
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

        self.got = got
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        # Looks at its shutdown flag every 0.05 s, not 0.5 s, so closing it is quick.
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def wait(self, timeout: float) -> dict[str, Any]:
        return self.got.get(timeout=timeout)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
