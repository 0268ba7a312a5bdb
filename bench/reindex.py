"""Re-index cost against first ingestion, and query latency while it runs.

    python bench/reindex.py [--doc-root /usr/share/doc] [--workers 2] [--queries]
    python bench/reindex.py --documents 500      # generated three-page PDFs instead

Starts an embedded Postgres and Redis (with a parse cache) and one Celery
worker consuming both queues, uploads the corpus with the bulk upload and
times it to the last finished job; then flushes the parse cache and
re-indexes the namespace into a hashing model of another width, timed from
the start to the switch.  With ``--doc-root`` the corpus is every HTML page
under it (``bench/site_chrome.py``'s selection: on these machines the 242
Debian pages of ``bench/real_corpus.py``); without it, generated PDFs, so the
first ingestion pays a PDF parse.  Both phases print the CPU seconds of the
worker processes, Postgres and Redis.  ``--queries`` also times searches
before and during the re-index (a client on the same cores: it slows the
re-index it measures, so the durations are printed without it by default).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import subprocess
import threading
import time
from functools import partial
from pathlib import Path

import site_chrome
from real_corpus import CpuLedger, postmaster_pid, redis_pid
from redis import Redis
from sqlalchemy import Engine, create_engine, text
from stack import local_stack

from ragsage.cli.worker import celery_worker_argv
from ragsage.core.jobs import Upload
from ragsage.core.scopes import Scope
from ragsage.jobs.enqueue import Enqueuer, upload_from_path
from ragsage.query import QueryEngine, RetrievalResult
from ragsage.runtime import build_runtime
from ragsage.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
SCOPE = Scope("bench")
TARGET = "ragsage-hashing-256"
WORDS = (
    "invoice ledger refund policy warranty shipment warehouse carrier customs tariff contract "
    "clause renewal notice payment schedule audit compliance retention backup encryption"
).split()


def make_pdf(number: int, rng: random.Random) -> bytes:
    """A three-page born-digital PDF, so first ingestion pays a real parse."""
    from io import BytesIO

    from reportlab.pdfgen import canvas

    buffer = BytesIO()
    pdf = canvas.Canvas(buffer, invariant=1)
    for page in range(3):
        pdf.drawString(72, 770, f"Report {number} part {page}")
        for line in range(40):
            words = " ".join(rng.choices(WORDS, k=12))
            pdf.drawString(72, 740 - 16 * line, f"{words} ref{number}x{page}")
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def uploads(args: argparse.Namespace) -> list[Upload]:
    if args.doc_root is not None:
        pages = site_chrome.html_pages(args.doc_root)
        return [upload_from_path(path, str(path.relative_to(args.doc_root))) for path in pages]
    rng = random.Random(9)
    return [
        Upload(data=make_pdf(n, rng), filename=f"report-{n}.pdf") for n in range(args.documents)
    ]


def unfinished(engine: Engine, kind: str) -> int:
    """Jobs of ``kind`` not finished yet, in one aggregate query (polling must stay cheap)."""
    with engine.connect() as connection:
        return int(
            connection.scalar(
                text(
                    "SELECT count(*) FROM ragsage_jobs WHERE namespace = :n AND kind = :kind "
                    "AND state NOT IN ('succeeded', 'failed', 'cancelled', 'superseded')"
                ),
                {"n": SCOPE.namespace, "kind": kind},
            )
        )


def switched(engine: Engine) -> bool:
    with engine.connect() as connection:
        return bool(
            connection.scalar(
                text(
                    "SELECT count(*) FROM ragsage_generations WHERE namespace = :n "
                    "AND state = 'active' AND embedding_model = :model"
                ),
                {"n": SCOPE.namespace, "model": TARGET},
            )
        )


def stage_cpu(engine: Engine, kind: str) -> str:
    """CPU seconds the jobs of ``kind`` recorded per stage, summed over the namespace."""
    with engine.connect() as connection:
        rows = connection.execute(
            text(
                "SELECT key, sum(value::float) / 1000 FROM ragsage_jobs, "
                "jsonb_each_text(timings) WHERE namespace = :n AND kind = :kind "
                "AND key LIKE '%\\_cpu\\_ms' GROUP BY key ORDER BY 2 DESC"
            ),
            {"n": SCOPE.namespace, "kind": kind},
        )
        return ", ".join(f"{key.removesuffix('_cpu_ms')} {seconds:.1f}" for key, seconds in rows)


def wait(ledger: CpuLedger, done: partial[bool]) -> None:
    while not done():
        ledger.poll()
        time.sleep(0.2)


def cpu_line(spent: dict[str, float]) -> str:
    return (
        f"{sum(spent.values()):.1f} CPU s ("
        + ", ".join(f"{name} {seconds:.1f}" for name, seconds in spent.items())
        + ")"
    )


async def query_latencies(settings: Settings, stop: threading.Event, seconds: float) -> list[float]:
    runtime = build_runtime(settings)
    timings: list[float] = []
    deadline = time.monotonic() + seconds
    rng = random.Random(1)
    try:
        while time.monotonic() < deadline and not stop.is_set():
            query = " ".join(rng.choices(WORDS, k=3)) + f" ref{rng.randrange(500)}x1"
            started = time.perf_counter()
            await runtime.with_engine(SCOPE, partial(_search, query=query))
            timings.append((time.perf_counter() - started) * 1000)
            await asyncio.sleep(0.05)
    finally:
        await runtime.aclose()
    return timings


async def _search(engine: QueryEngine, query: str) -> RetrievalResult:
    return await engine.search(SCOPE, query)


def p(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def latency_line(label: str, values: list[float]) -> str:
    if not values:
        return f"{label}: no queries"
    return (
        f"{label}: p50 {statistics.median(values):5.1f} ms  p95 {p(values, 0.95):5.1f} ms  "
        f"({len(values)} queries)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description="re-index benchmark")
    parser.add_argument("--doc-root", type=Path, help="ingest the HTML pages under this folder")
    parser.add_argument("--documents", type=int, default=500, help="generated PDFs otherwise")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--queries", action="store_true", help="time searches during it")
    args = parser.parse_args()
    files = uploads(args)
    with local_stack("bench") as stack:
        redis_url = stack.settings.redis_url
        settings = Settings.from_env(
            stack.settings.to_env(), cache_redis_url=redis_url.rsplit("/", 1)[0] + "/1"
        )
        asyncio.run(build_runtime(settings).database.migrate())
        worker = subprocess.Popen(
            celery_worker_argv(
                f"{settings.ingest_queue},{settings.reindex_queue}",
                concurrency=args.workers,
                loglevel="WARNING",
            ),
            cwd=ROOT,
            env={**os.environ, **settings.to_env()},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        polling = create_engine(
            settings.database_url.replace("postgresql://", "postgresql+psycopg://", 1)
        )
        enqueuer = Enqueuer(settings)
        try:
            time.sleep(3)
            services = (postmaster_pid(settings.database_url), redis_pid(redis_url))
            ledger = CpuLedger(worker.pid, *services)
            started = time.perf_counter()
            enqueuer.enqueue_documents(SCOPE.namespace, files)
            wait(ledger, partial(lambda: unfinished(polling, "ingest") == 0))
            first = time.perf_counter() - started
            first_cpu = ledger.spent()
            idle: list[float] = []
            if args.queries:
                idle = asyncio.run(query_latencies(settings, threading.Event(), 5))

            Redis.from_url(settings.cache_redis_url).flushdb()  # no parse may come from it
            during: list[float] = []
            stop = threading.Event()
            client = threading.Thread(
                target=lambda: during.extend(asyncio.run(query_latencies(settings, stop, 600))),
                daemon=True,
            )
            ledger = CpuLedger(worker.pid, *services)
            started = time.perf_counter()
            enqueuer.reindex.start(SCOPE.namespace, embedder="hashing", model=TARGET)
            if args.queries:
                client.start()
            wait(ledger, partial(switched, polling))
            reindexed = time.perf_counter() - started
            reindex_cpu = ledger.spent()
            stop.set()
            if args.queries:
                client.join()

            what = f"{len(files)} {'HTML pages' if args.doc_root else 'three-page PDFs'}"
            print(f"{what}, {args.workers} worker processes")
            print(f"first ingestion: {first:6.1f} s, {cpu_line(first_cpu)}")
            print(f"  its jobs' stages, CPU s: {stage_cpu(polling, 'ingest')}")
            print(f"re-index:        {reindexed:6.1f} s, {cpu_line(reindex_cpu)}")
            print(f"  its jobs' stages, CPU s: {stage_cpu(polling, 'reindex')}")
            print(
                f"re-index / first ingestion: wall {reindexed / first:.2f}, "
                f"CPU {sum(reindex_cpu.values()) / sum(first_cpu.values()):.2f}"
            )
            if args.queries:
                print(latency_line("query idle          ", idle))
                print(latency_line("query during reindex", during))
        finally:
            enqueuer.close()
            polling.dispose()
            worker.terminate()
            worker.wait(30)


if __name__ == "__main__":
    main()
