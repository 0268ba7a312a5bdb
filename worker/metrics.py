"""Prometheus metrics of one worker process: jobs finished, and how long each stage took.

The API's ``/metrics`` shows the queue and the job table; these show what the
workers themselves did.  Jobs run in Celery's pool children; ``ragsage worker``
starts them in prometheus_client's multiprocess mode (see
:mod:`ragsage.adapters.observability.metrics_dir`), so each child writes its counts to a
shared directory and the main process serves one endpoint that sums them all,
children that have exited included.  With ``--pool solo`` or ``threads`` the
main process runs the jobs itself and the sum is just its own.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.exposition import start_http_server
from prometheus_client.multiprocess import MultiProcessCollector

from ragsage.adapters.observability import metrics_dir

_log = logging.getLogger(__name__)

# Stages run from milliseconds (chunking a memo) to many minutes (vision on a
# scanned book); the buckets span both, in seconds as Prometheus prefers.
STAGE_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 1800)
_MS_SUFFIX = "_ms"
_CPU_SUFFIX = "_cpu_ms"


class WorkerMetrics:
    """Job and stage metrics in a registry of their own.

    ``observe`` is fed each delivery's outcome state (``succeeded``, ``failed``,
    ``retry``, ``skipped``, ``abandoned``), the job kind (``ingest`` or
    ``reindex``) and the job's timings, ``{"parse_ms": 12.5, "embed_ms": 80.0}``.
    """

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.jobs = Counter(
            "ragsage_worker_jobs",
            "Job deliveries finished by this worker, by kind and outcome",
            ["kind", "outcome"],
            registry=self.registry,
        )
        self.stage_seconds = Histogram(
            "ragsage_worker_stage_seconds",
            "Time spent in each ingestion stage",
            ["kind", "stage"],
            buckets=STAGE_BUCKETS,
            registry=self.registry,
        )
        self.webhooks = Counter(
            "ragsage_worker_webhook_deliveries",
            "Webhook delivery attempts by outcome (delivered, retry, failed, disabled, stale)",
            ["outcome"],
            registry=self.registry,
        )
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    def observe(self, outcome_state: str, kind: str, timings: Mapping[str, float]) -> None:
        """Count one finished delivery and record its stage durations."""
        self.jobs.labels(kind, outcome_state).inc()
        for key, milliseconds in timings.items():
            # CPU figures (parse_cpu_ms, ...) stay on the job; the histogram is of durations.
            if milliseconds < 0 or key.endswith(_CPU_SUFFIX):
                continue
            stage = key.removesuffix(_MS_SUFFIX)
            self.stage_seconds.labels(kind, stage).observe(milliseconds / 1000)

    def webhook_outcome(self, outcome: str) -> None:
        self.webhooks.labels(outcome).inc()

    def scrape_registry(self) -> CollectorRegistry:
        """What a scrape reads: the unit's shared counts, or this process's own."""
        shared = metrics_dir.active()
        if shared is None:
            return self.registry
        combined = CollectorRegistry()
        MultiProcessCollector(combined, path=str(shared))  # type: ignore[no-untyped-call]
        return combined

    def render(self) -> bytes:
        """What a scrape reads, in Prometheus text format."""
        return generate_latest(self.scrape_registry())

    def serve(self, port: int, host: str = "0.0.0.0") -> int | None:
        """Serve ``/metrics`` on ``host:port`` in a daemon thread; 0 serves nothing.

        Returns the bound port, or None when disabled.  Serving twice is a no-op.
        """
        if port == 0:
            return None
        if self._server is None:
            self._server, self._thread = start_http_server(port, host, self.scrape_registry())
        return self._server.server_port

    def close(self) -> None:
        """Stop serving, if serving."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            if self._thread is not None:
                self._thread.join(timeout=5)
            self._server = self._thread = None


_current: WorkerMetrics | None = None
_current_pid = 0
_guard = threading.Lock()


def current() -> WorkerMetrics:
    """This process's metrics, made on first use (and again in a forked child)."""
    global _current, _current_pid
    with _guard:
        if _current is None or _current_pid != os.getpid():
            # A forked child inherits the parent's counts and a server it does not run.
            _current, _current_pid = WorkerMetrics(), os.getpid()
        return _current


def start(port: int, host: str = "0.0.0.0") -> int | None:
    """Serve the worker's metrics on ``port`` (0: not at all), from the main process only."""
    return current().serve(port, host)


def child_started() -> None:
    """In a pool child: its counts reach the endpoint only through the shared directory."""
    if metrics_dir.active() is None:
        _log.warning(
            "this pool child's metrics are not served: start workers with `ragsage worker`, "
            "which shares one metrics directory between the pool's processes"
        )


def child_stopping() -> None:
    metrics_dir.process_exited(os.getpid())
