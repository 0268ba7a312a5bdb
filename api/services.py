"""What the API process holds: one event loop, the runtime, the enqueuer, metrics."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from flask import Response, current_app, g

from api.costs import AnswersAtOnce, SearchTimeouts
from api.keycache import RecentKeys, Signers, VerifiedKeys
from api.limits import RequestLimits
from api.metrics import Metrics
from api.page_cache import PageCache
from api.probes import Probes
from ragsage.adapters.sealing import Sealer
from ragsage.core.replicas import ReadLog
from ragsage.core.scopes import Scope
from ragsage.jobs.enqueue import Enqueuer
from ragsage.management.sign_in import SignInCodes, UsedCodes
from ragsage.runtime import Runtime
from ragsage.runtime.loop import LoopThread
from ragsage.runtime.serving import replica_reads
from ragsage.settings import Settings

_T = TypeVar("_T")
_E = TypeVar("_E")
EXTENSION = "ragsage"


@dataclass
class Services:
    """Built once by ``create_app``; views reach it through :func:`services`."""

    settings: Settings
    loop: LoopThread
    runtime: Runtime
    enqueuer: Enqueuer
    metrics: Metrics
    probes: Probes
    limits: RequestLimits
    answers: AnswersAtOnce
    timeouts: SearchTimeouts
    signers: Signers
    # The operator's sealing key (RAGSAGE_SEALING_KEYS): opens delegate keys' secrets,
    # checks new API keys; None when the operator set none.
    sealer: Sealer | None = None
    # The sign-in codes' sealing and where used ones are marked; None without sealing keys.
    sign_in: tuple[SignInCodes, UsedCodes] | None = None
    request_timeout: float = 120.0
    recent_keys: RecentKeys = field(default_factory=RecentKeys)
    verified: VerifiedKeys = field(default_factory=VerifiedKeys)
    page_pictures: PageCache = field(default_factory=PageCache)

    def run(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        """Run async engine code from a synchronous view, on the process's one loop."""
        return self.loop.run(coroutine, timeout=self.request_timeout)

    def search_timeout(self, scope: Scope) -> None:
        """Make sure the namespace's searches run under its own statement timeout."""
        if self.timeouts.stale(scope):
            self.run(self.timeouts.refresh(scope))

    def close(self) -> None:
        self.limits.close()
        self.probes.readings.close()
        if self.sign_in is not None:
            self.sign_in[1].close()
        self.answers.close()
        self.enqueuer.close()
        self.loop.run(self.runtime.aclose(), timeout=10)
        self.loop.stop()


# The response header naming the servers that answered a request's searches.
READ_SERVER_HEADER = "X-Ragsage-Read-Server"


def _request_log() -> ReadLog:
    """The log of who answered this request's marked reads, read by :func:`name_read_servers`."""
    log = ReadLog()
    g.read_log = log
    return log


def on_replicas(coroutine: Coroutine[Any, Any, _T]) -> Coroutine[Any, Any, _T]:
    """``coroutine`` with its reads free to go to a replica (searches and answers only).

    The servers that answered are named in the response's
    :data:`READ_SERVER_HEADER`.  Only the engine's work is marked: the key
    check that runs beside it (``run_checked``) stays on the primary, so a
    revoked key is refused on its next request whatever a replica has replayed.
    """
    log = _request_log()

    async def reading() -> _T:
        with replica_reads(log):
            return await coroutine

    return reading()


def stream_on_replicas(events: AsyncGenerator[_E, None]) -> AsyncGenerator[_E, None]:
    """``events`` with the reads behind each one free to go to a replica.

    A stream is read one event per loop task, so each step is marked on its
    own; the retrieval happens before the first event, which the views take
    before they send the headers, so :data:`READ_SERVER_HEADER` names its server.
    """
    log = _request_log()

    async def marked() -> AsyncGenerator[_E, None]:
        try:
            while True:
                with replica_reads(log):
                    try:
                        event = await anext(events)
                    except StopAsyncIteration:
                        return
                yield event
        finally:
            await events.aclose()

    return marked()


def name_read_servers(response: Response, metrics: Metrics) -> None:
    """Name in ``response`` the servers that answered its request's marked reads, and count them."""
    log: ReadLog | None = g.get("read_log")
    if log is not None and log.servers:
        response.headers[READ_SERVER_HEADER] = ",".join(log.servers)
        for server in log.servers:
            metrics.read_servers.labels(server).inc()


def services() -> Services:
    found: Services = current_app.extensions[EXTENSION]
    return found
