"""Re-index cost against first ingestion, and query latency while it runs.

    python bench/reindex.py [--documents 500] [--workers 2]

Starts an embedded Postgres and Redis and a Celery worker, ingests generated
three-page PDFs (parse, chunk, embed, store), then
re-indexes the namespace into a hashing model of another width, which reads
the pages kept at ingestion instead of parsing again.  Prints both durations
and query p50/p95 measured idle and during the re-index.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import subprocess
import tempfile
import time
from functools import partial
from pathlib import Path

from redis import Redis

from ragsage.adapters.embedded.postgres import EmbeddedPostgres
from ragsage.adapters.embedded.redis import EmbeddedRedis
from ragsage.core.types import Scope
from ragsage.library.enqueue import Enqueuer
from ragsage.query import QueryEngine, RetrievalResult
from ragsage.runtime import build_runtime
from ragsage.settings import Settings
from worker.cli import celery_worker_argv

ROOT = Path(__file__).resolve().parents[1]
SCOPE = Scope("bench")
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


def wait_jobs(enqueuer: Enqueuer, job_ids: list[str]) -> None:
    pending = set(job_ids)
    while pending:
        for job_id in list(pending):
            job = enqueuer.job_status(SCOPE.namespace, job_id)
            if job is not None and job.state.finished:
                pending.discard(job_id)
        time.sleep(0.2)


async def query_latencies(
    settings: Settings, seconds: float, stop_when_active: str = ""
) -> list[float]:
    runtime = build_runtime(settings)
    timings: list[float] = []
    deadline = time.monotonic() + seconds
    rng = random.Random(1)
    try:
        while time.monotonic() < deadline:
            engine = await runtime.query_engine_for(SCOPE)
            if stop_when_active and engine.embedder.model == stop_when_active:
                break
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


def main() -> None:
    parser = argparse.ArgumentParser(description="re-index benchmark")
    parser.add_argument("--documents", type=int, default=500)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    rng = random.Random(9)
    documents = [(f"report-{n}.pdf", make_pdf(n, rng)) for n in range(args.documents)]
    with tempfile.TemporaryDirectory() as directory:
        base = Path(directory)
        postgres, redis = EmbeddedPostgres(base / "pg"), EmbeddedRedis(base / "redis")
        postgres.start()
        redis.start()
        worker = None
        try:
            owner = postgres.ensure_database("bench")
            settings = Settings.from_env(
                {},
                database_url=owner,
                app_database_url=owner.replace("postgres@", "ragsage_app@", 1),
                redis_url=redis.url(0),
                cache_redis_url=redis.url(1),
                embedding_dim=384,
                embedder="hashing",
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
            enqueuer = Enqueuer(settings)
            time.sleep(3)
            started = time.perf_counter()
            ids = [
                str(enqueuer.enqueue_document(SCOPE.namespace, name, data=data).job_id)
                for name, data in documents
            ]
            wait_jobs(enqueuer, ids)
            first = time.perf_counter() - started
            idle = asyncio.run(query_latencies(settings, 5))

            Redis.from_url(redis.url(1)).flushdb()  # nothing may come from the parse cache
            started = time.perf_counter()
            enqueuer.start_reindex(SCOPE.namespace, embedder="hashing", model="ragsage-hashing-256")
            during = asyncio.run(query_latencies(settings, 600, "ragsage-hashing-256"))
            while not any(
                g["state"] == "active" and g["embedding_model"] == "ragsage-hashing-256"
                for g in enqueuer.reindex_status(SCOPE.namespace)
            ):
                time.sleep(0.2)
            reindexed = time.perf_counter() - started
            enqueuer.close()

            print(f"{args.documents} three-page PDFs, {args.workers} worker processes")
            print(f"first ingestion (parse + chunk + embed + store): {first:6.1f} s")
            print(
                f"re-index from stored pages (chunk + embed + store): {reindexed:6.1f} s "
                f"({first / reindexed:.1f}x faster)"
            )
            print(
                f"query idle:           p50 {statistics.median(idle):5.1f} ms  "
                f"p95 {p(idle, 0.95):5.1f} ms  ({len(idle)} queries)"
            )
            print(
                f"query during reindex: p50 {statistics.median(during):5.1f} ms  "
                f"p95 {p(during, 0.95):5.1f} ms  ({len(during)} queries)"
            )
        finally:
            if worker is not None:
                worker.terminate()
                worker.wait(30)
            redis.stop()
            postgres.stop()


if __name__ == "__main__":
    main()
