"""A timed stage: a child span, and its milliseconds in the timings, even when it fails."""

from __future__ import annotations

import time

import pytest

from ragsage.core.tracing import timed_stage
from ragsage.testing.tracing import FakeTracer


def test_a_stage_is_a_named_child_span_and_its_time_is_written() -> None:
    tracer = FakeTracer()
    timing: dict[str, float] = {}
    with tracer.span("search", tenant="acme") as root:
        with timed_stage(root, timing, "vector_ms", "dense", k=40) as span:
            time.sleep(0.01)
            span.set(found=3)
    assert timing["vector_ms"] >= 10
    (trace,) = tracer.spans
    (child,) = trace.children
    assert (child.name, child.attributes) == ("dense", {"k": 40, "found": 3})


def test_a_failing_stage_still_reports_its_time_and_its_error() -> None:
    tracer = FakeTracer()
    timing: dict[str, float] = {}
    with pytest.raises(RuntimeError), tracer.span("search", tenant="acme") as root:
        with timed_stage(root, timing, "keyword_ms", "lexical"):
            raise RuntimeError("the store went away")
    assert "keyword_ms" in timing
    (child,) = tracer.spans[0].children
    assert child.error == "RuntimeError: the store went away"
