"""Versions in upload order, and recovered jobs ahead of the backlog.

Real worker processes on real Postgres and Redis with the test settings'
3 s lease and a watchdog every second.
"""

from __future__ import annotations

import asyncio
import re
import time

from sqlalchemy import text

from ragsage.adapters.postgres.jobs import store
from ragsage.adapters.postgres.jobs.uploads import create_upload
from ragsage.core.identity import content_hash
from ragsage.core.jobs import JobState, Upload, UploadOutcome
from ragsage.core.scopes import Scope
from ragsage.runtime import build_runtime

from .worker_harness import Deployment

ACME = "acme"


def _edition(number: int, sections: int = 40) -> bytes:
    """One version of a long manual: every chunk names its edition."""
    parts = [f"# Boiler manual, edition {number}\n"]
    for section in range(sections):
        parts.append(
            f"\n## Step {section}\n\nIn edition {number}, step {section} opens drain "
            f"D{section} and waits {number + section} seconds for the pressure to fall "
            "below one bar before the inspection hatch is unbolted and the gasket checked.\n"
        )
    return "".join(parts).encode()


def _stored(deployment: Deployment, document_id: str) -> tuple[str | None, list[int], set[str]]:
    """The document's content hash, its chunk ordinals and the editions its chunks name."""

    async def read() -> tuple[str | None, list[int], set[str]]:
        runtime = build_runtime(deployment.settings)
        try:
            async with runtime.database.session(Scope(ACME)) as session:
                digest = await session.scalar(
                    text("SELECT content_hash FROM ragsage_documents WHERE id = :id"),
                    {"id": document_id},
                )
                rows = (
                    await session.execute(
                        text(
                            "SELECT ordinal, text FROM ragsage_chunks WHERE document_id = :id "
                            "ORDER BY ordinal"
                        ),
                        {"id": document_id},
                    )
                ).all()
        finally:
            await runtime.aclose()
        editions = {found for _, chunk in rows for found in re.findall(r"edition (\d+)", chunk)}
        return digest, [ordinal for ordinal, _ in rows], editions

    return asyncio.run(read())


def test_twenty_rapid_versions_end_with_the_twentieth(deployment: Deployment) -> None:
    for _ in range(2):
        deployment.worker().start()
    versions = [_edition(number) for number in range(1, 21)]

    outcomes = [
        deployment.enqueuer.enqueue_document(ACME, "boiler.md", data=data) for data in versions
    ]
    jobs = deployment.wait(ACME, [str(o.job_id) for o in outcomes], timeout=120)

    in_order = [jobs[str(outcome.job_id)] for outcome in outcomes]
    failed = {n: job.error for n, job in enumerate(in_order, 1) if job.state is JobState.FAILED}
    assert failed == {}
    assert {job.state for job in in_order} <= {JobState.SUCCEEDED, JobState.SUPERSEDED}
    assert in_order[-1].state is JobState.SUCCEEDED
    digest, ordinals, editions = _stored(deployment, outcomes[0].document_id)
    assert digest == content_hash(versions[-1])
    assert editions == {"20"}
    assert ordinals == list(range(len(ordinals)))
    assert in_order[-1].result is not None and in_order[-1].result["chunks"] == len(ordinals)
    assert [job.version for job in in_order] == list(range(1, 21))  # numbered in upload order
    superseded = [job for job in jobs.values() if job.state is JobState.SUPERSEDED]
    assert all(job.result and job.result["superseded_by"] > job.version for job in superseded)


def test_a_job_whose_worker_died_runs_before_a_hundred_queued(deployment: Deployment) -> None:
    report = deployment.tmp / "parse.json"
    busy = {"RAGSAGE_ADAPTERS": "tests.integration.adapters:busy_parser"}
    doomed = deployment.worker(**busy, TEST_PARSE_SECONDS="60", TEST_PARSE_REPORT=str(report))
    doomed.start()
    victim = deployment.enqueuer.enqueue_document(ACME, "slow-victim.md", data=_edition(0, 3))
    victim_id = str(victim.job_id)
    deployment.wait(ACME, [victim_id], until=lambda job: job.stage == "parse")
    # A backlog of a hundred one-second jobs lands behind it.
    backlog = deployment.enqueuer.enqueue_documents(
        ACME, [Upload(f"slow-{n}.md", _edition(n, 2)) for n in range(1, 101)]
    )
    survivor = deployment.worker(**busy, TEST_PARSE_SECONDS="1", TEST_PARSE_REPORT=str(report))
    survivor.start()

    doomed.kill()
    killed_at = time.monotonic()
    deployment.wait(ACME, [victim_id], timeout=60, until=lambda job: job.attempts >= 2)
    waited = time.monotonic() - killed_at
    job = deployment.wait(ACME, [victim_id], timeout=30)[victim_id]

    # Lease (3 s) + watchdog round (1 s) + the one job the survivor was running.
    assert waited < 30, waited
    assert job.state is JobState.SUCCEEDED and job.lost_deliveries == 1
    pending = [
        deployment.enqueuer.job_status(ACME, outcome.job_id)  # type: ignore[union-attr]
        for outcome in backlog
    ]
    assert sum(1 for j in pending if j is not None and not j.state.finished) >= 50


def test_a_delivery_that_cannot_reach_the_database_keeps_its_message(
    deployment: Deployment,
) -> None:
    nowhere = "postgresql://ragsage_app@/ragsage?host=/nonexistent"
    cut_off = deployment.worker(
        RAGSAGE_DATABASE_URL=nowhere.replace("ragsage_app", "postgres"),
        RAGSAGE_APP_DATABASE_URL=nowhere,
    )
    cut_off.start()
    outcome = deployment.enqueuer.enqueue_document(ACME, "manual.md", data=_edition(1, 3))
    job_id = str(outcome.job_id)
    # Its deliveries fail to claim the job, and put the message back.
    cut_off.wait_for_log("before it could run; redelivering")
    cut_off.stop()  # a deploy: the message it holds goes back to the broker

    # A worker that reaches the database finds the message still there.
    deployment.worker().start()
    job = deployment.wait(ACME, [job_id], timeout=30)[job_id]
    assert job.state is JobState.SUCCEEDED and (job.attempts, job.deliveries) == (1, 1)


def test_a_message_the_broker_lost_is_sent_again_once_the_queue_is_empty(
    deployment: Deployment,
) -> None:
    deployment.worker().start()

    async def commit_without_message() -> UploadOutcome:
        # Committed and marked sent, but the message never reached a worker (a worker
        # killed between taking it and starting it, or a broker restart in between).
        runtime = build_runtime(deployment.settings)
        try:
            async with runtime.database.session(Scope(ACME)) as session:
                outcome = await create_upload(
                    session, Scope(ACME), Upload("lost.md", _edition(7, 3)), max_bytes=10**6
                )
                assert outcome.job_id is not None
            async with runtime.database.session(Scope(ACME)) as session:
                await store.mark_enqueued(session, outcome.job_id)
            return outcome
        finally:
            await runtime.aclose()

    lost = asyncio.run(commit_without_message())
    started = time.monotonic()

    job = deployment.wait(ACME, [str(lost.job_id)], timeout=40)[str(lost.job_id)]

    # With nothing else queued: the lease (3 s) + the longest retry pause (2 s) + a round.
    assert job.state is JobState.SUCCEEDED and time.monotonic() - started < 20
