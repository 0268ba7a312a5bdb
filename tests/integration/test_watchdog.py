"""The watchdog's rounds on real Postgres: one owner, one send per stale job, send after commit.

The rounds run in this process against the test database; the broker is
replaced by a recording ``send`` (what reaches the broker is the point), so the
tests can make a send slow or failing at will.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import replace
from uuid import UUID

import pytest

from ragsage.adapters.postgres.jobs import store
from ragsage.adapters.postgres.jobs.uploads import create_upload
from ragsage.core.jobs import Upload
from ragsage.core.scopes import Scope
from ragsage.jobs.watchdog import run_round
from ragsage.runtime import Runtime, build_runtime
from worker.process import requeue_after_for

from .worker_harness import Deployment

ACME = Scope("acme")
GRACE = 0.5


class Broker:
    """Records each send; ``delay`` keeps a send in flight, ``fail_first`` refuses some."""

    def __init__(self, delay: float = 0.0, fail_first: int = 0) -> None:
        self.delay, self.fail_first = delay, fail_first
        self.sent: Counter[UUID] = Counter()
        self._guard = threading.Lock()

    def send(self, namespace: str, job_id: UUID, kind: str) -> None:
        assert (namespace, kind) == (ACME.namespace, "ingest")
        time.sleep(self.delay)
        with self._guard:
            if self.fail_first > 0:
                self.fail_first -= 1
                raise ConnectionError("broker unreachable")
            self.sent[job_id] += 1


@pytest.fixture
async def runtimes(deployment: Deployment) -> AsyncIterator[tuple[Runtime, Runtime]]:
    """Two workers' runtimes (two connection pools), with a short unsent grace."""
    settings = replace(deployment.settings, job_unsent_grace=GRACE)
    first, second = build_runtime(settings), build_runtime(settings)
    try:
        yield first, second
    finally:
        await first.aclose()
        await second.aclose()


async def _unsent_uploads(runtime: Runtime, count: int) -> list[UUID]:
    """Committed uploads whose messages never went out (the process died after the commit)."""
    job_ids = []
    async with runtime.database.session(ACME) as session:
        for number in range(count):
            outcome = await create_upload(
                session, ACME, Upload(f"n{number}.md", f"# Note {number}".encode()), max_bytes=999
            )
            assert outcome.job_id is not None
            job_ids.append(outcome.job_id)
    await asyncio.sleep(GRACE + 0.2)
    return job_ids


async def _enqueued(runtime: Runtime, job_ids: list[UUID]) -> list[bool]:
    async with runtime.database.session(ACME) as session:
        jobs = [await store.get_job(session, job_id) for job_id in job_ids]
    return [job is not None and job.enqueued_at is not None for job in jobs]


async def test_two_watchdogs_at_once_send_each_stale_job_once(
    runtimes: tuple[Runtime, Runtime],
) -> None:
    first, second = runtimes
    job_ids = await _unsent_uploads(first, 6)
    broker = Broker(delay=0.2)  # every send is in flight while the other round looks

    rounds = await asyncio.gather(
        run_round(first, broker.send),
        run_round(second, broker.send),
        run_round(first, broker.send),
    )

    assert broker.sent == {job_id: 1 for job_id in job_ids}
    assert sorted(rounds, key=str) == [6, None, None]  # one round ran; the others stood aside
    assert await _enqueued(first, job_ids) == [True] * 6
    # The next round, however soon, finds nothing left to send.
    assert await run_round(second, broker.send) == 0
    assert sum(broker.sent.values()) == 6


async def test_a_round_whose_send_fails_leaves_the_job_for_the_next(
    runtimes: tuple[Runtime, Runtime],
) -> None:
    first, _ = runtimes
    job_ids = await _unsent_uploads(first, 2)
    broker = Broker(fail_first=1)

    assert await run_round(first, broker.send) == 1
    assert sorted(await _enqueued(first, job_ids)) == [False, True]
    await asyncio.sleep(GRACE + 0.2)
    assert await run_round(first, broker.send) == 1
    assert broker.sent == {job_id: 1 for job_id in job_ids}
    assert await _enqueued(first, job_ids) == [True, True]


async def test_a_retry_is_unsent_until_its_send_is_marked(
    runtimes: tuple[Runtime, Runtime],
) -> None:
    """A retry's commit comes before its send: if the send never happens, the grace repairs it."""
    first, _ = runtimes
    (job_id,) = await _unsent_uploads(first, 1)
    async with first.database.session(ACME) as session:
        await store.mark_enqueued(session, job_id)
        assert await store.claim(session, job_id, 60.0) is not None
        await store.requeue(session, job_id, "attempt 1 failed (ConnectionError); retrying")
    assert await _enqueued(first, [job_id]) == [False]

    # The worker died before it could send the retry: the watchdog sends it after
    # the unsent grace, not after job_requeue_after (an hour by default).
    await asyncio.sleep(GRACE + 0.2)
    broker = Broker()
    assert await run_round(first, broker.send) == 1
    assert broker.sent == {job_id: 1}


async def test_marking_a_send_never_marks_a_later_requeue(
    runtimes: tuple[Runtime, Runtime],
) -> None:
    """A send noted late (the job ran and was re-queued meanwhile) leaves the new retry unsent."""
    first, _ = runtimes
    (job_id,) = await _unsent_uploads(first, 1)
    async with first.database.session(ACME) as session:
        assert await store.claim(session, job_id, 60.0) is not None  # attempt 1 runs ...
        await store.requeue(session, job_id, "attempt 1 failed; retrying")  # ... and fails
        await store.mark_enqueued(session, job_id, attempts=0)  # the first send's note, late
    assert await _enqueued(first, [job_id]) == [False]
    async with first.database.session(ACME) as session:
        await store.mark_enqueued(session, job_id, attempts=1)  # the retry's own note
    assert await _enqueued(first, [job_id]) == [True]


async def test_a_job_waiting_its_turn_behind_a_backlog_is_not_sent_again(
    deployment: Deployment,
) -> None:
    """Messages are turns: while the broker holds any, a job sent long ago waits its own."""
    settings = replace(deployment.settings, job_unsent_grace=GRACE, job_requeue_after=0.5)
    runtime = build_runtime(settings)
    try:
        (job_id,) = await _unsent_uploads(runtime, 1)
        async with runtime.database.session(ACME) as session:
            await store.mark_enqueued(session, job_id)  # sent, and not started since
        await asyncio.sleep(1.0)
        broker = Broker()
        backlog = requeue_after_for(settings, waiting=40)
        assert await run_round(runtime, broker.send, requeue_after=backlog) == 0
        assert broker.sent == {}
        # The queues are empty and the job still has not started: its message was lost.
        emptied = requeue_after_for(settings, waiting=0)
        assert await run_round(runtime, broker.send, requeue_after=emptied) == 1
        assert broker.sent == {job_id: 1}
    finally:
        await runtime.aclose()
