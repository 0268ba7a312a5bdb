"""Which passages an agent run retrieved, numbered the way it should cite them.

A run lives in a :class:`contextvars.ContextVar`, so each thread and each
asyncio task that opens one has its own; a task started inside a run shares
that run (parallel tool calls of one agent), which is why a run guards its
table with a lock.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from ragsage.core.chunks import Chunk
from ragsage.core.errors import RagsageError


class SourceTrackingError(RagsageError):
    """begin_run/end_run used out of order (a run is already open, or none is)."""


@dataclass(frozen=True, slots=True)
class RAGSource:
    """A passage retrieved during a run; ``index`` is the number to cite it by."""

    index: int
    chunk_id: str
    document_id: str
    text: str
    score: float
    source: str | None = None
    title: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "chunk_id": self.chunk_id,
            "document_id": self.document_id,
            "text": self.text,
            "score": self.score,
            "source": self.source,
            "title": self.title,
            "metadata": dict(self.metadata),
        }


def chunk_title(chunk: Chunk) -> str:
    """The title a chunk carries from its document, else its source name."""
    return str(chunk.metadata.get("title") or chunk.source)


class _Run:
    """The sources of one run in first-seen order."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sources: dict[str, RAGSource] = {}

    def record(self, chunk: Chunk, score: float) -> int:
        """The chunk's number in this run, assigning the next one if it is new."""
        with self._lock:
            known = self._sources.get(chunk.id)
            if known is not None:
                return known.index
            index = len(self._sources) + 1
            self._sources[chunk.id] = RAGSource(
                index=index,
                chunk_id=chunk.id,
                document_id=chunk.document_id,
                text=chunk.text,
                score=score,
                source=chunk.source or None,
                title=chunk_title(chunk),
                metadata=dict(chunk.metadata),
            )
            return index

    def sources(self) -> list[RAGSource]:
        with self._lock:
            return list(self._sources.values())


class SourceTracker:
    """Opens and closes runs in the caller's context and records hits into them."""

    def __init__(self, name: str) -> None:
        self._current: ContextVar[_Run | None] = ContextVar(name, default=None)

    @property
    def active(self) -> bool:
        return self._current.get() is not None

    def begin(self) -> None:
        if self._current.get() is not None:
            raise SourceTrackingError(
                "a run is already open in this context; call end_run() before begin_run()"
            )
        self._current.set(_Run())

    def end(self) -> list[RAGSource]:
        run = self._current.get()
        if run is None:
            raise SourceTrackingError("end_run() called with no open run; call begin_run() first")
        self._current.set(None)
        return run.sources()

    def current(self) -> list[RAGSource]:
        run = self._current.get()
        return run.sources() if run is not None else []

    def record(self, chunk: Chunk, score: float) -> int | None:
        """The chunk's citation number in the open run, or None outside a run."""
        run = self._current.get()
        return run.record(chunk, score) if run is not None else None
