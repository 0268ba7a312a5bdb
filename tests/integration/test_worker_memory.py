"""A job that outgrows the worker's memory limit fails once, with the reason; the worker goes on.

Real worker processes on real Postgres and Redis.
"""

from __future__ import annotations

from ragsage.core.jobs import JobState

from .worker_harness import Deployment

ACME = "acme"
MANUAL = b"# Pump manual\n\n## Valves\n\nClose valve V1 before servicing the pump housing.\n"


def test_a_job_past_the_memory_limit_fails_on_its_first_delivery(
    deployment: Deployment,
) -> None:
    calls = deployment.tmp / "hog-calls"
    worker = deployment.worker(
        RAGSAGE_ADAPTERS="tests.integration.adapters:hogging_parser",
        RAGSAGE_JOB_MEMORY_LIMIT=str(400 * 1024 * 1024),
        TEST_HOG_MB="1200",
        TEST_HOG_REPORT=str(calls),
    )
    worker.start()
    hog = deployment.enqueuer.enqueue_document(ACME, "hog.md", data=MANUAL)
    job = deployment.wait(ACME, [str(hog.job_id)], timeout=60)[str(hog.job_id)]

    assert job.state is JobState.FAILED
    assert job.error is not None and job.error.startswith("hog.md: needed more memory than")
    assert "limit of 400 MiB (RAGSAGE_JOB_MEMORY_LIMIT" in job.error
    assert (job.deliveries, job.attempts) == (1, 1)
    # The same worker goes on (its pool replaced the process) and the file is not read again.
    after = deployment.enqueuer.enqueue_document(ACME, "pump.md", data=MANUAL)
    done = deployment.wait(ACME, [str(after.job_id)], timeout=60)[str(after.job_id)]
    assert done.state is JobState.SUCCEEDED
    assert worker.process is not None and worker.process.poll() is None
    assert len(calls.read_text().splitlines()) == 1
    again = deployment.enqueuer.job_status(ACME, hog.job_id)
    assert again is not None and again.state is JobState.FAILED and again.deliveries == 1


def test_a_file_too_big_for_its_format_is_refused_before_it_is_read(
    deployment: Deployment,
) -> None:
    worker = deployment.worker(RAGSAGE_JOB_MEMORY_LIMIT=str(256 * 1024 * 1024))
    worker.start()
    dump = deployment.enqueuer.enqueue_document(
        ACME,
        "one-line.txt",
        data=b"lorem ipsum " * (1024 * 1024),  # 12 MiB, no line break
    )
    job = deployment.wait(ACME, [str(dump.job_id)], timeout=60)[str(dump.job_id)]

    assert job.state is JobState.FAILED and (job.deliveries, job.lost_deliveries) == (1, 0)
    assert job.error is not None and job.error.startswith(
        "one-line.txt: 12.0 MiB is more than a worker can read as text within its memory limit "
        "of 256 MiB (RAGSAGE_JOB_MEMORY_LIMIT): at most "
    )
    # A file of a size it can read goes through the same process.
    fine = deployment.enqueuer.enqueue_document(ACME, "pump.md", data=MANUAL * 200)
    done = deployment.wait(ACME, [str(fine.job_id)], timeout=60)[str(fine.job_id)]
    assert done.state is JobState.SUCCEEDED, done.error
