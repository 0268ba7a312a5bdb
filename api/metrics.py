"""Prometheus metrics for the API: requests, latencies, queue depth, jobs, webhook backlog."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from ragsage.adapters.observability import metrics_dir

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class _LiveGauges(Collector):
    """Reads queue depth and job counts at scrape time, so they are never stale."""

    def __init__(
        self,
        queue_depth: Callable[[], dict[str, int]],
        job_counts: Callable[[], dict[str, int]],
        webhook_backlog: Callable[[], tuple[int, float] | None],
        replicas: Callable[[], list[dict[str, Any]]],
    ) -> None:
        self.queue_depth, self.job_counts = queue_depth, job_counts
        self.webhook_backlog, self.replicas = webhook_backlog, replicas

    def collect(self) -> Iterator[GaugeMetricFamily]:
        depth = GaugeMetricFamily(
            "ragsage_queue_depth", "Messages waiting in each ingestion queue", labels=["queue"]
        )
        for queue, count in self.queue_depth().items():
            depth.add_metric([queue], count)
        yield depth
        jobs = GaugeMetricFamily("ragsage_jobs", "Ingestion jobs by state", labels=["state"])
        for state, count in self.job_counts().items():
            jobs.add_metric([state], count)
        yield jobs
        replicas = self.replicas()
        if replicas:
            up = GaugeMetricFamily(
                "ragsage_replica_up",
                "1 while a read replica answers searches (in rotation), else 0",
                labels=["replica"],
            )
            lag = GaugeMetricFamily(
                "ragsage_replica_lag_seconds",
                "How far each read replica's replay is behind the primary",
                labels=["replica"],
            )
            for replica in replicas:
                up.add_metric([replica["name"]], 1.0 if replica["up"] else 0.0)
                if replica["lag_seconds"] is not None:
                    lag.add_metric([replica["name"]], replica["lag_seconds"])
            yield up
            yield lag
        backlog = self.webhook_backlog()
        if backlog is not None:
            pending, age = backlog
            yield GaugeMetricFamily(
                "ragsage_webhook_pending_deliveries",
                "Webhook deliveries waiting to be sent, across every namespace",
                value=pending,
            )
            yield GaugeMetricFamily(
                "ragsage_webhook_oldest_undelivered_seconds",
                "Age of the oldest event with a delivery still waiting (0: none waits)",
                value=age,
            )


class Metrics:
    """One registry per app, so several apps in one process never collide.

    Under ``ragsage api`` the server's workers share a metrics directory
    (prometheus_client's multiprocess mode): a scrape, whichever worker takes
    it, sums the request counts of all of them.
    """

    def __init__(
        self,
        queue_depth: Callable[[], dict[str, int]],
        job_counts: Callable[[], dict[str, int]],
        webhook_backlog: Callable[[], tuple[int, float] | None] = lambda: None,
        replicas: Callable[[], list[dict[str, Any]]] = list,
    ) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "ragsage_http_requests",
            "HTTP requests by endpoint and status",
            ["endpoint", "method", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "ragsage_http_request_seconds",
            "HTTP request latency by endpoint",
            ["endpoint"],
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
            registry=self.registry,
        )
        # Labelled by limit, never by namespace: a thousand tenants must not make
        # a thousand series; who is refused is in GET /v1/usage and the CLI.
        self.refused = Counter(
            "ragsage_requests_refused",
            "Requests refused by a rate limit, by limit",
            ["limit"],
            registry=self.registry,
        )
        self.limits_unavailable = Counter(
            "ragsage_rate_limits_unavailable",
            "Requests let through unchecked because the rate limits' Redis was unreachable",
            registry=self.registry,
        )
        # Which server answered the reads a replica may take (X-Ragsage-Read-Server):
        # the share "primary" keeps is what more replicas, or a closer one, would take.
        self.read_servers = Counter(
            "ragsage_read_server_requests",
            "Requests whose reads a replica could take, by the server that answered them",
            ["server"],
            registry=self.registry,
        )
        self._live = _LiveGauges(queue_depth, job_counts, webhook_backlog, replicas)
        self.registry.register(self._live)

    def observe(self, endpoint: str, method: str, status: int, seconds: float) -> None:
        self.requests.labels(endpoint, method, str(status)).inc()
        self.latency.labels(endpoint).observe(seconds)

    def render(self) -> bytes:
        shared = metrics_dir.active()
        if shared is None:
            return generate_latest(self.registry)
        scrape = CollectorRegistry()
        MultiProcessCollector(scrape, path=str(shared))  # type: ignore[no-untyped-call]
        scrape.register(self._live)
        return generate_latest(scrape)
