from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragsage.adapters.observability.otel import OtelTracer


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> Iterator[TracerProvider]:
    # Simple (synchronous) processing: a span is exported the moment it ends.
    built = TracerProvider(shutdown_on_exit=False)
    built.add_span_processor(SimpleSpanProcessor(exporter))
    yield built
    built.shutdown()


@pytest.fixture
def tracer(provider: TracerProvider) -> OtelTracer:
    return OtelTracer(provider)


@pytest.fixture
def root_logger() -> Iterator[logging.Logger]:
    """The root logger, restored to its handlers and level afterwards."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield root
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
            handler.close()
    root.setLevel(level)
