"""One key floods /v1/search; does another namespace's search slow down?

    python bench/rate_limits.py [--doc-root /usr/share/doc] [--seconds 20] [--offered 200]

The Debian HTML pages are ingested into namespace ``quiet`` (all of them) and
``flood`` (the first 30) through the queue.  The API runs under gunicorn (2
workers x 8 threads), once per limit in --limits (the flooding key's searches;
every key has it).  After ANALYZE and one search of every query (a running
service has both its planner statistics and its queries' term counts), ``quiet``
searches at a steady --quiet-rate (default 10 a second), sentences from its own
pages: alone for half of --seconds, then for --seconds while one ``flood`` key
sends searches from 8 connections at --offered requests/s in all (at least 10x
its limit) from a process of its own, then alone again for half of --seconds.
Printed: ``quiet``'s p50/p95 both times and their ratio, the flood's answers
by status, and whether every refusal carried Retry-After and the RateLimit-*
headers.  Client, server and database share the machine's two cores.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import socket
import statistics
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from multiprocessing.synchronize import Event as EventType
from pathlib import Path

import httpx
import site_chrome
from sqlalchemy import create_engine, text
from stack import local_stack, migrate, serve_api

from ragsage.adapters.postgres.keys import create_key
from ragsage.cli.worker import celery_worker_argv
from ragsage.core.keys import Role
from ragsage.core.scopes import Scope
from ragsage.jobs.enqueue import Enqueuer, upload_from_path
from ragsage.query import RetrievalOptions
from ragsage.runtime import build_database, build_runtime
from ragsage.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
HEADERS = ("Retry-After", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset")


def ingest(settings: Settings, namespaces: dict[str, list[Path]], doc_root: Path) -> None:
    worker = subprocess.Popen(
        celery_worker_argv(settings.ingest_queue, concurrency=2, loglevel="WARNING"),
        cwd=ROOT,
        env={**os.environ, **settings.to_env()},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    enqueuer = Enqueuer(settings)
    engine = create_engine(settings.database_url.replace("postgresql://", "postgresql+psycopg://"))
    try:
        for namespace, pages in namespaces.items():
            enqueuer.enqueue_documents(
                namespace, (upload_from_path(p, str(p.relative_to(doc_root))) for p in pages)
            )
        while True:  # one count per tick
            with engine.connect() as connection:
                open_jobs = connection.scalar(
                    text("SELECT count(*) FROM ragsage_jobs WHERE state IN ('queued', 'running')")
                )
            if not open_jobs:
                break
            time.sleep(0.5)
    finally:
        worker.terminate()
        worker.wait(60)
        enqueuer.close()
        engine.dispose()


def sentences(settings: Settings, namespace: str, count: int, rng: random.Random) -> list[str]:
    engine = create_engine(settings.database_url.replace("postgresql://", "postgresql+psycopg://"))
    with engine.connect() as connection:
        texts = list(
            connection.scalars(
                text("SELECT text FROM ragsage_chunks WHERE namespace = :n"), {"n": namespace}
            )
        )
    engine.dispose()
    found = []
    for body in rng.sample(texts, min(count, len(texts))):
        words = body.split()
        start = rng.randrange(max(1, len(words) - 8))
        found.append(" ".join(words[start : start + 8]))
    return found


def key_for(settings: Settings, namespace: str) -> str:
    async def make() -> str:
        database = build_database(settings)
        try:
            async with database.session(Scope(namespace)) as session:
                return (await create_key(session, Scope(namespace), Role.READ, "bench")).key
        finally:
            await database.dispose()

    return asyncio.run(make())


def paced_searches(
    url: str, key: str, queries: list[str], rate: float, seconds: float
) -> tuple[list[float], Counter[int]]:
    """Searches at a steady ``rate`` for ``seconds``: each one's latency (ms), and statuses."""
    latencies: list[float] = []
    statuses: Counter[int] = Counter()
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}) as client:
        started = time.perf_counter()
        sent = 0
        while time.perf_counter() - started < seconds:
            due = started + sent / rate
            pause = due - time.perf_counter()
            if pause > 0:
                time.sleep(pause)
            query = queries[sent % len(queries)]
            began = time.perf_counter()
            reply = client.post("/v1/search", json={"query": query, "top_k": 10})
            latencies.append((time.perf_counter() - began) * 1000)
            statuses[reply.status_code] += 1
            sent += 1
    return latencies, statuses


def start_flood(
    url: str, key: str, queries: list[str], offered: float, seconds: float
) -> Callable[[], tuple[Counter[int], int, float]]:
    """8 connections sending ``offered`` searches/s in all, from now for ``seconds``.

    The flood runs in a process of its own, as a client on another machine
    would: its threads never hold the quiet client's GIL.  This returns once
    the flood's connections are open; call the result for the flood's
    statuses, its refusals without the headers, and the rate it sent.
    """
    context = multiprocessing.get_context("spawn")
    results: multiprocessing.Queue[tuple[dict[int, int], int, float]] = context.Queue()
    ready = context.Event()
    process = context.Process(
        target=_flood_process, args=(url, key, queries, offered, seconds, ready, results)
    )
    process.start()
    if not ready.wait(60):
        process.kill()
        raise RuntimeError("the flood's process did not start")

    def outcome() -> tuple[Counter[int], int, float]:
        statuses, missing, sent_rate = results.get(timeout=seconds + 120)
        process.join(30)
        return Counter(statuses), missing, sent_rate

    return outcome


def _flood_process(
    url: str,
    key: str,
    queries: list[str],
    offered: float,
    seconds: float,
    ready: EventType,
    results: multiprocessing.Queue[tuple[dict[int, int], int, float]],
) -> None:
    statuses: Counter[int] = Counter()
    missing = 0
    guard = threading.Lock()
    host, port = url.removeprefix("http://").split(":")

    def one(connection: int) -> None:
        nonlocal missing
        rate = offered / 8
        bodies = [json.dumps({"query": q}).encode() for q in queries]
        link = _Lean(host, int(port), key)
        opened.wait()
        started = time.perf_counter()
        sent = 0
        while time.perf_counter() - started < seconds:
            pause = started + sent / rate - time.perf_counter()
            if pause > 0:
                time.sleep(pause)
            status, headers = link.post("/v1/search", bodies[(sent + connection) % len(bodies)])
            sent += 1
            with guard:
                statuses[status] += 1
                if status == 429 and not all(h.lower() in headers for h in HEADERS):
                    missing += 1
        link.close()

    opened = threading.Barrier(9)
    threads = [threading.Thread(target=one, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    opened.wait()
    ready.set()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    results.put((dict(statuses), missing, sum(statuses.values()) / (time.perf_counter() - started)))


class _Lean:
    """A keep-alive HTTP/1.1 client of a few lines: a flood should spend little CPU sending."""

    def __init__(self, host: str, port: int, key: str) -> None:
        self.host, self.port = host, port
        self.head = (
            f"Host: {host}:{port}\r\nAuthorization: Bearer {key}\r\n"
            "Content-Type: application/json\r\n"
        ).encode()
        self._open()

    def _open(self) -> None:
        self.sock = socket.create_connection((self.host, self.port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = self.sock.makefile("rb")

    def post(self, path: str, body: bytes) -> tuple[int, dict[str, str]]:
        request = (
            f"POST {path} HTTP/1.1\r\n".encode()
            + self.head
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        self.sock.sendall(request)
        line = self.reader.readline()
        if not line:  # the server closed the idle connection: once more on a new one
            self.close()
            self._open()
            self.sock.sendall(request)
            line = self.reader.readline()
        status = int(line.split()[1])
        headers: dict[str, str] = {}
        while (line := self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        self.reader.read(int(headers.get("content-length", "0")))
        if headers.get("connection", "").lower() == "close":
            self.close()
            self._open()
        return status, headers

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--doc-root", type=Path, default=Path("/usr/share/doc"))
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--offered", type=float, default=200.0)
    parser.add_argument(
        "--limits",
        default="20/second,10/second",
        help="the flooding key's search limit; a comma-separated list runs each in turn",
    )
    parser.add_argument("--logs", type=Path, default=Path(".ragsage/bench-rate-limits"))
    parser.add_argument(
        "--quiet-rate", type=float, default=10.0, help="the quiet namespace's searches a second"
    )
    parser.add_argument("--overhead-searches", type=int, default=1000)
    args = parser.parse_args()
    args.logs.mkdir(parents=True, exist_ok=True)
    rng = random.Random(5)
    pages = site_chrome.html_pages(args.doc_root)
    with local_stack("rate_limits") as stack:
        settings = replace(
            stack.settings,
            cache_redis_url=stack.settings.redis_url.rsplit("/", 1)[0] + "/1",
        )
        migrate(settings)
        print(f"ingesting {len(pages)} pages into 'quiet' and {min(30, len(pages))} into 'flood'")
        ingest(settings, {"quiet": pages, "flood": pages[:30]}, args.doc_root)
        quiet_queries = sentences(settings, "quiet", 400, rng)
        flood_queries = sentences(settings, "flood", 200, rng)
        # A running service has vacuumed tables, planner statistics and its queries' term counts;
        # a database just filled has neither yet.  Give it both before measuring.
        analyze = create_engine(
            settings.database_url.replace("postgresql://", "postgresql+psycopg://"),
            isolation_level="AUTOCOMMIT",
        )
        with analyze.connect() as connection:
            connection.execute(text("VACUUM ANALYZE"))
        analyze.dispose()
        asyncio.run(_warm(settings, {"quiet": quiet_queries, "flood": flood_queries}))
        quiet_key = key_for(settings, "quiet")
        overhead(settings, args, quiet_key, quiet_queries)
        for limit in filter(None, args.limits.split(",")):
            measure(
                replace(settings, rate_limit_search_key=limit),
                args,
                limit,
                quiet_key,
                key_for(settings, "flood"),  # a fresh key: no count from the last round
                (quiet_queries, flood_queries),
            )


def overhead(settings: Settings, args: argparse.Namespace, key: str, queries: list[str]) -> None:
    """Search p50 with the limits checked against none, two servers asked in turn.

    The limits are set high enough that this sequential client never meets
    them: what is measured is the cost of counting, two Redis calls a search.
    """
    counted = replace(
        settings,
        rate_limit_search_key="100000/second",
        rate_limit_search_namespace="100000/second",
    )
    unlimited = replace(
        settings,
        rate_limit_search_key="none",
        rate_limit_search_namespace="none",
        rate_limit_other_key="none",
        rate_limit_other_namespace="none",
    )
    with_limits, url_with = serve_api(counted, args.logs / "api-limits.log")
    without, url_without = serve_api(unlimited, args.logs / "api-nolimits.log")
    took: dict[str, list[float]] = {"with": [], "without": []}
    try:
        clients = {
            name: httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"})
            for name, url in (("with", url_with), ("without", url_without))
        }
        for round_ in range(2 + args.overhead_searches):
            order = ("with", "without") if round_ % 2 else ("without", "with")
            for name in order:
                began = time.perf_counter()
                reply = clients[name].post(
                    "/v1/search", json={"query": queries[round_ % len(queries)], "top_k": 10}
                )
                assert reply.status_code == 200, reply.text
                if round_ >= 2:  # the first rounds open connections
                    took[name].append((time.perf_counter() - began) * 1000)
        for client in clients.values():
            client.close()
    finally:
        for server in (with_limits, without):
            server.terminate()
            server.wait(30)
    on, off = statistics.median(took["with"]), statistics.median(took["without"])
    # Each round asks both servers back to back: the median of the rounds' differences
    # is not moved by the machine's speed drifting over the run, as the two p50s are.
    paired = statistics.median(a - b for a, b in zip(took["with"], took["without"], strict=True))
    print(
        f"search p50 over HTTP, {len(took['with'])} searches each, asked in turn: with "
        f"limits counted {on:.2f} ms, without {off:.2f} ms: {on - off:+.2f} ms; "
        f"median of the paired differences {paired:+.2f} ms"
    )


def measure(
    settings: Settings,
    args: argparse.Namespace,
    limit: str,
    quiet_key: str,
    flood_key: str,
    queries: tuple[list[str], list[str]],
) -> None:
    quiet_queries, flood_queries = queries
    server, url = serve_api(settings, args.logs / "api.log")
    try:
        paced_searches(url, quiet_key, quiet_queries, args.quiet_rate, 3)  # warm both workers
        # Half the unloaded samples before the flood and half after it: a drift of
        # the machine's speed during the run moves both sides alike.
        before, before_statuses = paced_searches(
            url, quiet_key, quiet_queries, args.quiet_rate, args.seconds / 2
        )
        flooding = start_flood(url, flood_key, flood_queries, args.offered, args.seconds)
        during, during_statuses = paced_searches(
            url, quiet_key, quiet_queries, args.quiet_rate, args.seconds
        )
        statuses, missing, sent_rate = flooding()
        after, after_statuses = paced_searches(
            url, quiet_key, quiet_queries, args.quiet_rate, args.seconds / 2
        )
        alone, alone_statuses = before + after, before_statuses + after_statuses
    finally:
        server.terminate()
        server.wait(30)
    p95_alone, p95_during = percentile(alone, 0.95), percentile(during, 0.95)
    print(
        f"flood: one key, 8 connections, {sent_rate:.0f} requests/s sent for {args.seconds:.0f} s"
    )
    print(f"  limit {limit} per key; answers: {dict(sorted(statuses.items()))}")
    print(f"  refusals without Retry-After and RateLimit-* headers: {missing}")
    print(
        f"  quiet namespace, {args.quiet_rate} searches/s, answers {dict(alone_statuses)} alone, "
        f"{dict(during_statuses)} during the flood"
    )
    print(
        f"  quiet: alone p50 {statistics.median(alone):.1f} ms "
        f"p95 {p95_alone:.1f} ms; during the flood p50 {statistics.median(during):.1f} ms "
        f"p95 {p95_during:.1f} ms = {p95_during / p95_alone:.2f} x alone"
    )


async def _warm(settings: Settings, queries: dict[str, list[str]]) -> None:
    runtime = build_runtime(settings)
    try:
        for namespace, batch in queries.items():
            for query in batch:
                await runtime.query_engine().search(
                    Scope(namespace), query, RetrievalOptions(top_k=10)
                )
    finally:
        await runtime.aclose()


if __name__ == "__main__":
    main()
