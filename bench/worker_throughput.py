"""End-to-end ingestion throughput through Redis, Celery workers and Postgres.

    python bench/worker_throughput.py [--documents 200] [--kilobytes 6]

Starts an embedded Postgres and Redis, then ingests the same generated Markdown
documents three ways, each into a fresh namespace:

* in process: the ingestion pipeline writing to Postgres directly (no queue);
* through the queue with one worker process;
* through the queue with two worker processes.

Prints documents/s and chunks/s for each and the queue's overhead as a ratio
to the in-process run.  The embedder is the offline hashing one, so model cost
is nil and the figures show ragsage's own overhead.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import subprocess
import time
from pathlib import Path

from stack import local_stack

from ragsage.cli.worker import celery_worker_argv
from ragsage.core.documents import RawSource
from ragsage.core.scopes import Scope
from ragsage.jobs.enqueue import Enqueuer
from ragsage.runtime import build_runtime
from ragsage.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
WORDS = (
    "invoice ledger refund policy warranty shipment warehouse carrier customs tariff contract "
    "clause renewal notice payment schedule audit compliance retention backup encryption access "
    "role namespace tenant query index vector lexical ranking answer citation source chunk"
).split()


def documents(count: int, kilobytes: int) -> list[tuple[str, bytes]]:
    rng = random.Random(5)
    made = []
    for number in range(count):
        parts = [f"# Report {number}\n"]
        size = 0
        section = 0
        while size < kilobytes * 1000:
            section += 1
            paragraph = " ".join(rng.choices(WORDS, k=120)).capitalize() + f" ref{number}."
            parts.append(f"\n## Section {section}\n\n{paragraph}\n")
            size += len(paragraph)
        made.append((f"report-{number}.md", "".join(parts).encode()))
    return made


async def in_process(settings: Settings, docs: list[tuple[str, bytes]]) -> tuple[float, int]:
    runtime = build_runtime(settings)
    await runtime.database.migrate()
    pipeline, scope, chunks = runtime.pipeline(), Scope("inprocess"), 0
    started = time.perf_counter()
    for name, data in docs:
        prepared = await pipeline.prepare(scope, RawSource(data, name))
        async with runtime.database.session(scope) as session:
            vectors, lexical, stored = runtime.stores(session)
            result = await pipeline.store(
                scope, prepared, vector_store=vectors, lexical_store=lexical, document_store=stored
            )
        chunks += result.chunks
    elapsed = time.perf_counter() - started
    await runtime.aclose()
    return elapsed, chunks


def through_queue(
    settings: Settings, docs: list[tuple[str, bytes]], processes: int, log: Path
) -> tuple[float, int]:
    env = {**os.environ, **settings.to_env()}
    argv = celery_worker_argv(settings.ingest_queue, concurrency=processes, loglevel="WARNING")
    worker = subprocess.Popen(
        argv,
        cwd=ROOT,
        env=env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    enqueuer = Enqueuer(settings)
    namespace = f"queue{processes}"
    try:
        time.sleep(3)  # let the pool start before the clock does
        started = time.perf_counter()
        job_ids = [
            str(enqueuer.enqueue_document(namespace, name, data=data).job_id) for name, data in docs
        ]
        chunks, pending = 0, set(job_ids)
        while pending:
            for job_id in list(pending):
                job = enqueuer.job_status(namespace, job_id)
                if job is not None and job.state.finished:
                    pending.discard(job_id)
                    chunks += int((job.result or {}).get("chunks", 0))
            time.sleep(0.05)
        return time.perf_counter() - started, chunks
    finally:
        worker.terminate()
        worker.wait(30)
        enqueuer.close()


def main() -> None:
    parser = argparse.ArgumentParser(description="queue + worker ingestion benchmark")
    parser.add_argument("--documents", type=int, default=200)
    parser.add_argument("--kilobytes", type=int, default=6)
    args = parser.parse_args()
    docs = documents(args.documents, args.kilobytes)
    megabytes = sum(len(d) for _, d in docs) / 1e6
    with local_stack("bench") as stack:
        settings, base = stack.settings, stack.directory
        print(f"{len(docs)} documents, {megabytes:.2f} MB, offline hashing embedder")
        elapsed, chunks = asyncio.run(in_process(settings, docs))
        base_rate = len(docs) / elapsed
        print(f"in process:        {base_rate:6.1f} docs/s, {chunks / elapsed:7.1f} chunks/s")
        for processes in (1, 2):
            elapsed, chunks = through_queue(settings, docs, processes, base / f"w{processes}.log")
            rate = len(docs) / elapsed
            label = f"queue, {processes} worker{'s' if processes > 1 else ' '}:"
            print(
                f"{label} {rate:6.1f} docs/s, {chunks / elapsed:7.1f} chunks/s, "
                f"{base_rate / rate:.2f}x the in-process time"
            )


if __name__ == "__main__":
    main()
