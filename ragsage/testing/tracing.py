"""A tracer that records the span tree, so tests can see what ran and for whom."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import Self


@dataclass(slots=True)
class RecordedSpan:
    """One captured stage: its name, tenant, attributes, children and outcome.

    Mutable on purpose: attributes and children fill in while the stage runs.
    """

    name: str
    tenant: str | None
    attributes: dict[str, object] = field(default_factory=dict)
    children: list[RecordedSpan] = field(default_factory=list)
    error: str | None = None
    duration_ms: float | None = None

    def walk(self) -> list[RecordedSpan]:
        """This span and every descendant, in pre-order."""
        found = [self]
        for child in self.children:
            found.extend(child.walk())
        return found


class FakeSpan:
    """A span writing into a :class:`RecordedSpan`; children inherit the tenant."""

    def __init__(self, record: RecordedSpan) -> None:
        self.record = record
        self._started = time.perf_counter()

    def set(self, **attributes: object) -> None:
        self.record.attributes.update(attributes)

    def child(self, name: str, **attributes: object) -> FakeSpan:
        record = RecordedSpan(name=name, tenant=self.record.tenant, attributes=dict(attributes))
        self.record.children.append(record)
        return FakeSpan(record)

    def __enter__(self) -> Self:
        self._started = time.perf_counter()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.record.duration_ms = (time.perf_counter() - self._started) * 1000
        if exc is not None:
            self.record.error = f"{type(exc).__name__}: {exc}"


class FakeTracer:
    """Records point events and one span tree per request."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, object]]] = []
        self.spans: list[RecordedSpan] = []

    def event(self, name: str, **fields: object) -> None:
        self.events.append((name, dict(fields)))

    def span(self, name: str, *, tenant: str | None, **attributes: object) -> FakeSpan:
        record = RecordedSpan(name=name, tenant=tenant, attributes=dict(attributes))
        self.spans.append(record)
        return FakeSpan(record)

    def names(self) -> list[str]:
        return [name for name, _ in self.events]

    def all_spans(self) -> list[RecordedSpan]:
        return [span for root in self.spans for span in root.walk()]

    def find_span(self, name: str) -> RecordedSpan | None:
        return next((span for span in self.all_spans() if span.name == name), None)
