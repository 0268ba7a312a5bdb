"""The Celery tasks: a message is a turn for one job, and carries (namespace, job id) only.

Each committed job sends one message, on its kind's queue; a worker that takes
a message runs the job whose turn it is across every namespace (the fair order
of :mod:`ragsage.adapters.postgres.jobs.turns`), which is the message's own job
only when nothing is ahead of it.  So one tenant's backlog in the broker never
stands in front of another tenant's upload, and re-index work yields to uploads.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any
from uuid import UUID

from celery import Task
from celery.exceptions import Reject, SoftTimeLimitExceeded
from celery.signals import (
    worker_init,
    worker_process_init,
    worker_process_shutdown,
    worker_ready,
    worker_shutdown,
)

from ragsage.adapters.celery.broker import INGEST_TASK, REINDEX_TASK, publish, waiting_messages
from ragsage.adapters.observability import metrics_dir
from ragsage.adapters.observability.logs import log_context
from ragsage.adapters.postgres.jobs import store
from ragsage.core.offload import CallerThread, using
from ragsage.core.scopes import Scope
from ragsage.jobs.runner import Claimed, claim_next, is_transient, run_claimed
from worker import metrics, process
from worker.app import app, queue, settings

_log = logging.getLogger(__name__)


def send_job(
    namespace: str,
    job_id: UUID,
    countdown: float | None = None,
    kind: str = "ingest",
    *,
    recovered: bool = False,
) -> None:
    """Publish a job's message to the queue of its kind (``recovered``: ahead of new work)."""
    publish(
        app,
        queue,
        namespace,
        job_id,
        kind=kind,
        countdown=countdown,
        recovered=recovered,
    )


def send_recovered(namespace: str, job_id: UUID, kind: str) -> None:
    """The watchdog's send: a job whose worker died runs before the backlog."""
    send_job(namespace, job_id, kind=kind, recovered=True)


def _run(namespace: str, job_id: str, kind: str) -> str:
    with log_context(turn=job_id):
        return _run_in_context(namespace, job_id, kind)


def _run_in_context(namespace: str, job_id: str, kind: str) -> str:
    """Run the job whose turn it is: the message's own job only if the fair order says so.

    Every committed job sends one message, so the messages in the broker are as
    many as the jobs waiting; each is a turn for whichever job
    ``ragsage_next_job`` picks.  A turn that finds nothing to run (its job was
    run on an earlier turn, cancelled or superseded) ends here.
    """
    here = process.current(settings)
    try:
        claimed = here.loop.run(claim_next(here.runtime))
    except Exception as exc:
        if not is_transient(exc):
            raise
        # No job could be chosen or claimed (the database is away): acking this
        # delivery would drop a turn some waiting job needs.  Put it back after
        # a pause instead.
        _log.warning("turn %s: %s before it could run; redelivering", job_id, type(exc).__name__)
        time.sleep(settings.job_retry_backoff)
        raise Reject(requeue=True) from exc
    if claimed is None:
        _log.debug("turn %s: no job can run now", job_id)
        return "idle"
    if not isinstance(claimed, Claimed):
        metrics.current().observe(claimed.state, kind, {})
        _log.info("job %s: %s %s", claimed.job_id, claimed.state, claimed.message)
        return claimed.state
    job = claimed.job
    with log_context(namespace=job.namespace, job_id=str(job.id), kind=job.kind):
        return _run_claimed_job(here, claimed)


def _run_claimed_job(here: process.ProcessRuntime, claimed: Claimed) -> str:
    scope, job = claimed.scope, claimed.job
    # This thread runs the job's CPU stages, so the soft time limit (raised here
    # by a signal) interrupts the stage itself rather than only the wait for it.
    cpu = CallerThread(interrupts=(SoftTimeLimitExceeded,))
    running = here.loop.submit(using(cpu, run_claimed(here.runtime, claimed, here.lease)))
    try:
        outcome = cpu.drive(running)
    except SoftTimeLimitExceeded:
        running.cancel()
        message = f"took longer than {settings.job_soft_time_limit:.0f} s and was stopped"
        here.loop.run(_fail(here, scope, job.id, message))
        metrics.current().observe("failed", job.kind, {})
        return "failed"
    except Exception as exc:
        if not is_transient(exc):
            raise
        # The outcome could not be recorded (the database is away): the lease
        # runs out and the watchdog queues the job again, as for a dead worker.
        _log.warning("job %s: %s before its outcome was recorded", job.id, type(exc).__name__)
        time.sleep(settings.job_retry_backoff)
        raise Reject(requeue=True) from exc
    metrics.current().observe(outcome.state, job.kind, outcome.timings)
    if outcome.retry_in is not None:
        # The retry was committed as queued and unsent, with its pause: send a
        # turn that arrives when the pause is over, then mark it sent.
        send_job(scope.namespace, job.id, countdown=outcome.retry_in, kind=job.kind, recovered=True)
        here.loop.run(
            process.mark_enqueued(here.runtime, scope.namespace, job.id, outcome.attempts)
        )
    for follow_up in outcome.follow_up:
        send_job(scope.namespace, follow_up, kind="reindex")
        here.loop.run(process.mark_enqueued(here.runtime, scope.namespace, follow_up))
    _log.info("job %s: %s %s", job.id, outcome.state, outcome.message)
    return outcome.state


@app.task(name=INGEST_TASK, bind=True)
def ingest_document(self: Task[Any, Any], namespace: str, job_id: str) -> str:
    """Run one delivery of an ingestion job; the job row records the outcome."""
    return _run(namespace, job_id, "ingest")


@app.task(name=REINDEX_TASK, bind=True)
def reindex_document(self: Task[Any, Any], namespace: str, job_id: str) -> str:
    """Run one delivery of a re-index job into a building generation."""
    return _run(namespace, job_id, "reindex")


async def _fail(here: process.ProcessRuntime, scope: Scope, job_id: UUID, message: str) -> None:
    async with here.runtime.database.session(scope) as session:
        job = await store.get_job(session, job_id)
        if job is not None:
            await store.fail(session, job, f"{job.filename}: {message}")


@worker_init.connect
def _main_process_starting(sender: Any = None, **_: object) -> None:
    # Before the pool forks: what is loaded here, every child inherits.
    process.warm_before_fork(getattr(sender, "concurrency", None) or 1, settings)


@worker_process_init.connect
def _child_started(**_: object) -> None:
    # Before any thread starts, so the lease keeper's runs at the same priority.
    if settings.worker_nice:
        os.nice(settings.worker_nice)
    # A pool child runs jobs: its lease keeper starts now, not with the first job.
    process.current(settings).lease.start()
    if settings.worker_metrics_port:
        metrics.child_started()


@worker_process_shutdown.connect
def _child_stopping(**_: object) -> None:
    process.shutdown()
    metrics.child_stopping()


_webhooks: list[process.Webhooks] = []


@worker_shutdown.connect
def _worker_stopping(**_: object) -> None:
    for webhooks in _webhooks:
        webhooks.stop()
    metrics_dir.finish()


@worker_ready.connect
def _start_watchdog(**_: object) -> None:
    here = process.current(settings)
    process.Watchdog(here, send_recovered, lambda: waiting_messages(queue)).start()
    # Webhooks go out from the main process, never from a pool slot a job needs.
    webhooks = process.start_webhooks(here, metrics.current().webhook_outcome)
    if webhooks is not None:
        _webhooks.append(webhooks)
    # One endpoint for the whole worker, served by the main process.
    metrics.start(settings.worker_metrics_port, settings.worker_metrics_host)
