"""What choosing a job's turn costs a worker, beside claiming a job it was told to run.

    python bench/turn_cost.py [--doc-root /usr/share/doc] [--namespaces 1]

The Debian HTML pages are uploaded (no worker runs) into ``--namespaces``
namespaces, page by page in turn, so every namespace has a backlog.  Then,
in one process, half the queued jobs are claimed the way a worker does now
(``claim_next``: the privileged ``ragsage_next_job`` picks whose turn it is,
then the claim) and the other half by id (``claim``, as a worker did before
fair turns).  Printed: the upload time, and each way's milliseconds per job.
Nothing else runs meanwhile; run it alone.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from uuid import UUID

import site_chrome
from sqlalchemy import create_engine, text
from stack import local_stack, migrate

from ragsage.core.scopes import Scope
from ragsage.jobs import runner
from ragsage.jobs.enqueue import Enqueuer
from ragsage.runtime import build_runtime
from ragsage.settings import Settings


async def claims(settings: Settings, jobs: dict[UUID, str]) -> tuple[float, float, int]:
    """(ms per job by turn, ms per job by id, jobs each way)."""
    runtime = build_runtime(settings)
    try:
        half = len(jobs) // 2
        taken: set[UUID] = set()
        started = time.perf_counter()
        for _ in range(half):
            claimed = await runner.claim_next(runtime)
            if not isinstance(claimed, runner.Claimed):
                raise RuntimeError(f"no job was claimed: {claimed}")
            taken.add(claimed.job.id)
        by_turn = time.perf_counter() - started
        rest = [job for job in jobs if job not in taken][:half]
        started = time.perf_counter()
        for job in rest:
            claimed = await runner.claim(runtime, Scope(jobs[job]), job)
            if not isinstance(claimed, runner.Claimed):
                raise RuntimeError(f"job {job} was not claimed: {claimed}")
        by_id = time.perf_counter() - started
        return by_turn / half * 1000, by_id / half * 1000, half
    finally:
        await runtime.aclose()


def analyze(owner_url: str) -> None:
    engine = create_engine(owner_url.replace("postgresql://", "postgresql+psycopg://"))
    with engine.connect() as connection:
        connection.execute(text("ANALYZE"))
        connection.commit()
    engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--doc-root", type=Path, default=Path("/usr/share/doc"))
    parser.add_argument("--namespaces", type=int, default=1)
    parser.add_argument("--analyze", action="store_true", help="ANALYZE the tables before claiming")
    args = parser.parse_args()
    pages = site_chrome.html_pages(args.doc_root)
    with local_stack("turn_cost") as stack:
        migrate(stack.settings)
        enqueuer = Enqueuer(stack.settings)
        jobs: dict[UUID, str] = {}
        started = time.perf_counter()
        try:
            for index, page in enumerate(pages):
                namespace = f"tenant-{index % args.namespaces}"
                outcome = enqueuer.enqueue_document(
                    namespace, str(page.relative_to(args.doc_root)), data=page.read_bytes()
                )
                if outcome.job_id is not None and not outcome.duplicate:
                    jobs[outcome.job_id] = namespace
        finally:
            enqueuer.close()
        uploaded = time.perf_counter() - started
        if args.analyze:
            analyze(stack.owner_url)
        by_turn, by_id, each = asyncio.run(claims(stack.settings, jobs))
    print(
        f"{len(jobs)} jobs in {args.namespaces} namespaces, uploaded one by one in "
        f"{uploaded:.2f} s ({uploaded / len(pages) * 1000:.1f} ms a page)"
    )
    print(
        f"claim by turn (ragsage_next_job, then the claim): {by_turn:.2f} ms a job; "
        f"claim by id: {by_id:.2f} ms a job ({each} jobs each way)"
    )


if __name__ == "__main__":
    main()
