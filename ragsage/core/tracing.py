"""Tracers the engine ships: a no-op default and one that logs span timings."""

from __future__ import annotations

import logging
import time
from types import TracebackType
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    from ragsage.core.ports import Span

_log = logging.getLogger("ragsage.trace")


class timed_stage:  # noqa: N801 - used as a ``with`` statement, like a function
    """A traced stage that also writes its milliseconds to ``timing[key]`` when it ends.

    ``with timed_stage(root, timing, "vector_ms", "dense", k=40) as span:`` is a
    child span of ``root`` named ``dense``; the time is taken around the span,
    so it covers the span's own bookkeeping too.  ``cpu_key`` also writes the
    process's CPU milliseconds over the stage (every thread's: a stage may run
    on a worker thread), which in a process running one job at a time is the
    stage's own cost whatever else the machine is doing.
    """

    __slots__ = (
        "_parent",
        "_timing",
        "_key",
        "_cpu_key",
        "_name",
        "_attributes",
        "_span",
        "_started",
        "_cpu_started",
    )

    def __init__(
        self,
        parent: Span,
        timing: dict[str, float],
        key: str,
        name: str,
        *,
        cpu_key: str | None = None,
        **attributes: object,
    ) -> None:
        self._parent, self._timing, self._key, self._cpu_key = parent, timing, key, cpu_key
        self._name, self._attributes = name, attributes

    def __enter__(self) -> Span:
        self._started = time.perf_counter()
        self._cpu_started = time.process_time()
        self._span = self._parent.child(self._name, **self._attributes)
        return self._span.__enter__()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self._span.__exit__(exc_type, exc, tb)
        finally:
            self._timing[self._key] = elapsed_ms(self._started)
            if self._cpu_key is not None:
                spent = time.process_time() - self._cpu_started
                self._timing[self._cpu_key] = round(spent * 1000, 3)


def elapsed_ms(started: float) -> float:
    """Milliseconds since ``started`` (a ``perf_counter`` reading), as stage timings report them."""
    return round((time.perf_counter() - started) * 1000, 3)


class NullSpan:
    """A span that records nothing; the default when no tracer is wired."""

    def set(self, **attributes: object) -> None:
        return None

    def child(self, name: str, **attributes: object) -> NullSpan:
        return self

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None


class NullTracer:
    """Discards every span and event."""

    def span(self, name: str, *, tenant: str | None, **attributes: object) -> NullSpan:
        return NullSpan()

    def event(self, name: str, **fields: object) -> None:
        return None


class LoggingSpan:
    """A span that logs its name, tenant, attributes and duration when it ends."""

    def __init__(self, name: str, tenant: str | None, attributes: dict[str, object]) -> None:
        self.name, self.tenant, self.attributes = name, tenant, attributes
        self._started = time.perf_counter()

    def set(self, **attributes: object) -> None:
        self.attributes.update(attributes)

    def child(self, name: str, **attributes: object) -> LoggingSpan:
        return LoggingSpan(f"{self.name}.{name}", self.tenant, dict(attributes))

    def __enter__(self) -> Self:
        self._started = time.perf_counter()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        elapsed = (time.perf_counter() - self._started) * 1000
        outcome = f" error={type(exc).__name__}" if exc is not None else ""
        _log.debug(
            "span %s tenant=%s %.1fms%s %s",
            self.name,
            self.tenant,
            elapsed,
            outcome,
            self.attributes,
        )


class LoggingTracer:
    """Logs spans at DEBUG on the ``ragsage.trace`` logger."""

    def span(self, name: str, *, tenant: str | None, **attributes: object) -> LoggingSpan:
        return LoggingSpan(name, tenant, dict(attributes))

    def event(self, name: str, **fields: object) -> None:
        _log.debug("event %s %s", name, fields)
