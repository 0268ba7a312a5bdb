"""Leases that busy work cannot starve, a poison count that counts deaths, a time limit that stops.

Real worker processes on real Postgres and Redis, with the test settings'
3 s lease (heartbeat 1 s, watchdog every second): any lapse of more than
three seconds would hand the job to the watchdog.
"""

from __future__ import annotations

import json
import time

import pytest

from ragsage.core.jobs import Job, JobState

from .worker_harness import Deployment

ACME = "acme"


def _manual(sections: int = 30, edition: str = "first") -> bytes:
    """A Markdown manual of many sections: several chunks, as real manuals give."""
    parts = [f"# Pump station manual, {edition} edition\n"]
    for number in range(sections):
        parts.append(
            f"\n## Procedure {number}\n\nBefore servicing pump {number}, close valve V{number} "
            f"and vent the housing. Torque the flange bolts of unit {number} to "
            f"{20 + number} newton metres in a star pattern, then check the seal for weeping "
            "over ten minutes. Record the reading in the station log with the date.\n"
        )
    return "".join(parts).encode()


def _clean_chunk_count(deployment: Deployment, data: bytes) -> int:
    """Chunks a plain worker makes of the same bytes (the busy parser only burns time)."""
    clean = deployment.worker()
    clean.start()
    try:
        outcome = deployment.enqueuer.enqueue_document("clean", "manual.md", data=data)
        job = deployment.wait("clean", [str(outcome.job_id)], timeout=60)[str(outcome.job_id)]
    finally:
        clean.stop()
    assert job.state is JobState.SUCCEEDED and job.result is not None
    return int(job.result["chunks"])


def _ran_once(job: Job) -> bool:
    return job.attempts == 1 and job.deliveries == 1 and job.lost_deliveries == 0


@pytest.mark.parametrize("how", ["python", "gil"])
def test_a_parse_holding_the_cpu_past_the_lease_is_never_requeued(
    deployment: Deployment, how: str
) -> None:
    data = _manual(edition=how)  # bytes of its own: the parse cache must not answer
    expected = _clean_chunk_count(deployment, data)
    report = deployment.tmp / "parse.json"
    busy = deployment.worker(
        RAGSAGE_ADAPTERS="tests.integration.adapters:busy_parser",
        TEST_PARSE_HOW=how,
        TEST_PARSE_SECONDS="10",
        TEST_PARSE_REPORT=str(report),
    )
    busy.start()
    outcome = deployment.enqueuer.enqueue_document(ACME, "slow-manual.md", data=data)
    job = deployment.wait(ACME, [str(outcome.job_id)], timeout=90)[str(outcome.job_id)]

    burn = json.loads(report.read_text())
    # The parse really held the CPU for more than twice the 3 s lease ...
    assert burn["burned"] >= 7
    if how == "gil":
        assert burn["frozen"] >= 6  # ... and, in one C call, froze every thread of the process

    assert job.state is JobState.SUCCEEDED, job.error
    assert _ran_once(job), job
    assert job.result is not None and job.result["chunks"] == expected
    assert job.result["parse_cache_hit"] is False
    assert deployment.chunk_count(ACME, job.document_id) == expected
    assert "re-queueing job" not in busy.log.read_text(errors="replace")


def test_transient_retries_then_a_worker_kill_are_rerun_not_poison(
    deployment: Deployment,
) -> None:
    counter = deployment.tmp / "calls"
    limits = {"RAGSAGE_JOB_MAX_DELIVERIES": "2", "TEST_EMBED_COUNTER": str(counter)}
    first = deployment.worker(
        RAGSAGE_ADAPTERS="tests.integration.adapters:flaky",
        TEST_EMBED_FAIL_FIRST="3",
        TEST_EMBED_DELAY_AFTER_FAILURES="30",
        **limits,
    )
    first.start()
    outcome = deployment.enqueuer.enqueue_document(ACME, "flaky.md", data=_manual(3))
    job_id = str(outcome.job_id)
    # Three attempts failed with a provider 503 and were retried; the fourth hangs in embed.
    deployment.wait(
        ACME, [job_id], timeout=60, until=lambda job: job.attempts == 4 and job.stage == "embed"
    )
    first.kill()

    deployment.worker(RAGSAGE_ADAPTERS="tests.integration.adapters:flaky", **limits).start()
    job = deployment.wait(ACME, [job_id], timeout=60)[job_id]

    assert job.state is JobState.SUCCEEDED, job.error
    assert (job.attempts, job.deliveries, job.lost_deliveries) == (5, 5, 1)
    assert deployment.chunk_count(ACME, job.document_id) == job.result["chunks"]  # type: ignore[index]


def test_the_soft_time_limit_stops_the_work_itself(deployment: Deployment) -> None:
    report = deployment.tmp / "parse.json"
    ticks = report.with_suffix(".ticks")
    worker = deployment.worker(
        RAGSAGE_ADAPTERS="tests.integration.adapters:busy_parser",
        TEST_PARSE_HOW="python",
        TEST_PARSE_SECONDS="60",
        TEST_PARSE_REPORT=str(report),
        RAGSAGE_JOB_SOFT_TIME_LIMIT="3",
        RAGSAGE_JOB_TIME_LIMIT="120",
    )
    worker.start()
    slow = deployment.enqueuer.enqueue_document(ACME, "slow-manual.md", data=_manual())
    job = deployment.wait(ACME, [str(slow.job_id)], timeout=30)[str(slow.job_id)]

    assert job.state is JobState.FAILED
    assert job.error == "slow-manual.md: took longer than 3 s and was stopped"
    burned = ticks.stat().st_size
    time.sleep(2)
    assert ticks.stat().st_size == burned  # the loop itself stopped, not just the wait for it
    # The same process takes the next job at once: nothing is left running in it.
    after = deployment.enqueuer.enqueue_document(ACME, "manual.md", data=_manual(2))
    done = deployment.wait(ACME, [str(after.job_id)], timeout=30)[str(after.job_id)]
    assert done.state is JobState.SUCCEEDED
    assert worker.process is not None and worker.process.poll() is None
