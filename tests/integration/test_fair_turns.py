"""Whose turn it is: the fair order of jobs across namespaces, on real Postgres and a real worker.

The first tests claim jobs in this process, the way a free worker slot does
(``claim_next``), and leave them running or finish them to stand for busy or
free slots; the order they come out in is the order the design promises.  The
last one runs a real worker process with one slot behind the real broker.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from pathlib import Path
from uuid import UUID

import pytest
from sqlalchemy import text

from ragsage.adapters.postgres.generations import live_generations
from ragsage.adapters.postgres.jobs import reindex, store
from ragsage.adapters.postgres.jobs.uploads import create_upload
from ragsage.adapters.postgres.namespaces import own_overrides, set_overrides
from ragsage.core.jobs import JobState, Upload
from ragsage.core.scopes import Scope
from ragsage.jobs.runner import Claimed, claim_next
from ragsage.jobs.watchdog import reclaim
from ragsage.runtime import Runtime, build_runtime

from .worker_harness import ROOT, Deployment

A, B, C = Scope("tenant-a"), Scope("tenant-b"), Scope("tenant-c")


def _report(tag: str) -> bytes:
    return (
        f"# Inspection report {tag}\n\n## Findings\n\nValve {tag} was opened and its gasket "
        f"checked; pressure held for ten minutes at inspection {tag}.\n"
    ).encode()


@pytest.fixture
async def runtime(deployment: Deployment) -> AsyncIterator[Runtime]:
    built = build_runtime(deployment.settings)
    try:
        yield built
    finally:
        await built.aclose()


async def _upload(runtime: Runtime, scope: Scope, tag: str, job_class: str = "bulk") -> UUID:
    async with runtime.database.session(scope) as session:
        outcome = await create_upload(
            session, scope, Upload(f"{tag}.md", _report(tag)), max_bytes=10**6, job_class=job_class
        )
    assert outcome.job_id is not None and not outcome.duplicate
    return outcome.job_id


async def _take(runtime: Runtime) -> Claimed:
    """A free slot takes its turn; the job stays running until :func:`_finish`."""
    claimed = await claim_next(runtime)
    assert isinstance(claimed, Claimed), claimed
    return claimed


async def _finish(runtime: Runtime, claimed: Claimed) -> None:
    async with runtime.database.session(claimed.scope) as session:
        await store.succeed(session, claimed.job.id, timings={}, result={})


async def _one_slot_order(runtime: Runtime, count: int) -> list[UUID]:
    """The jobs one worker slot runs, in order: take, finish, take the next."""
    order = []
    for _ in range(count):
        claimed = await _take(runtime)
        order.append(claimed.job.id)
        await _finish(runtime, claimed)
    return order


async def _set_slots(runtime: Runtime, scope: Scope, slots: int | None) -> None:
    async with runtime.database.owner_connection() as owner:
        variable = runtime.database.config.isolation_variable
        await set_overrides(owner, variable, scope, {"job_slots": slots})


async def test_other_tenants_and_an_interactive_upload_go_before_the_backlog(
    runtime: Runtime,
) -> None:
    backlog = [await _upload(runtime, A, f"a-{n}") for n in range(5)]
    first = await _take(runtime)  # the backlog has started when the others arrive
    assert first.job.id == backlog[0]
    b = await _upload(runtime, B, "b-1")
    c = await _upload(runtime, C, "c-1", job_class="interactive")
    a_now = await _upload(runtime, A, "a-urgent", job_class="interactive")
    await _finish(runtime, first)

    # B and C have not had a turn yet; then A, whose interactive upload comes
    # before the rest of its own backlog, which keeps its upload order.
    assert await _one_slot_order(runtime, 7) == [b, c, a_now, *backlog[1:]]
    assert await claim_next(runtime) is None  # nothing left: the turn is spent on nothing


async def test_turns_rotate_between_two_backlogs(runtime: Runtime) -> None:
    a_jobs = [await _upload(runtime, A, f"a-{n}") for n in range(3)]
    b_jobs = [await _upload(runtime, B, f"b-{n}") for n in range(3)]

    order = await _one_slot_order(runtime, 6)

    assert order == [a_jobs[0], b_jobs[0], a_jobs[1], b_jobs[1], a_jobs[2], b_jobs[2]]


async def test_reindex_work_yields_to_the_namespaces_new_uploads(runtime: Runtime) -> None:
    async with runtime.database.session(A) as session:
        await session.execute(
            text(
                "INSERT INTO ragsage_generations (namespace, id, embedding_model, "
                "embedding_dim, state, embedder) VALUES (:ns, 2, 'ragsage-hashing-128', 128, "
                "'building', 'hashing')"
            ),
            {"ns": A.namespace},
        )
        (generation,) = [g for g in await live_generations(session) if g.id == 2]
        rebuilds = [
            await reindex.queue_document(
                session,
                A,
                generation,
                document_id=f"doc-{n}",
                content_hash=f"hash-{n}",
                filename=f"old-{n}.md",
                media_type="text/markdown",
                metadata={},
            )
            for n in range(2)
        ]
    fresh = await _upload(runtime, A, "fresh")

    assert await _one_slot_order(runtime, 3) == [fresh, *rebuilds]
    async with runtime.database.session(A) as session:
        classes = [(await store.get_job(session, job)) for job in (fresh, *rebuilds)]
    assert [job.job_class for job in classes if job] == ["bulk", "reindex", "reindex"]


async def test_a_slot_cap_of_one_keeps_a_namespace_at_one_job_while_others_wait(
    runtime: Runtime,
) -> None:
    await _set_slots(runtime, A, 1)
    a_jobs = [await _upload(runtime, A, f"a-{n}") for n in range(3)]
    b_jobs = [await _upload(runtime, B, f"b-{n}") for n in range(3)]

    # Three free slots.  Without the cap the third would go to A (one running
    # each, and A's last turn is the older); at its cap A waits while B has work.
    taken = [(await _take(runtime)).job.id for _ in range(3)]
    assert taken == [a_jobs[0], b_jobs[0], b_jobs[1]]

    # The operator's override is visible to the namespace's own sessions.
    async with runtime.database.session(A) as session:
        assert (await own_overrides(session))["job_slots"] == 1
    async with runtime.database.session(B) as session:
        assert (await own_overrides(session))["job_slots"] is None


async def test_without_a_cap_the_share_follows_the_turns(runtime: Runtime) -> None:
    a_jobs = [await _upload(runtime, A, f"a-{n}") for n in range(3)]
    b_jobs = [await _upload(runtime, B, f"b-{n}") for n in range(3)]

    taken = [(await _take(runtime)).job.id for _ in range(3)]

    assert taken == [a_jobs[0], b_jobs[0], a_jobs[1]]


async def test_a_namespace_alone_uses_every_slot_whatever_its_cap(runtime: Runtime) -> None:
    await _set_slots(runtime, A, 1)
    a_jobs = [await _upload(runtime, A, f"a-{n}") for n in range(3)]

    taken = [(await _take(runtime)).job.id for _ in range(3)]

    assert taken == a_jobs


async def test_the_default_cap_comes_from_the_settings(
    deployment: Deployment, runtime: Runtime
) -> None:
    capped = build_runtime(replace(deployment.settings, job_namespace_slots=1))
    try:
        a_jobs = [await _upload(runtime, A, f"a-{n}") for n in range(3)]
        b_jobs = [await _upload(runtime, B, f"b-{n}") for n in range(3)]
        await _set_slots(runtime, B, 0)  # the operator lifted B's cap

        taken = [(await _take(capped)).job.id for _ in range(4)]

        assert taken == [a_jobs[0], b_jobs[0], b_jobs[1], b_jobs[2]]
    finally:
        await capped.aclose()


async def test_a_job_whose_worker_died_goes_first_and_a_retry_waits_its_pause(
    runtime: Runtime,
) -> None:
    victim = await _upload(runtime, A, "victim")
    dying = await _take(runtime)
    assert dying.job.id == victim
    waiting = [await _upload(runtime, B, f"b-{n}") for n in range(2)]
    retried = await _upload(runtime, C, "c-retried")
    async with runtime.database.session(A) as session:  # the worker died: its lease ran out
        await session.execute(
            text("UPDATE ragsage_jobs SET lease_expires_at = now() - interval '1 second'")
        )
    assert await reclaim(runtime, A.namespace, victim) is not None
    again = await _take(runtime)
    assert again.job.id == victim  # recovered: ahead of B and C, which have had no turn
    await _finish(runtime, again)
    assert await _one_slot_order(runtime, 1) == [waiting[0]]
    failing = await _take(runtime)
    assert failing.job.id == retried
    async with runtime.database.session(C) as session:  # a provider's 503: retry in a minute
        await store.requeue(session, retried, "provider answered 503", retry_in=60)

    # The retry's pause is not over: the next turns pass over it.
    assert await _one_slot_order(runtime, 1) == [waiting[1]]
    assert await claim_next(runtime) is None


def test_the_operator_sets_and_lists_a_namespaces_slots(deployment: Deployment) -> None:
    def ragsage(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(Path(sys.executable).with_name("ragsage")), *args],
            cwd=ROOT,
            env=deployment.env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    deployment.enqueuer.enqueue_documents("tenant-a", [Upload("a.md", _report("a"))])
    assert ragsage("namespaces", "set", "tenant-a", "--job-slots", "2").returncode == 0
    listed = ragsage("namespaces", "list")
    assert listed.returncode == 0, listed.stderr
    (row,) = [line.split() for line in listed.stdout.splitlines() if line.startswith("tenant-a")]
    assert row[1:] == ["1", "0", "2"]  # one job queued (no worker runs), none running, 2 slots

    refused = ragsage("namespaces", "set", "tenant-a", "--job-slots", "-1")
    assert refused.returncode == 2 and "must be 0 (no limit) or more" in refused.stderr
    cleared = ragsage("namespaces", "set", "tenant-a", "--job-slots", "default")
    assert cleared.returncode == 0 and "job_slots default (none)" in cleared.stdout


async def test_a_tenants_session_cannot_change_its_own_share(runtime: Runtime) -> None:
    with pytest.raises(Exception, match="permission denied"):
        async with runtime.database.session(A) as session:
            await session.execute(
                text(
                    "INSERT INTO ragsage_namespace_settings (namespace, job_slots) VALUES (:n, 9)"
                ),
                {"n": A.namespace},
            )


def _started_order(deployment: Deployment, scopes: Sequence[Scope]) -> list[tuple[str, str]]:
    """(namespace, filename) of every job, in the order workers claimed them."""

    async def read() -> list[tuple[str, str, object]]:
        runtime = build_runtime(deployment.settings)
        rows: list[tuple[str, str, object]] = []
        try:
            for scope in scopes:
                async with runtime.database.session(scope) as session:
                    found = await session.execute(
                        text("SELECT filename, started_at FROM ragsage_jobs")
                    )
                    rows += [(scope.namespace, str(name), started) for name, started in found]
        finally:
            await runtime.aclose()
        return rows

    rows = asyncio.run(read())
    return [(namespace, name) for namespace, name, _ in sorted(rows, key=lambda row: row[2])]


def test_one_worker_slot_serves_other_tenants_before_the_backlogs_later_jobs(
    deployment: Deployment,
) -> None:
    slow = {
        "RAGSAGE_ADAPTERS": "tests.integration.adapters:flaky",
        "TEST_EMBED_DELAY": "0.4",
        "TEST_EMBED_COUNTER": str(deployment.tmp / "embed-calls"),
    }
    deployment.worker(**slow).start(concurrency=1)
    enqueuer = deployment.enqueuer
    backlog = enqueuer.enqueue_documents(
        A.namespace, [Upload(f"a-{n}.md", _report(f"a-{n}")) for n in range(6)]
    )
    first = str(backlog[0].job_id)  # type: ignore[union-attr]
    deployment.wait(A.namespace, [first], until=lambda job: job.state is not JobState.QUEUED)
    others = [
        (B, enqueuer.enqueue_document(B.namespace, "b.md", data=_report("b"))),
        (C, enqueuer.enqueue_document(C.namespace, "c.md", data=_report("c"), job_class="bulk")),
        (
            A,
            enqueuer.enqueue_document(
                A.namespace, "a-urgent.md", data=_report("a-urgent"), job_class="interactive"
            ),
        ),
    ]
    for scope, outcome in others:
        deployment.wait(scope.namespace, [str(outcome.job_id)], timeout=60)
    deployment.wait(A.namespace, [str(o.job_id) for o in backlog], timeout=60)  # type: ignore[union-attr]

    order = _started_order(deployment, (A, B, C))
    assert order == [
        ("tenant-a", "a-0.md"),
        ("tenant-b", "b.md"),
        ("tenant-c", "c.md"),
        ("tenant-a", "a-urgent.md"),
        *[("tenant-a", f"a-{n}.md") for n in range(1, 6)],
    ]


def test_a_first_bulk_upload_gives_the_job_table_planner_statistics(
    deployment: Deployment,
) -> None:
    """Autovacuum is too slow for a first bulk upload; the uploads analyze the table."""

    async def figures() -> tuple[float, int]:
        runtime = build_runtime(deployment.settings)
        try:
            async with runtime.database.owner_connection() as owner:
                rows = await owner.scalar(
                    text("SELECT reltuples FROM pg_class WHERE relname = 'ragsage_jobs'")
                )
                columns = await owner.scalar(
                    text("SELECT count(*) FROM pg_stats WHERE tablename = 'ragsage_jobs'")
                )
                if rows < 0:  # before any statistics: turn autovacuum off for the table
                    await owner.execute(
                        text("ALTER TABLE ragsage_jobs SET (autovacuum_enabled = false)")
                    )
            return float(rows), int(columns)
        finally:
            await runtime.aclose()

    assert asyncio.run(figures()) == (-1.0, 0)  # the planner takes the table for empty
    for tenant in range(20):
        deployment.enqueuer.enqueue_documents(
            f"tenant-{tenant}",
            (Upload(f"note-{n}.md", f"# Note {n} of {tenant}\n".encode()) for n in range(10)),
        )
    rows, columns = asyncio.run(figures())
    assert rows >= 100 and columns > 0
