"""Tracers the engine ships: a no-op default and one that logs span timings."""

from __future__ import annotations

import logging
import time
from types import TracebackType
from typing import Self

_log = logging.getLogger("ragsage.trace")


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
