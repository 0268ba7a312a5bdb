"""What each worker process owns: one event loop, one runtime, one lease keeper.

Built lazily on first use and rebuilt after a fork (a pool child must not share
its parent's sockets or loop thread).
"""

from __future__ import annotations

import gc
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from uuid import UUID

from ragsage.adapters.parsing.tokens import DEFAULT_ENCODING, load_encoding
from ragsage.adapters.postgres.jobs import store
from ragsage.adapters.providers.local_int8 import prepare_model
from ragsage.core.cores import share_cores
from ragsage.core.errors import ConfigurationError
from ragsage.core.scopes import Scope
from ragsage.jobs.lease_keeper import LeaseKeeper
from ragsage.jobs.watchdog import Send, run_round
from ragsage.jobs.webhook_dispatcher import Dispatcher, Observe
from ragsage.runtime import Runtime, adapter_overrides, build_runtime
from ragsage.runtime.loop import LoopThread
from ragsage.settings import Settings

_log = logging.getLogger(__name__)


@dataclass
class ProcessRuntime:
    """The loop, runtime and lease keeper of this process."""

    loop: LoopThread
    runtime: Runtime
    pid: int
    lease: LeaseKeeper

    def close(self) -> None:
        try:
            self.lease.close()
            self.loop.run(self.runtime.aclose(), timeout=10)
        finally:
            self.loop.stop()


def warm_before_fork(processes: int, settings: Settings | None = None) -> None:
    """Do once, in the worker's main process, what each pool child would repeat.

    The ``processes`` children will share the machine's cores, so each sizes
    its numeric libraries' thread pools to its share (:mod:`ragsage.core.cores`).
    The token encoding every chunk is counted in takes about a third of a CPU
    second to load; loaded before the pool forks, the children share it instead
    of each paying for it on its first job.  The local model's int8 file is
    derived here, once, instead of by every child at the same moment.  Freezing
    what exists now keeps the collector from walking those long-lived objects
    in every child (and from touching, so copying, the pages they share).
    """
    share_cores(processes)
    load_encoding(DEFAULT_ENCODING)
    if settings is not None and settings.embedder == "local":
        if settings.local_model_precision == "int8":
            prepare_model(settings.local_model_dir, settings.model_cache_dir)
    gc.freeze()


_current: ProcessRuntime | None = None
_guard = threading.Lock()


def current(settings: Settings | None = None) -> ProcessRuntime:
    """This process's runtime, built on first use (and again in a forked child)."""
    global _current
    with _guard:
        if _current is None or _current.pid != os.getpid():
            chosen = settings or Settings.from_env()
            loop = LoopThread()
            runtime = build_runtime(chosen, **adapter_overrides(chosen))
            _log.info(
                "ragsage worker process %d: embedder %s (%d dimensions), parser %s, "
                "contextualizer %s, transcriber %s, parse cache %s",
                os.getpid(),
                runtime.embedder.model,
                runtime.embedder.dimension,
                type(runtime.parser).__name__,
                type(runtime.contextualizer).__name__ if runtime.contextualizer else "none",
                type(getattr(runtime.llm, "transcriber", runtime.llm)).__name__,
                "on" if runtime.cache is not None else "off",
            )
            lease = LeaseKeeper(
                lease=chosen.job_lease,
                heartbeat=chosen.job_heartbeat,
                # Past the hard limit the job is dead whatever this process says.
                max_hold=chosen.job_time_limit + chosen.job_lease,
                memory_limit=chosen.job_memory_limit,
            )
            _current = ProcessRuntime(loop=loop, runtime=runtime, pid=os.getpid(), lease=lease)
        return _current


def shutdown() -> None:
    """Close this process's runtime, if it has one."""
    global _current
    with _guard:
        if _current is not None and _current.pid == os.getpid():
            _current.close()
        _current = None


class Watchdog(threading.Thread):
    """Every ``watchdog_interval`` seconds, re-queue jobs whose worker stopped."""

    def __init__(
        self, process: ProcessRuntime, send: Send, waiting: Callable[[], int | None]
    ) -> None:
        """``waiting`` counts the messages in the broker's queues (None if unknown)."""
        super().__init__(name="ragsage-watchdog", daemon=True)
        self.process, self.send, self.waiting = process, send, waiting
        self.stopped = threading.Event()

    def run(self) -> None:
        interval = self.process.runtime.settings.watchdog_interval
        while not self.stopped.wait(interval):
            try:
                self.tick()
            except Exception as exc:  # noqa: BLE001 - the next round tries again
                _log.warning("watchdog round failed: %s", type(exc).__name__)

    def tick(self) -> int | None:
        """One round: how many jobs it re-sent, or None if another worker's round ran."""
        settings = self.process.runtime.settings
        return self.process.loop.run(
            run_round(
                self.process.runtime,
                self.send,
                requeue_after=requeue_after_for(settings, self.waiting()),
            )
        )


# A job sent and waiting while the broker still holds messages is never sent again.
_WHILE_TURNS_WAIT = 100 * 365 * 86400.0


def requeue_after_for(settings: Settings, waiting: int | None) -> float | None:
    """After how long a job sent but not started is sent again, given the broker's queues.

    A message is a turn for whichever job is next, not an order for its own
    job, so while the broker holds any message a job sent long ago is waiting
    its turn behind a backlog, not lost: sending it again would only add an
    idle turn (a deep backlog waits hours; every round would add thousands).
    With the queues empty, a job sent a while ago and still not started cannot
    be waiting: its message was lost (a worker killed between taking it and
    starting it, a broker restart), so it is sent again after the lease plus
    the longest retry pause (which covers a retry's countdown).  When the
    queues cannot be read, ``job_requeue_after`` (None: the setting) holds.
    """
    if waiting is None:
        return None
    if waiting > 0:
        return _WHILE_TURNS_WAIT
    return min(settings.job_requeue_after, settings.job_lease + settings.job_retry_backoff_max)


async def mark_enqueued(
    runtime: Runtime, namespace: str, job_id: UUID, attempts: int | None = None
) -> None:
    async with runtime.database.session(Scope(namespace)) as session:
        await store.mark_enqueued(session, job_id, attempts=attempts)


class Webhooks:
    """The webhook dispatcher running on this process's loop."""

    def __init__(self, process: ProcessRuntime, observe: Observe) -> None:
        runtime = process.runtime
        self.dispatcher = Dispatcher(runtime.database, runtime.settings, observe=observe)
        self.running = process.loop.submit(self.dispatcher.run())

    def stop(self) -> None:
        """Stop claiming, and let the sends in flight end (each within its timeout)."""
        self.running.cancel()
        self.dispatcher.finished.wait(self.dispatcher.settings.webhook_timeout + 2.0)


def start_webhooks(process: ProcessRuntime, observe: Observe) -> Webhooks | None:
    """Send webhooks from this process; None (and a logged reason) if it cannot."""
    try:
        return Webhooks(process, observe)
    except ConfigurationError as exc:
        # A bad operator key must not stop the worker's jobs or its metrics.
        _log.error("webhooks are not sent by this worker: %s", exc)
        return None
