"""The ingestion worker end to end: real Postgres, real Redis, real worker processes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sqlalchemy import text

from ragsage.adapters.embedded.redis import EmbeddedRedis
from ragsage.adapters.parsing import HeuristicBackend
from ragsage.adapters.postgres import Database, PostgresConfig
from ragsage.core.identity import content_hash
from ragsage.core.jobs import JobState
from ragsage.core.scopes import Scope
from ragsage.ingestion.parse_cache import parse_cache_key
from ragsage.jobs.enqueue import Enqueuer
from ragsage.runtime import build_runtime

from ..fixtures.make_fixtures import build_all
from .redis_fixtures import closed_port
from .worker_harness import Deployment

ACME = "acme"


def _document(number: int) -> bytes:
    return (
        f"# Report {number}\n\n## Findings\n\nInspection {number} found the valve{number} "
        f"assembly sealed. The gasket{number} was replaced on day {number}.\n"
    ).encode()


def _search(deployment: Deployment, namespace: str, query: str) -> list[str]:
    async def search() -> list[str]:
        runtime = build_runtime(deployment.settings)
        try:
            result = await runtime.query_engine().search(Scope(namespace), query)
            return [hit.chunk.source for hit in result.hits]
        finally:
            await runtime.aclose()

    return asyncio.run(search())


def test_twenty_mixed_documents_are_ingested_and_searchable(
    deployment: Deployment, tmp_path: Path
) -> None:
    fixtures = build_all(tmp_path / "fixtures")
    # Image-only files need a vision model; the offline reader cannot see pixels.
    unreadable = ("encrypted", "bomb", "scan", "truncated", "fake", "garbage", "empty")
    files = [p for name, p in fixtures.items() if not name.startswith(unreadable)]
    uploads = [(p.name, p.read_bytes()) for p in files][:8]
    uploads += [(f"report-{n}.md", _document(n)) for n in range(20 - len(uploads))]
    deployment.worker().start(concurrency=2)

    outcomes = [deployment.enqueuer.enqueue_document(ACME, n, data=d) for n, d in uploads]
    jobs = deployment.wait(ACME, [str(o.job_id) for o in outcomes])

    failed = {j.filename: j.error for j in jobs.values() if j.state is not JobState.SUCCEEDED}
    assert failed == {}
    assert all(j.result and j.result["chunks"] >= 1 for j in jobs.values())
    assert all({"parse_ms", "embed_ms", "store_ms"} <= set(j.timings) for j in jobs.values())
    assert _search(deployment, ACME, "valve7 gasket7")[0] == "report-7.md"
    assert deployment.chunk_count(ACME) == sum(j.result["chunks"] for j in jobs.values())


def test_the_same_bytes_twice_make_one_document(deployment: Deployment) -> None:
    deployment.worker().start()
    first = deployment.enqueuer.enqueue_document(ACME, "a.md", data=_document(1))
    deployment.wait(ACME, [str(first.job_id)])
    again = deployment.enqueuer.enqueue_document(ACME, "copy-of-a.md", data=_document(1))
    renamed_while_pending = deployment.enqueuer.enqueue_document(ACME, "b.md", data=_document(2))
    pending_twice = deployment.enqueuer.enqueue_document(ACME, "b2.md", data=_document(2))

    assert again.duplicate and again.document_id == first.document_id
    assert again.state is JobState.SUCCEEDED and not again.needs_sending
    assert pending_twice.duplicate and pending_twice.job_id == renamed_while_pending.job_id
    deployment.wait(ACME, [str(renamed_while_pending.job_id)])
    assert deployment.chunk_count(ACME, first.document_id) == 1


def test_a_corrupt_pdf_fails_its_own_job_only(deployment: Deployment) -> None:
    deployment.worker().start()
    good = [
        deployment.enqueuer.enqueue_document(ACME, f"r{n}.md", data=_document(n)) for n in range(3)
    ]
    bad = deployment.enqueuer.enqueue_document(ACME, "broken.pdf", data=b"%PDF-1.7\n1 0 obj <<")
    jobs = deployment.wait(ACME, [str(o.job_id) for o in [*good, bad]])

    broken = jobs[str(bad.job_id)]
    assert broken.state is JobState.FAILED
    assert broken.error is not None and broken.error.startswith("broken.pdf: ")
    assert broken.attempts == 1  # a parse error is permanent: no retries
    assert all(jobs[str(o.job_id)].state is JobState.SUCCEEDED for o in good)
    assert _search(deployment, ACME, "gasket2")[0] == "r2.md"


def test_a_sigkilled_worker_job_completes_exactly_once(deployment: Deployment) -> None:
    counter = deployment.tmp / "calls"
    slow = {
        "RAGSAGE_ADAPTERS": "tests.integration.adapters:flaky",
        "TEST_EMBED_DELAY": "4",
        "TEST_EMBED_COUNTER": str(counter),
    }
    first = deployment.worker(**slow)
    first.start()
    outcome = deployment.enqueuer.enqueue_document(ACME, "slow.md", data=_document(5))
    job_id = str(outcome.job_id)
    deployment.wait(ACME, [job_id], until=lambda job: job.stage == "embed", timeout=30)
    first.kill()

    deployment.worker(**{**slow, "TEST_EMBED_DELAY": "0"}).start()
    job = deployment.wait(ACME, [job_id], timeout=60)[job_id]

    assert job.state is JobState.SUCCEEDED
    assert job.attempts == 2
    assert deployment.chunk_count(ACME) == job.result["chunks"] == 1  # type: ignore[index]


def test_transient_provider_errors_are_retried_with_attempts_recorded(
    deployment: Deployment,
) -> None:
    deployment.worker(
        RAGSAGE_ADAPTERS="tests.integration.adapters:flaky",
        TEST_EMBED_FAIL_FIRST="2",
        TEST_EMBED_COUNTER=str(deployment.tmp / "calls"),
    ).start()
    outcome = deployment.enqueuer.enqueue_document(ACME, "flaky.md", data=_document(9))
    job = deployment.wait(ACME, [str(outcome.job_id)], timeout=60)[str(outcome.job_id)]

    assert job.state is JobState.SUCCEEDED
    assert job.attempts == 3
    assert _search(deployment, ACME, "valve9")[0] == "flaky.md"


def test_an_unreachable_cache_only_slows_ingestion(deployment: Deployment) -> None:
    broken = f"redis://:secret@127.0.0.1:{closed_port()}/0"
    deployment.worker(RAGSAGE_CACHE_REDIS_URL=broken).start()
    outcome = deployment.enqueuer.enqueue_document(ACME, "c.md", data=_document(3))
    job = deployment.wait(ACME, [str(outcome.job_id)])[str(outcome.job_id)]
    assert job.state is JobState.SUCCEEDED and job.result and job.result["chunks"] == 1
    assert "secret" not in deployment.workers[0].log.read_text()


def test_a_corrupt_cache_entry_is_reparsed(
    deployment: Deployment,
    redis_server: EmbeddedRedis,
) -> None:
    import redis

    data = _document(4)
    key = parse_cache_key(ACME, content_hash(data), HeuristicBackend())
    client = redis.Redis.from_url(redis_server.url(1))
    client.set(key, "{not json")
    deployment.worker().start()
    outcome = deployment.enqueuer.enqueue_document(ACME, "d.md", data=data)
    job = deployment.wait(ACME, [str(outcome.job_id)])[str(outcome.job_id)]
    assert job.state is JobState.SUCCEEDED
    assert job.result and job.result["chunks"] == 1 and not job.result["parse_cache_hit"]
    assert client.get(key) != b"{not json"  # the good parse replaced the garbage
    client.close()


def test_a_job_committed_but_never_sent_is_sent_by_the_watchdog(deployment: Deployment) -> None:
    from ragsage.adapters.postgres.jobs.uploads import create_upload
    from ragsage.core.jobs import Upload

    async def record_without_sending() -> str:
        database = Database(
            PostgresConfig(
                dsn=deployment.settings.database_url,
                app_dsn=deployment.settings.app_database_url,
                embedding_dim=256,
            )
        )
        try:
            async with database.session(Scope(ACME)) as session:
                outcome = await create_upload(
                    session, Scope(ACME), Upload("orphan.md", _document(6)), max_bytes=10**6
                )
            return str(outcome.job_id)
        finally:
            await database.dispose()

    job_id = asyncio.run(record_without_sending())
    deployment.worker().start()
    job = deployment.wait(ACME, [job_id], timeout=30)[job_id]
    assert job.state is JobState.SUCCEEDED


def test_enqueue_rejects_bad_uploads_before_storing_anything(deployment: Deployment) -> None:
    from ragsage.core.errors import EmptyDocument, InvalidRequest

    with pytest.raises(EmptyDocument, match="empty.md: the file is empty"):
        deployment.enqueuer.enqueue_document(ACME, "empty.md", data=b"")
    with pytest.raises(InvalidRequest, match="file name"):
        deployment.enqueuer.enqueue_document(ACME, "bad\nname.md", data=b"x")
    assert deployment.chunk_count(ACME) == 0


def test_bulk_enqueue_answers_each_file_in_place_and_runs_the_good_ones(
    deployment: Deployment,
) -> None:
    from ragsage.core.errors import EmptyDocument
    from ragsage.jobs.enqueue import Upload

    deployment.worker().start()
    uploads = [
        Upload(f"bulk-{n}.md", _document(40 + n), media_type="text/markdown") for n in range(5)
    ]
    uploads.insert(2, Upload("empty.md", b""))
    uploads.append(Upload("again.md", _document(40)))  # the same bytes as bulk-0.md
    # Batches of two: refusals, duplicates and sends all cross batch boundaries.
    outcomes = deployment.enqueuer.enqueue_documents(ACME, uploads, batch_files=2)

    assert len(outcomes) == len(uploads)
    refused = outcomes[2]
    assert isinstance(refused, EmptyDocument) and "empty.md" in str(refused)
    accepted = [o for o in outcomes if not isinstance(o, Exception)]
    assert len(accepted) == 6
    fresh = [o for o in accepted if not o.duplicate]
    assert len(fresh) == 5 and accepted[-1].duplicate
    assert accepted[-1].document_id == accepted[0].document_id
    jobs = deployment.wait(ACME, [str(o.job_id) for o in fresh])
    assert all(job.state is JobState.SUCCEEDED for job in jobs.values())
    assert _search(deployment, ACME, "valve43")[0] == "bulk-3.md"


__all__ = ["Enqueuer"]


def test_a_dropped_database_connection_mid_job_is_survived(
    deployment: Deployment, db: Database
) -> None:
    slow = {
        "RAGSAGE_ADAPTERS": "tests.integration.adapters:flaky",
        "TEST_EMBED_DELAY": "2",
        "TEST_EMBED_COUNTER": str(deployment.tmp / "calls"),
    }
    deployment.worker(**slow).start()
    outcome = deployment.enqueuer.enqueue_document(ACME, "dropped.md", data=_document(8))
    job_id = str(outcome.job_id)
    deployment.wait(ACME, [job_id], until=lambda job: job.stage == "embed", timeout=30)

    async def drop_app_connections() -> int:
        async with db.owner_connection() as connection:
            killed = await connection.scalar(
                text(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE usename = 'ragsage_app' AND datname = current_database()"
                )
            )
        return int(killed or 0)

    assert asyncio.run(drop_app_connections()) >= 1
    job = deployment.wait(ACME, [job_id], timeout=60)[job_id]
    assert job.state is JobState.SUCCEEDED
    assert deployment.chunk_count(ACME) == 1


def test_sigterm_lets_the_running_job_finish(deployment: Deployment) -> None:
    worker = deployment.worker(
        RAGSAGE_ADAPTERS="tests.integration.adapters:flaky",
        TEST_EMBED_DELAY="2",
        TEST_EMBED_COUNTER=str(deployment.tmp / "calls"),
    )
    worker.start()
    outcome = deployment.enqueuer.enqueue_document(ACME, "graceful.md", data=_document(11))
    job_id = str(outcome.job_id)
    deployment.wait(ACME, [job_id], until=lambda job: job.stage == "embed", timeout=30)
    worker.stop()

    assert worker.process is not None and worker.process.returncode == 0
    job = deployment.enqueuer.job_status(ACME, job_id)
    assert job is not None and job.state is JobState.SUCCEEDED and job.attempts == 1


def test_new_bytes_under_the_same_name_replace_the_document(
    deployment: Deployment, db: Database
) -> None:
    deployment.worker().start()
    old = deployment.enqueuer.enqueue_document(ACME, "policy.md", data=_document(20))
    deployment.wait(ACME, [str(old.job_id)])
    new = deployment.enqueuer.enqueue_document(ACME, "policy.md", data=_document(21))
    deployment.wait(ACME, [str(new.job_id)])

    assert new.document_id == old.document_id and not new.duplicate
    assert _search(deployment, ACME, "valve21") == ["policy.md"]
    assert _search(deployment, ACME, "valve20") == []

    async def blobs() -> list[str]:
        async with db.session(Scope(ACME)) as session:
            return list(await session.scalars(text("SELECT content_hash FROM ragsage_blobs")))

    # The replaced version's bytes are gone; only the serving version is kept.
    assert asyncio.run(blobs()) == [content_hash(_document(21))]


def test_bytes_whose_job_failed_are_retried_on_upload(deployment: Deployment) -> None:
    deployment.worker().start()
    broken = b"%PDF-1.7\n1 0 obj <<"
    first = deployment.enqueuer.enqueue_document(ACME, "broken.pdf", data=broken)
    deployment.wait(ACME, [str(first.job_id)])
    again = deployment.enqueuer.enqueue_document(ACME, "broken.pdf", data=broken)

    assert not again.duplicate and again.job_id != first.job_id
    job = deployment.wait(ACME, [str(again.job_id)])[str(again.job_id)]
    assert job.state is JobState.FAILED


def test_a_job_that_kills_every_worker_is_failed_as_poison(deployment: Deployment) -> None:
    worker = deployment.worker(
        RAGSAGE_ADAPTERS="tests.integration.adapters:crashing", RAGSAGE_JOB_MAX_DELIVERIES="2"
    )
    worker.start()
    outcome = deployment.enqueuer.enqueue_document(ACME, "poison.md", data=_document(30))
    job = deployment.wait(ACME, [str(outcome.job_id)], timeout=90)[str(outcome.job_id)]

    assert job.state is JobState.FAILED
    assert job.error is not None and "gave up after 2 deliveries" in job.error
    assert worker.process is not None and worker.process.poll() is None  # still serving


def test_the_cli_enqueues_and_follows_jobs_run_by_ragsage_worker(
    deployment: Deployment, tmp_path: Path
) -> None:
    import subprocess
    import sys

    ragsage = str(Path(sys.executable).with_name("ragsage"))
    deployment.worker().start(command=[ragsage, "worker", "--concurrency", "1"])
    docs = tmp_path / "docs"
    docs.mkdir()
    for number in range(3):
        (docs / f"n{number}.md").write_bytes(_document(40 + number))
    (docs / "empty.txt").write_bytes(b"")

    run = subprocess.run(
        [ragsage, "enqueue", str(docs), "--namespace", ACME, "--timeout", "60"],
        env=deployment.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1, run.stdout + run.stderr  # the empty file is refused
    assert "empty.txt: the file is empty" in run.stderr
    assert "3 ingested, 1 failed" in run.stdout
    assert _search(deployment, ACME, "valve41") == ["n1.md"]
