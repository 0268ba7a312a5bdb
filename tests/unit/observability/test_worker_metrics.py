from __future__ import annotations

import pytest

from worker.metrics import WorkerMetrics, current


def sample(metrics: WorkerMetrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def test_finished_jobs_are_counted_by_kind_and_outcome() -> None:
    metrics = WorkerMetrics()
    metrics.observe("succeeded", "ingest", {"parse_ms": 12.0})
    metrics.observe("succeeded", "ingest", {})
    metrics.observe("retry", "ingest", {})
    metrics.observe("failed", "reindex", {})

    assert sample(metrics, "ragsage_worker_jobs_total", kind="ingest", outcome="succeeded") == 2
    assert sample(metrics, "ragsage_worker_jobs_total", kind="ingest", outcome="retry") == 1
    assert sample(metrics, "ragsage_worker_jobs_total", kind="reindex", outcome="failed") == 1
    assert sample(metrics, "ragsage_worker_jobs_total", kind="reindex", outcome="succeeded") is None


def test_stage_timings_in_ms_become_a_histogram_in_seconds_per_stage() -> None:
    metrics = WorkerMetrics()
    metrics.observe("succeeded", "ingest", {"parse_ms": 40.0, "embed_ms": 1500.0})
    metrics.observe("succeeded", "ingest", {"parse_ms": 60.0, "store_ms": -1.0})
    metrics.observe("succeeded", "reindex", {"embed_ms": 250.0})

    name = "ragsage_worker_stage_seconds"
    assert sample(metrics, name + "_count", kind="ingest", stage="parse") == 2
    assert sample(metrics, name + "_sum", kind="ingest", stage="parse") == pytest.approx(0.1)
    assert sample(metrics, name + "_bucket", kind="ingest", stage="parse", le="0.05") == 1
    assert sample(metrics, name + "_sum", kind="ingest", stage="embed") == pytest.approx(1.5)
    assert sample(metrics, name + "_count", kind="reindex", stage="embed") == 1
    # A negative duration is a clock glitch, not a measurement.
    assert sample(metrics, name + "_count", kind="ingest", stage="store") is None


def test_cpu_figures_stay_out_of_the_duration_histogram() -> None:
    metrics = WorkerMetrics()
    metrics.observe("succeeded", "ingest", {"parse_ms": 40.0, "parse_cpu_ms": 35.0})
    name = "ragsage_worker_stage_seconds"
    assert sample(metrics, name + "_count", kind="ingest", stage="parse") == 1
    assert sample(metrics, name + "_count", kind="ingest", stage="parse_cpu") is None


def test_each_instance_has_its_own_registry() -> None:
    first, second = WorkerMetrics(), WorkerMetrics()
    first.observe("succeeded", "ingest", {"chunk_ms": 1.0})
    assert sample(second, "ragsage_worker_jobs_total", kind="ingest", outcome="succeeded") is None
    text = first.render().decode()
    assert 'ragsage_worker_jobs_total{kind="ingest",outcome="succeeded"} 1.0' in text


def test_port_zero_serves_nothing() -> None:
    metrics = WorkerMetrics()
    assert metrics.serve(0) is None


def test_a_process_keeps_one_set_of_metrics() -> None:
    # One endpoint per worker, summing its pool: tests/integration/test_metrics_multiprocess.py.
    assert current() is current()
