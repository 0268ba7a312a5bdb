"""Re-indexing into another embedding model with real Postgres, Redis and workers."""

from __future__ import annotations

import asyncio
import time

import redis
from sqlalchemy import text

from ragsage.adapters.embedded.redis import EmbeddedRedis
from ragsage.core.identity import document_id_for
from ragsage.core.jobs import Job, JobState
from ragsage.core.scopes import Scope
from ragsage.query import QueryEngine
from ragsage.runtime import build_runtime
from ragsage.runtime.loop import LoopThread

from .worker_harness import POLL, Deployment

ACME = "acme"
MODEL_A, MODEL_B = "ragsage-hashing-256", "ragsage-hashing-128"
QUERY = "valve7 gasket7 inspection"


def _document(number: int, extra: str = "") -> bytes:
    # Two small sections: they join into one chunk, which records both.
    return (
        f"# Report {number}\n\n## Findings\n\nInspection {number} found the valve{number} "
        f"assembly sealed. The gasket{number} was replaced on day {number}. {extra}\n\n"
        f"## Follow-up\n\nTicket {number} was closed.\n"
    ).encode()


def _worker_env(deployment: Deployment, delay: str = "0", marker: str = "") -> dict[str, str]:
    return {
        "RAGSAGE_ADAPTERS": "tests.integration.adapters:slow_second_model",
        "TEST_EMBED_DELAY": delay,
        "TEST_REJECT_MARKER": marker,
        "TEST_EMBED_COUNTER": str(deployment.tmp / "calls"),
    }


def _ingest(deployment: Deployment, count: int, marked: int | None = None) -> list[str]:
    outcomes = [
        deployment.enqueuer.enqueue_document(
            ACME, f"r{n}.md", data=_document(n, "zeppelinmarker" if n == marked else "")
        )
        for n in range(count)
    ]
    jobs = deployment.wait(ACME, [str(o.job_id) for o in outcomes])
    assert all(job.state is JobState.SUCCEEDED for job in jobs.values())
    return [o.document_id for o in outcomes]


def _search(deployment: Deployment) -> list[str]:
    async def run() -> list[str]:
        runtime = build_runtime(deployment.settings)
        try:
            engine = await runtime.query_engine_for(Scope(ACME))
            result = await engine.search(Scope(ACME), QUERY)
            return [hit.chunk.id for hit in result.hits]
        finally:
            await runtime.aclose()

    return asyncio.run(run())


class _LongLivedSearch:
    """One runtime kept across the switch, as an API process keeps its own."""

    def __init__(self, deployment: Deployment) -> None:
        self.loop = LoopThread("reindex-test")
        self.runtime = build_runtime(deployment.settings)
        # Trust the remembered generation for the whole test: the switch must
        # be caught by the search itself, not by the memory running out.
        self.runtime.active_embedder_seconds = 3600

    def search(self) -> list[str]:
        async def call(engine: QueryEngine) -> list[str]:
            result = await engine.search(Scope(ACME), QUERY)
            return [hit.chunk.id for hit in result.hits]

        return self.loop.run(self.runtime.with_engine(Scope(ACME), call), timeout=60)

    def close(self) -> None:
        self.loop.run(self.runtime.aclose(), timeout=10)
        self.loop.stop()


def _sql(deployment: Deployment, statement: str) -> list[tuple[object, ...]]:
    async def run() -> list[tuple[object, ...]]:
        runtime = build_runtime(deployment.settings)
        try:
            async with runtime.database.session(Scope(ACME)) as session:
                return [tuple(row) for row in await session.execute(text(statement))]
        finally:
            await runtime.aclose()

    return asyncio.run(run())


def _generation(deployment: Deployment, state: str) -> dict[str, object] | None:
    rows = deployment.enqueuer.reindex.status(ACME)
    return next((row for row in rows if row["state"] == state), None)


def _wait_active(deployment: Deployment, model: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        active = _generation(deployment, "active")
        if active and active["embedding_model"] == model:
            return
        time.sleep(POLL)
    raise AssertionError(f"{model} never became active: {deployment.enqueuer.reindex.status(ACME)}")


def test_reindex_serves_the_old_model_until_the_switch_then_rolls_back_and_drops(
    deployment: Deployment, redis_server: EmbeddedRedis
) -> None:
    deployment.worker(**_worker_env(deployment, delay="0.25")).start(concurrency=2)
    _ingest(deployment, 30)
    before = _search(deployment)
    assert before and before[0].startswith(document_id_for(ACME, "r7.md"))
    held = _LongLivedSearch(deployment)
    assert held.search() == before

    # Reading pages back from Postgres must not need the parse cache.
    redis.Redis.from_url(redis_server.url(1)).flushdb()
    generation, sent = deployment.enqueuer.reindex.start(ACME, embedder="hashing", model=MODEL_B)
    assert sent == 30

    compared = 0
    late = None
    deadline = time.monotonic() + 120
    while (building := _generation(deployment, "building")) is not None:
        assert not building["failed"], building["failures"]
        assert time.monotonic() < deadline, building
        if late is None:
            assert _search(deployment) == before  # served by A alone, never a mix
            compared += 1
            if compared == 3:
                # An upload mid-way (it changes A's corpus, so comparisons stop here).
                late = deployment.enqueuer.enqueue_document(
                    ACME, "late.md", data=b"# Late note\n\nThe zucchini harvest is Friday."
                )
        time.sleep(0.2)
    assert compared >= 3 and late is not None
    _wait_active(deployment, MODEL_B)
    deployment.wait(ACME, [str(late.job_id)])

    models = _sql(
        deployment,
        "SELECT DISTINCT embedding_model FROM ragsage_chunks WHERE generation = "
        "(SELECT id FROM ragsage_generations WHERE state = 'active')",
    )
    assert models == [(MODEL_B,)]
    after = _search(deployment)
    assert after and after[0] == before[0]  # the same passage, found through B's vectors
    # A process that remembered A's embedder notices the switch on its next search.
    assert held.search() == after
    held.close()
    late_in_b = _sql(
        deployment,
        f"SELECT count(*) FROM ragsage_chunks WHERE generation = {generation} "
        f"AND document_id = '{late.document_id}'",
    )
    assert late_in_b == [(1,)]  # an upload during the re-index is in the new generation too

    results = _sql(
        deployment,
        "SELECT DISTINCT result->>'pages_from', result->>'chunks_from' FROM ragsage_jobs "
        "WHERE kind = 'reindex' AND result ? 'pages_from'",
    )
    # No document was parsed or even chunked again: the chunking is unchanged, so
    # every job embedded the active generation's rows and copied them.
    assert results == [("stored", "generation 1")]
    differing = _sql(
        deployment,
        "SELECT count(*) FROM (SELECT * FROM ragsage_chunks WHERE generation = 1) a "
        f"FULL JOIN (SELECT * FROM ragsage_chunks WHERE generation = {generation}) b "
        "USING (document_id, ordinal) WHERE a.text IS NULL OR b.text IS NULL "
        "OR a.text <> b.text OR a.embed_text <> b.embed_text OR a.lexical <> b.lexical "
        "OR a.heading_path <> b.heading_path OR a.access <> b.access "
        "OR a.metadata <> b.metadata OR vector_dims(b.embedding) <> 128",
    )
    assert differing == [(0,)]  # the same rows, keyword column included, B's vectors
    # A joined chunk's sections (kept in its metadata) are copied with it.
    joined = _sql(
        deployment,
        "SELECT count(*) FROM ragsage_chunks "
        f"WHERE generation = {generation} AND metadata ? 'ragsage:sections'",
    )
    assert joined[0][0] > 0

    _rollback(deployment)
    _wait_active(deployment, MODEL_A, timeout=5)
    # A's ranking again at the top, where the query's words match.  Below them the
    # hits are near-ties of hashed vectors, whose order the late note (in A too
    # now) moves when it joins the corpus.
    assert _search(deployment)[:2] == before[:2]
    _rollback(deployment)  # and forward again
    _wait_active(deployment, MODEL_B, timeout=5)
    freed = _drop(deployment)
    assert freed >= 30
    assert _sql(deployment, "SELECT DISTINCT embedding_model FROM ragsage_chunks") == [(MODEL_B,)]


def test_a_reindex_after_a_chunking_change_cuts_the_documents_again(
    deployment: Deployment,
) -> None:
    first = deployment.worker(**_worker_env(deployment))
    first.start(pool="solo")
    long_note = "\n\n".join(
        f"Paragraph {n} says the turbine{n} blade was balanced on shift {n} of the plant."
        for n in range(20)
    )
    deployment.wait(
        ACME,
        [
            str(deployment.enqueuer.enqueue_document(ACME, name, data=data).job_id)
            for name, data in (("long.md", f"# Turbines\n\n{long_note}\n".encode()),)
        ],
    )
    first.stop()
    # A smaller chunk size since the first ingestion: kept rows would carry the old cut.
    smaller = {"RAGSAGE_CHUNK_SIZE": "64", "RAGSAGE_CHUNK_OVERLAP": "8"}
    deployment.worker(**_worker_env(deployment), **smaller).start(pool="solo")
    generation, _ = deployment.enqueuer.reindex.start(ACME, embedder="hashing", model=MODEL_B)
    _wait_active(deployment, MODEL_B)
    results = _sql(
        deployment, "SELECT result ? 'chunks_from' FROM ragsage_jobs WHERE kind = 'reindex'"
    )
    assert results == [(False,)]
    counts = _sql(
        deployment,
        "SELECT generation, count(*) FROM ragsage_chunks GROUP BY 1 ORDER BY 1",
    )
    assert counts[0] == (1, 1) and counts[1][0] == generation and counts[1][1] > 3


def test_a_sigkilled_worker_does_not_stop_the_reindex(deployment: Deployment) -> None:
    first = deployment.worker(**_worker_env(deployment, delay="0.4"))
    first.start()
    _ingest(deployment, 8)
    deployment.enqueuer.reindex.start(ACME, embedder="hashing", model=MODEL_B)
    deadline = time.monotonic() + 60
    while (_generation(deployment, "building") or {}).get("done", 0) < 2:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    first.kill()
    deployment.worker(**_worker_env(deployment)).start()
    _wait_active(deployment, MODEL_B)

    counts = _sql(
        deployment,
        "SELECT g.embedding_model, count(c.*) FROM ragsage_generations g "
        "JOIN ragsage_chunks c ON c.generation = g.id GROUP BY 1 ORDER BY 1",
    )
    assert counts == [(MODEL_B, 8), (MODEL_A, 8)]  # every document exactly once in each


def test_a_document_failing_in_the_new_model_holds_the_switch(deployment: Deployment) -> None:
    deployment.worker(**_worker_env(deployment, marker="zeppelinmarker")).start()
    _ingest(deployment, 5, marked=3)
    before = _search(deployment)
    deployment.enqueuer.reindex.start(ACME, embedder="hashing", model=MODEL_B)

    deadline = time.monotonic() + 60
    while True:
        building = _generation(deployment, "building")
        assert building is not None
        if building["pending"] == 0:
            break
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert building["failed"] == 1 and building["done"] == 4
    (failure,) = building["failures"]  # type: ignore[misc]
    assert failure["filename"] == "r3.md" and "rejected" in failure["error"]
    assert _generation(deployment, "active")["embedding_model"] == MODEL_A  # type: ignore[index]
    assert _search(deployment) == before


def _rollback(deployment: Deployment) -> None:
    from ragsage.adapters.postgres.jobs import reindex

    async def act() -> None:
        async with deployment.enqueuer.database.session(Scope(ACME)) as session:
            await reindex.rollback(session, Scope(ACME))

    deployment.enqueuer.run(act())


def _drop(deployment: Deployment) -> int:
    from ragsage.adapters.postgres.jobs import reindex

    async def act() -> int:
        async with deployment.enqueuer.database.session(Scope(ACME)) as session:
            return await reindex.drop_previous(session)

    return int(deployment.enqueuer.run(act()))


def test_a_rollback_that_would_lose_uploads_is_refused_with_their_count(
    deployment: Deployment,
) -> None:
    import subprocess
    import sys
    from pathlib import Path

    deployment.worker().start(pool="solo")
    _ingest(deployment, 3)
    deployment.enqueuer.reindex.start(ACME, embedder="hashing", model=MODEL_B)
    _wait_active(deployment, MODEL_B)
    # Since the switch: one new document and one replaced version, written to B only.
    fresh = deployment.enqueuer.enqueue_document(ACME, "new.md", data=_document(50))
    changed = deployment.enqueuer.enqueue_document(ACME, "r1.md", data=_document(1, "revised"))
    deployment.wait(ACME, [str(fresh.job_id), str(changed.job_id)])

    ragsage = str(Path(sys.executable).with_name("ragsage"))

    def rollback(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [ragsage, "reindex", "--namespace", ACME, "--rollback", *extra],
            env=deployment.env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    refused = rollback()
    assert refused.returncode == 2, refused.stderr
    assert "would lose 2 documents uploaded or replaced since the switch" in refused.stderr
    active = _generation(deployment, "active")
    assert active is not None and active["embedding_model"] == MODEL_B  # unchanged
    forced = rollback("--force")
    assert forced.returncode == 0, forced.stderr
    _wait_active(deployment, MODEL_A, timeout=5)


def _found(deployment: Deployment, query: str) -> list[tuple[str, list[int]]]:
    async def run() -> list[tuple[str, list[int]]]:
        runtime = build_runtime(deployment.settings)
        try:
            engine = await runtime.query_engine_for(Scope(ACME))
            result = await engine.search(Scope(ACME), query)
            return [(hit.chunk.source, list(hit.chunk.page_numbers)) for hit in result.hits]
        finally:
            await runtime.aclose()

    return asyncio.run(run())


def _ingest_blind_then_see(deployment: Deployment, *others: tuple[str, bytes]) -> Job:
    """Ingest mixed.pdf (and ``others``) with no transcriber, then restart with Tesseract.

    Returns the PDF's job; its scanned page 2 was skipped, so searching finds nothing there.
    """
    from ..fixtures.make_fixtures import SCANNED_TEXT, mixed_pdf

    blind = deployment.worker(RAGSAGE_TRANSCRIBER="none")
    blind.start(pool="solo")
    scanned = deployment.enqueuer.enqueue_document(ACME, "mixed.pdf", data=mixed_pdf())
    rest = [deployment.enqueuer.enqueue_document(ACME, name, data=data) for name, data in others]
    jobs = deployment.wait(ACME, [str(o.job_id) for o in (scanned, *rest)])
    assert not [hit for hit in _found(deployment, SCANNED_TEXT) if 2 in hit[1]]
    blind.stop()
    deployment.worker(RAGSAGE_TRANSCRIBER="tesseract").start(pool="solo")
    return jobs[str(scanned.job_id)]


def test_a_scan_skipped_without_ocr_is_read_when_reindexed_with_tesseract(
    deployment: Deployment,
) -> None:
    from ..fixtures.make_fixtures import SCANNED_TEXT

    job = _ingest_blind_then_see(deployment)
    assert job.state is JobState.SUCCEEDED
    assert any("page 2 is a scan and was skipped" in w for w in job.result["warnings"])
    deployment.enqueuer.reindex.start(ACME, embedder="hashing", model=MODEL_B)
    _wait_active(deployment, MODEL_B)
    results = _sql(
        deployment,
        "SELECT result->>'pages_from', result->'pages_read_again' FROM ragsage_jobs "
        "WHERE kind = 'reindex'",
    )
    assert results == [("bytes", [2])]
    hits = _found(deployment, SCANNED_TEXT)
    assert hits and hits[0] == ("mixed.pdf", [2])


def test_ragsage_reprocess_reads_skipped_scans_in_the_active_generation(
    deployment: Deployment,
) -> None:
    import subprocess
    import sys
    from pathlib import Path

    from ..fixtures.make_fixtures import SCANNED_TEXT

    _ingest_blind_then_see(deployment, ("r1.md", _document(1)))

    ragsage = str(Path(sys.executable).with_name("ragsage"))
    run = subprocess.run(
        [ragsage, "reprocess", "--namespace", ACME, "--only-skipped-pages", "--timeout", "60"],
        env=deployment.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    # Only the PDF with a skipped scan is read again, not the Markdown note.
    assert "queued 1 document with skipped scanned pages to read again" in run.stdout
    assert "1 read again" in run.stdout
    hits = _found(deployment, SCANNED_TEXT)
    assert hits and hits[0] == ("mixed.pdf", [2])
    again = subprocess.run(
        [ragsage, "reprocess", "--namespace", ACME, "--only-skipped-pages", "--no-wait"],
        env=deployment.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "queued 0 documents" in again.stdout  # nothing is skipped any more
