from __future__ import annotations

import asyncio
from pathlib import PurePosixPath

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from ragsage.adapters.observability.otel import (
    NAMESPACE_ATTRIBUTE,
    OtelTracer,
    build_otel_tracer,
    traces_url,
)
from ragsage.core.conversations import Turn
from ragsage.core.documents import RawSource
from ragsage.core.errors import ConfigurationError, ParseError
from ragsage.core.ports import Tracer
from ragsage.core.scopes import Scope
from ragsage.ingestion import IngestionConfig
from ragsage.query import DoneEvent
from ragsage.testing import FakeEngineKit

from ..fresh_python import run_fresh

HANDBOOK = b"""# Handbook

## Holidays

Every employee receives 28 days of paid holiday per year; up to five unused days
carry over into the first quarter of the next year.

## Expenses

Travel expenses are reimbursed within 14 days. Meals abroad are covered up to
40 euros per day.
"""
ACME = Scope("acme")


def traced_kit(tracer: OtelTracer) -> FakeEngineKit:
    kit = FakeEngineKit()
    kit.tracer = tracer  # type: ignore[assignment]  # the kit types it as its recording fake
    return kit


async def ingest(kit: FakeEngineKit, content: bytes = HANDBOOK, name: str = "handbook.md") -> None:
    pipeline = kit.ingestion(IngestionConfig(chunk_size=40, chunk_overlap=5))
    await pipeline.ingest(ACME, RawSource(content, name))


def by_name(spans: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [span for span in spans if span.name == name]


def only(spans: tuple[ReadableSpan, ...], name: str) -> ReadableSpan:
    found = by_name(spans, name)
    assert len(found) == 1, f"{len(found)} spans named {name!r}"
    return found[0]


def parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return int(span.context.span_id)


def trace_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return int(span.context.trace_id)


def test_the_tracer_satisfies_the_port(tracer: OtelTracer) -> None:
    assert isinstance(tracer, Tracer)


async def test_every_ingestion_stage_is_a_child_span_of_the_ingest_span(
    tracer: OtelTracer, exporter: InMemorySpanExporter
) -> None:
    await ingest(traced_kit(tracer))
    spans = exporter.get_finished_spans()
    root = only(spans, "ingest")

    stages = {"parse", "classify", "chunk", "contextualize", "embed", "store"}
    assert {span.name for span in spans} == stages | {"ingest"}
    assert root.parent is None
    for span in spans:
        assert span.attributes is not None
        assert span.attributes[NAMESPACE_ATTRIBUTE] == "acme"
        assert trace_id(span) == trace_id(root)
        if span.name != "ingest":
            assert parent_id(span) == span_id(root), span.name
        assert span.status.status_code is StatusCode.UNSET
    # Attributes given when a stage starts and set while it runs both arrive.
    assert root.attributes is not None and root.attributes["ragsage.filename"] == "handbook.md"
    chunks = root.attributes["ragsage.chunks"]
    assert isinstance(chunks, int) and chunks > 1
    assert only(spans, "chunk").attributes == {
        NAMESPACE_ATTRIBUTE: "acme",
        "ragsage.chunks": chunks,
    }
    embed = only(spans, "embed").attributes
    assert embed is not None and embed["ragsage.vectors"] == chunks
    # Stages run one after another inside the root's interval.
    ordered = sorted((s for s in spans if s is not root), key=lambda s: s.start_time or 0)
    assert [s.name for s in ordered] == [
        "parse",
        "classify",
        "chunk",
        "contextualize",
        "embed",
        "store",
    ]
    assert all((root.start_time or 0) <= (s.start_time or 0) for s in ordered)
    assert all((s.end_time or 0) <= (root.end_time or 0) for s in ordered)


async def test_every_query_stage_is_a_child_span_of_the_answer_span(
    tracer: OtelTracer, exporter: InMemorySpanExporter
) -> None:
    kit = traced_kit(tracer)
    await ingest(kit)
    exporter.clear()

    answer = await kit.query_engine().answer(
        ACME, "and what about meals abroad?", history=[Turn("user", "travel expenses")]
    )
    assert "40 euros" in answer.text
    # answer() returns at the done event; the stream (and its root span) closes
    # when the event loop finalizes the suspended generator.
    for _ in range(20):
        if by_name(exporter.get_finished_spans(), "answer"):
            break
        await asyncio.sleep(0)
    spans = exporter.get_finished_spans()
    root = only(spans, "answer")

    stages = {"rewrite", "embed", "dense", "lexical", "fuse", "rerank", "expand", "generate"}
    assert {span.name for span in spans} == stages | {"answer"}
    for span in spans:
        assert span.attributes is not None
        assert span.attributes[NAMESPACE_ATTRIBUTE] == "acme"
        assert trace_id(span) == trace_id(root)
        if span is not root:
            assert parent_id(span) == span_id(root), span.name
    # A caller that stops reading after the answer is not an error.
    assert root.status.status_code is StatusCode.UNSET
    assert only(spans, "rewrite").attributes == {
        NAMESPACE_ATTRIBUTE: "acme",
        "ragsage.turns": 1,
        "ragsage.changed": True,
    }
    generate = only(spans, "generate").attributes
    assert generate is not None and generate["ragsage.cited"] == len(answer.citations) >= 1


async def test_a_failing_stage_marks_its_span_and_the_root_as_errors(
    tracer: OtelTracer, exporter: InMemorySpanExporter
) -> None:
    with pytest.raises(ParseError):
        await ingest(traced_kit(tracer), b"# Notes\n\x00binary", "notes.md")
    spans = exporter.get_finished_spans()

    for name in ("parse", "ingest"):
        span = only(spans, name)
        assert span.status.status_code is StatusCode.ERROR
        assert span.status.description is not None
        assert span.status.description.startswith("ParseError: notes.md")
        [event] = span.events
        assert event.name == "exception"
        assert event.attributes is not None
        assert str(event.attributes["exception.type"]).endswith("ParseError")
    assert {span.name for span in spans} == {"parse", "ingest"}


def test_secrets_in_an_error_stay_out_of_the_span(
    tracer: OtelTracer, exporter: InMemorySpanExporter
) -> None:
    with pytest.raises(ConnectionError), tracer.span("store", tenant="acme"):
        raise ConnectionError("lost postgresql://ragsage:hunter2@db/ragsage")

    [span] = exporter.get_finished_spans()
    assert span.status.description == "ConnectionError: lost postgresql://ragsage:***@db/ragsage"
    [event] = span.events
    assert event.attributes is not None
    assert "hunter2" not in str(dict(event.attributes))
    assert "ragsage:***@db" in str(event.attributes["exception.stacktrace"])


async def test_a_stream_abandoned_midway_is_not_recorded_as_an_error(
    tracer: OtelTracer, exporter: InMemorySpanExporter
) -> None:
    kit = traced_kit(tracer)
    await ingest(kit)
    exporter.clear()

    stream = kit.query_engine().stream_answer(ACME, "How many days of paid holiday?")
    await anext(stream)  # the first token, from inside "generate"
    await stream.aclose()

    spans = exporter.get_finished_spans()
    for name in ("generate", "answer"):
        span = only(spans, name)
        assert span.status.status_code is StatusCode.UNSET
        assert span.attributes is not None
        assert span.attributes["ragsage.abandoned"] == "GeneratorExit"
        assert not span.events


async def test_a_stream_read_to_the_end_closes_every_span(
    tracer: OtelTracer, exporter: InMemorySpanExporter
) -> None:
    kit = traced_kit(tracer)
    await ingest(kit)
    exporter.clear()

    events = [e async for e in kit.query_engine().stream_answer(ACME, "Is there a gym?")]
    assert isinstance(events[-1], DoneEvent) and events[-1].not_found

    root = only(exporter.get_finished_spans(), "answer")
    assert root.attributes is not None and root.attributes["ragsage.not_found"] is True
    assert "ragsage.abandoned" not in root.attributes


def test_attributes_become_opentelemetry_values(
    tracer: OtelTracer, exporter: InMemorySpanExporter
) -> None:
    with tracer.span(
        "probe",
        tenant=None,
        names=["a", "b"],
        counts=(1, 2),
        mixed=[1, "a"],
        path=PurePosixPath("/srv/a.md"),
        missing=None,
        **{"ragsage.kept": 1.5},
    ) as span:
        span.set(flags=[True, False], later="yes")
        with span.child("inner", depth=2):
            pass

    inner, probe = exporter.get_finished_spans()
    assert probe.attributes == {
        "ragsage.names": ("a", "b"),
        "ragsage.counts": (1, 2),
        "ragsage.mixed": ("1", "a"),
        "ragsage.path": "/srv/a.md",
        "ragsage.kept": 1.5,
        "ragsage.flags": (True, False),
        "ragsage.later": "yes",
    }
    # No tenant, no namespace attribute: nothing pretends a tenant was known.
    assert inner.attributes == {"ragsage.depth": 2}
    assert parent_id(inner) == span_id(probe)


def test_a_root_span_nests_under_the_current_span_and_events_land_on_it(
    tracer: OtelTracer, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    outer = provider.get_tracer("http-server")
    with outer.start_as_current_span("POST /v1/query"):
        tracer.event("cache_miss", key="abc", size=3)
        with tracer.span("search", tenant="acme"):
            pass
    tracer.event("dropped", reason="no span is current")

    search, request = exporter.get_finished_spans()
    assert parent_id(search) == span_id(request)
    [event] = request.events
    assert event.name == "cache_miss"
    assert dict(event.attributes or {}) == {"ragsage.key": "abc", "ragsage.size": 3}


def test_spans_are_exported_under_the_tracer_service_scope(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    with OtelTracer(provider, service_name="ragsage-worker").span("ingest", tenant="acme"):
        pass
    [span] = exporter.get_finished_spans()
    assert span.instrumentation_scope is not None
    assert span.instrumentation_scope.name == "ragsage-worker"


def test_build_otel_tracer_exports_over_otlp_http_when_given_an_endpoint() -> None:
    built = build_otel_tracer("http://127.0.0.1:4318", "ragsage-api")
    try:
        assert isinstance(built.provider, TracerProvider)
        assert built.provider.resource.attributes["service.name"] == "ragsage-api"
    finally:
        built.shutdown()


def test_build_otel_tracer_without_an_endpoint_uses_the_global_provider() -> None:
    from opentelemetry import trace

    built = build_otel_tracer("", "ragsage")
    assert built.provider is trace.get_tracer_provider()
    built.shutdown()  # leaves the global provider to whoever installed it


@pytest.mark.parametrize(
    ("endpoint", "url"),
    [
        ("http://collector:4318", "http://collector:4318/v1/traces"),
        ("http://collector:4318/", "http://collector:4318/v1/traces"),
        ("https://otel.example.com/v1/traces", "https://otel.example.com/v1/traces"),
        (" https://gw.example.com/otlp/traces ", "https://gw.example.com/otlp/traces"),
    ],
)
def test_the_traces_url_follows_the_otlp_convention(endpoint: str, url: str) -> None:
    assert traces_url(endpoint) == url


@pytest.mark.parametrize("endpoint", ["collector:4318", "grpc://collector:4317", "http://"])
def test_an_endpoint_that_is_not_an_http_url_is_refused_by_name(endpoint: str) -> None:
    with pytest.raises(ConfigurationError, match="RAGSAGE_OTEL_ENDPOINT"):
        build_otel_tracer(endpoint, "ragsage")


def test_importing_ragsage_loads_no_opentelemetry() -> None:
    probe = (
        "import sys; import ragsage, ragsage.adapters.observability, ragsage.runtime; "
        "import worker.metrics; "
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))"
    )
    out = run_fresh(probe)
    assert out.stdout.strip() == "[]"


def test_an_endpoint_without_the_sdk_installed_says_what_to_install() -> None:
    # A process with only opentelemetry-api: None in sys.modules makes the import fail.
    probe = (
        "import sys; sys.modules['opentelemetry.sdk'] = None\n"
        "from ragsage.core.errors import ConfigurationError\n"
        "from ragsage.adapters.observability.otel import build_otel_tracer\n"
        "try:\n"
        "    build_otel_tracer('http://127.0.0.1:4318', 'ragsage')\n"
        "except ConfigurationError as exc:\n"
        "    print(exc)\n"
    )
    out = run_fresh(probe)
    assert "pip install 'ragsage[otel]'" in out.stdout
