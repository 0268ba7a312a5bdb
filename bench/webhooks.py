"""Does a dead webhook endpoint of one tenant slow another tenant's deliveries?

Tenant A bulk-uploads the Debian HTML pages while tenant B uploads one page every
--interval seconds; each has a webhook endpoint that hears ``job.succeeded``.  B's
delivery latency (the event's commit, as the database clock stamps it, to the
moment B's receiver has read the request) is measured in three phases that
differ only in A's endpoint:

* ``healthy``: A's receiver answers 200 at once;
* ``refused``: A's URL is a loopback port nobody listens on (connection refused);
* ``hanging``: A's receiver reads the request and answers nothing for 30 s
  (each of its attempts runs into RAGSAGE_WEBHOOK_TIMEOUT).

    python bench/webhooks.py [--doc-root /usr/share/doc] [--b-uploads 40] [--processes 2]

One embedded Postgres and Redis, one real worker (its main process sends the
webhooks, production settings otherwise), one receiver thread in this process;
each phase has namespaces of its own.  Prints B's p50/p95/max per phase and the
ratio to the healthy phase (the promise: at most 2x).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import tempfile
import threading
import time
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import site_chrome
from sqlalchemy import text
from stack import Worker, local_stack, migrate

from ragsage.adapters.sealing import new_operator_key
from ragsage.core.jobs import Upload
from ragsage.core.scopes import Scope
from ragsage.jobs.enqueue import Enqueuer
from ragsage.runtime import build_database
from ragsage.runtime.management import build_management
from ragsage.settings import Settings

HANG_SECONDS = 30.0


class Receiver:
    """Records when each event reached each path; ``/hang/...`` paths answer nothing."""

    def __init__(self) -> None:
        self.arrivals: dict[str, dict[str, float]] = {}
        self.hung = 0
        lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - the name http.server calls
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                arrived = time.time()
                if self.path.startswith("/hang/"):
                    with lock:
                        owner.hung += 1
                    time.sleep(HANG_SECONDS)
                    return
                event = json.loads(body)
                stamped = datetime.fromisoformat(event["timestamp"]).timestamp()
                with lock:
                    owner.arrivals.setdefault(self.path, {})[event["id"]] = arrived - stamped
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def latencies(self, path: str) -> list[float]:
        return list(self.arrivals.get(path, {}).values())


def closed_port() -> int:
    """A loopback port with nothing listening (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def add_endpoint(settings: Settings, namespace: str, url: str) -> None:
    async def create() -> None:
        database = build_database(settings)
        try:
            await build_management(database, settings).webhooks.create(
                Scope(namespace), url=url, events=["job.succeeded"]
            )
        finally:
            await database.dispose()

    asyncio.run(create())


def upload(path: Path, doc_root: Path, tag: str) -> Upload:
    # Distinct bytes per phase, so no upload is a duplicate of an earlier phase's.
    data = path.read_bytes() + f"\n<!-- {tag} -->\n".encode()
    return Upload(filename=str(path.relative_to(doc_root)), data=data, media_type="text/html")


def run_phase(
    label: str,
    a_url: str,
    settings: Settings,
    enqueuer: Enqueuer,
    receiver: Receiver,
    pages: list[Path],
    args: argparse.Namespace,
) -> list[float]:
    a, b = f"a-{label}", f"b-{label}"
    add_endpoint(settings, a, a_url)
    add_endpoint(settings, b, f"{receiver.url}/{b}")
    backlog = [upload(path, args.doc_root, label) for path in pages]
    bulk = threading.Thread(target=enqueuer.enqueue_documents, args=(a, backlog), daemon=True)
    bulk.start()
    time.sleep(2.0)  # A's events are flowing (or failing) before B's first upload
    b_pages = pages[-args.b_uploads :]
    for path in b_pages:
        enqueuer.enqueue_document(
            b, str(path.relative_to(args.doc_root)), data=upload(path, args.doc_root, label).data,
            job_class="interactive",
        )  # fmt: skip
        time.sleep(args.interval)
    deadline = time.monotonic() + 600
    while len(receiver.latencies(f"/{b}")) < len(b_pages):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{label}: B's events did not all arrive")
        time.sleep(0.2)
    bulk.join()
    print(f"{label:8} A's deliveries when B's last arrived: {a_attempts(settings, a)}")
    return receiver.latencies(f"/{b}")


def a_attempts(settings: Settings, namespace: str) -> str:
    """How A's deliveries stand at the end of a phase: states and attempts made."""

    async def read() -> str:
        database = build_database(settings)
        try:
            async with database.session(Scope(namespace)) as session:
                rows = (
                    await session.execute(
                        text(
                            "SELECT state, count(*), sum(attempts) "
                            "FROM ragsage_webhook_deliveries GROUP BY state ORDER BY state"
                        )
                    )
                ).all()
        finally:
            await database.dispose()
        return ", ".join(f"{n} {state} ({tries} attempts)" for state, n, tries in rows)

    return asyncio.run(read())


def describe(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[max(0, int(round(0.95 * len(ordered))) - 1)]
    return (
        f"p50 {statistics.median(ordered) * 1000:7.1f} ms  p95 {p95 * 1000:7.1f} ms  "
        f"max {ordered[-1] * 1000:7.1f} ms  (n={len(ordered)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--doc-root", type=Path, default=Path("/usr/share/doc"))
    parser.add_argument("--b-uploads", type=int, default=40)
    parser.add_argument("--interval", type=float, default=0.5, help="seconds between B's uploads")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument(
        "--phases", default="healthy,refused,hanging", help="which phases, in order"
    )
    parser.add_argument("--show", action="store_true", help="print B's latencies in order")
    args = parser.parse_args()
    pages = site_chrome.html_pages(args.doc_root)
    receiver = Receiver()
    with (
        tempfile.TemporaryDirectory() as logs,
        local_stack(
            "webhooks", sealing_keys=new_operator_key(), webhook_allow_private=True
        ) as stack,
    ):
        settings = stack.settings
        migrate(settings)
        worker = Worker(settings, args.processes, Path(logs) / "worker.log")
        enqueuer = Enqueuer(settings)
        results: dict[str, list[float]] = {}
        try:
            urls = {
                "healthy": f"{receiver.url}/a-healthy",
                "refused": f"http://127.0.0.1:{closed_port()}/a-refused",
                "hanging": f"{receiver.url}/hang/a-hanging",
            }
            for label in args.phases.split(","):
                results[label] = run_phase(
                    label, urls[label], settings, enqueuer, receiver, pages, args
                )
                print(f"{label:8} B: {describe(results[label])}", flush=True)
                if args.show:
                    print(" ".join(f"{v * 1000:.0f}" for v in results[label]))
        finally:
            enqueuer.close()
            worker.stop()
    if "healthy" not in results:
        return
    base = results["healthy"]
    print(f"\nA's hanging endpoint was sent {receiver.hung} requests, none answered")
    print(
        f"A uploaded {len(pages)} pages per phase; B uploaded {args.b_uploads}, "
        f"one per {args.interval} s"
    )
    for label in (name for name in results if name != "healthy"):
        ratio_p50 = statistics.median(results[label]) / statistics.median(base)
        ratio_max = max(results[label]) / max(base)
        print(f"{label:8} vs healthy: p50 x{ratio_p50:.2f}, max x{ratio_max:.2f}")


if __name__ == "__main__":
    main()
