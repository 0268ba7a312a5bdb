"""The :class:`~ragsage.core.ports.Tracer` port over OpenTelemetry.

Needs ``opentelemetry-api`` (``pip install 'ragsage[otel]'`` also brings the SDK
and the OTLP/HTTP exporter).  Nothing imports this module unless tracing to
OpenTelemetry is configured, so ``import ragsage`` never loads OpenTelemetry.

Spans are parented explicitly: ``child()`` starts a span under its parent, and
a root span starts under whatever span is current (an instrumented HTTP request,
say).  Our spans are never made *current* themselves: the engine keeps spans
open across ``yield`` in async generators, where an attached context would leak
into the consumer and be detached from a different context.
"""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Self
from urllib.parse import urlsplit, urlunsplit

from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

from ragsage.adapters.observability.logs import redact
from ragsage.core.errors import ConfigurationError

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
    from opentelemetry.util.types import AttributeValue

NAMESPACE_ATTRIBUTE = "ragsage.namespace"
ATTRIBUTE_PREFIX = "ragsage."
# Not failures of the stage: the caller stopped reading a stream, or gave up.
_ABANDONED = (GeneratorExit, asyncio.CancelledError, KeyboardInterrupt, SystemExit)


class OtelSpan:
    """One stage as an OpenTelemetry span, started on ``__enter__`` and ended on exit."""

    def __init__(
        self,
        tracer: trace.Tracer,
        name: str,
        tenant: str | None,
        attributes: Mapping[str, object],
        parent: OtelSpan | None = None,
    ) -> None:
        self._tracer, self.name, self.tenant, self._parent = tracer, name, tenant, parent
        self._pending: dict[str, AttributeValue] = _attributes(attributes)
        if tenant is not None:
            self._pending[NAMESPACE_ATTRIBUTE] = tenant
        self.span: trace.Span | None = None

    def set(self, **attributes: object) -> None:
        values = _attributes(attributes)
        if self.span is None:
            self._pending.update(values)
        else:
            self.span.set_attributes(values)

    def child(self, name: str, **attributes: object) -> OtelSpan:
        return OtelSpan(self._tracer, name, self.tenant, attributes, parent=self)

    def __enter__(self) -> Self:
        parent = self._parent.span if self._parent is not None else None
        context = trace.set_span_in_context(parent) if parent is not None else None
        # The port's __exit__ records errors itself, with our own status text.
        self.span = self._tracer.start_span(
            self.name,
            context=context,
            attributes=self._pending,
            record_exception=False,
            set_status_on_exception=False,
        )
        self._pending = {}
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.span is None:
            return
        if exc is not None:
            if isinstance(exc, _ABANDONED):
                self.span.set_attribute(ATTRIBUTE_PREFIX + "abandoned", type(exc).__name__)
            else:
                # Trace backends are one more place a DSN or key must not reach.
                message = redact(str(exc))
                stack = redact("".join(traceback.format_exception(exc)))
                self.span.record_exception(
                    exc,
                    {"exception.message": message, "exception.stacktrace": stack},
                    escaped=True,
                )
                self.span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {message}"))
        self.span.end()


class OtelTracer:
    """Opens ragsage's spans on an OpenTelemetry tracer provider.

    ``tracer_provider`` defaults to the process's global one (a no-op unless an
    SDK was installed, for instance by ``opentelemetry-instrument``);
    :func:`build_otel_tracer` makes one that exports over OTLP.  Every span
    carries the tenant as ``ragsage.namespace``, and the port's attributes
    under the ``ragsage.`` prefix.  ``service_name`` names the tracer (the
    instrumentation scope); the exported service is the provider's resource.
    """

    def __init__(
        self,
        tracer_provider: trace.TracerProvider | None = None,
        service_name: str = "ragsage",
    ) -> None:
        self.provider = tracer_provider or trace.get_tracer_provider()
        self.service_name = service_name
        self._owns_provider = tracer_provider is not None
        self._tracer = self.provider.get_tracer(service_name)

    def span(self, name: str, *, tenant: str | None, **attributes: object) -> OtelSpan:
        return OtelSpan(self._tracer, name, tenant, attributes)

    def event(self, name: str, **fields: object) -> None:
        """Add ``name`` to the current span (an outer request span, if any)."""
        current = trace.get_current_span()
        if current.is_recording():
            current.add_event(name, _attributes(fields))

    def shutdown(self) -> None:
        """Export what is buffered and stop the provider this tracer was given.

        The global provider belongs to whoever installed it and is left running.
        """
        if not self._owns_provider:
            return
        flush = getattr(self.provider, "force_flush", None)
        if flush is not None:
            flush()
        stop = getattr(self.provider, "shutdown", None)
        if stop is not None:
            stop()


def build_otel_tracer(endpoint: str, service_name: str = "ragsage") -> OtelTracer:
    """A tracer exporting to the OTLP/HTTP collector at ``endpoint``.

    ``endpoint`` is the collector's base URL (``http://collector:4318``) or the
    full traces URL; with no endpoint the global provider is used as it is.
    """
    if not endpoint:
        return OtelTracer(service_name=service_name)
    return OtelTracer(_sdk_provider(endpoint, service_name), service_name=service_name)


def traces_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL for a collector's base URL (kept if it has a path)."""
    parts = urlsplit(endpoint.strip())
    if parts.scheme not in {"http", "https"} or not parts.netloc:
        raise ConfigurationError(
            f"RAGSAGE_OTEL_ENDPOINT must be an http(s) URL such as http://collector:4318; "
            f"got {endpoint!r}"
        )
    if parts.path.strip("/"):
        return endpoint.strip()
    return urlunsplit(parts._replace(path="/v1/traces"))


def _sdk_provider(endpoint: str, service_name: str) -> SdkTracerProvider:
    # The SDK and exporter are imported only here: the API package alone is
    # enough for OtelTracer over a provider someone else configured.
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise ConfigurationError(
            "RAGSAGE_OTEL_ENDPOINT is set but the OpenTelemetry SDK or OTLP exporter is not "
            "installed: pip install 'ragsage[otel]'"
        ) from exc

    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: service_name}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=traces_url(endpoint))))
    return provider


def _attributes(values: Mapping[str, object]) -> dict[str, AttributeValue]:
    """The port's free-form attributes as OpenTelemetry values, prefixed ``ragsage.``."""
    converted: dict[str, AttributeValue] = {}
    for key, value in values.items():
        attribute = _value(value)
        if attribute is not None:
            name = key if key.startswith(ATTRIBUTE_PREFIX) else ATTRIBUTE_PREFIX + key
            converted[name] = attribute
    return converted


def _value(value: object) -> AttributeValue | None:
    if value is None:
        return None
    if isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        items = list(value)
        # OpenTelemetry arrays must be homogeneous; anything else reads fine as text.
        flags = [item for item in items if isinstance(item, bool)]
        whole = [item for item in items if isinstance(item, int) and not isinstance(item, bool)]
        real = [item for item in items if isinstance(item, float)]
        for same in (flags, whole, real):
            if items and len(same) == len(items):
                return tuple(same)
        return tuple(str(item) for item in items)
    return str(value)
