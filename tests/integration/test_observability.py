"""Operability over real wires: OTLP/HTTP export, a Prometheus scrape, JSON logs on stderr."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ragsage.adapters.observability.otel import build_otel_tracer
from ragsage.core.documents import RawSource
from ragsage.core.scopes import Scope
from ragsage.ingestion import IngestionConfig
from ragsage.testing import FakeEngineKit
from worker.metrics import WorkerMetrics


@dataclass
class Collector:
    """A loopback OTLP/HTTP trace receiver that keeps every request it gets."""

    url: str
    requests: list[tuple[str, str, bytes]] = field(default_factory=list)


@pytest.fixture
def collector() -> Iterator[Collector]:
    received: list[tuple[str, str, bytes]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((self.path, self.headers["Content-Type"], body))
            reply = ExportTraceServiceRequest().SerializeToString()  # an empty success
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield Collector(f"http://127.0.0.1:{server.server_port}", received)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def test_an_ingestion_trace_reaches_an_otlp_collector(collector: Collector) -> None:
    tracer = build_otel_tracer(collector.url, "ragsage-worker")
    kit = FakeEngineKit()
    kit.tracer = tracer  # type: ignore[assignment]  # the kit types it as its recording fake
    pipeline = kit.ingestion(IngestionConfig(chunk_size=40, chunk_overlap=5))
    await pipeline.ingest(Scope("acme"), RawSource(b"# Notes\n\nThe lab opens at nine.", "n.md"))
    tracer.shutdown()  # exports what the batch processor still holds

    assert collector.requests, "nothing was exported"
    spans, services = [], set()
    for path, content_type, body in collector.requests:
        assert path == "/v1/traces" and content_type == "application/x-protobuf"
        request = ExportTraceServiceRequest.FromString(body)
        for resource_spans in request.resource_spans:
            for attribute in resource_spans.resource.attributes:
                if attribute.key == "service.name":
                    services.add(attribute.value.string_value)
            for scope_spans in resource_spans.scope_spans:
                spans.extend(scope_spans.spans)
    assert services == {"ragsage-worker"}
    by_name = {span.name: span for span in spans}
    assert set(by_name) == {
        "ingest",
        "parse",
        "classify",
        "chunk",
        "contextualize",
        "embed",
        "store",
    }
    root = by_name["ingest"]
    for span in spans:
        namespace = {a.key: a.value.string_value for a in span.attributes}["ragsage.namespace"]
        assert namespace == "acme"
        assert span.trace_id == root.trace_id
        if span is not root:
            assert span.parent_span_id == root.span_id


def test_worker_metrics_are_scraped_over_http() -> None:
    metrics = WorkerMetrics()
    port = metrics.serve(free_port(), host="127.0.0.1")
    assert port is not None
    try:
        assert metrics.serve(port, host="127.0.0.1") == port  # a second call changes nothing
        metrics.observe("succeeded", "ingest", {"parse_ms": 250.0, "embed_ms": 1200.0})
        metrics.observe("failed", "ingest", {})
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
            text = reply.read().decode()
    finally:
        metrics.close()

    assert 'ragsage_worker_jobs_total{kind="ingest",outcome="succeeded"} 1.0' in text
    assert 'ragsage_worker_jobs_total{kind="ingest",outcome="failed"} 1.0' in text
    assert 'ragsage_worker_stage_seconds_sum{kind="ingest",stage="embed"} 1.2' in text
    assert 'ragsage_worker_stage_seconds_count{kind="ingest",stage="parse"} 1.0' in text
    # Nothing else shares the registry: no process or platform collectors.
    assert "process_cpu_seconds_total" not in text and "python_info" not in text


CHILD = r"""
import logging
from ragsage.adapters.observability import configure_logging, log_context

configure_logging("INFO", json=True)
log = logging.getLogger("ragsage.worker")
log.debug("not at INFO")
with log_context(namespace="acme", job_id="job-1", document_id="doc-1"):
    log.info("connecting to %s", "postgresql://ragsage:hunter2@db/ragsage")
    try:
        raise RuntimeError("provider refused rsk_ab12cd34ef_" + "x" * 43)
    except RuntimeError:
        log.exception("job failed")
print("stdout stays clean")
"""


def test_a_process_writes_one_json_object_per_line_to_stderr() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout == "stdout stays clean\n"
    assert "hunter2" not in done.stderr and "x" * 43 not in done.stderr
    connecting, failed = (json.loads(line) for line in done.stderr.splitlines())
    assert connecting["message"] == "connecting to postgresql://ragsage:***@db/ragsage"
    assert {k: connecting[k] for k in ("namespace", "job_id", "document_id")} == {
        "namespace": "acme",
        "job_id": "job-1",
        "document_id": "doc-1",
    }
    assert failed["level"] == "ERROR" and failed["job_id"] == "job-1"
    assert failed["exception"].endswith("RuntimeError: provider refused rsk_ab12cd34ef_[redacted]")
