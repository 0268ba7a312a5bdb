"""Runs of source tracking on a facade: what its searches and fetches retrieved, numbered."""

from __future__ import annotations

from ragsage.library.context import RAGContext
from ragsage.library.tracking import RAGSource, SourceTracker
from ragsage.query.results import ChunkContext


class TracksSources:
    """``begin_run`` / ``end_run`` for a facade whose results pass through ``_tracked``."""

    _tracker: SourceTracker

    def begin_run(self) -> None:
        """Start collecting what searches and fetches in this thread or task retrieve."""
        self._tracker.begin()

    def end_run(self) -> list[RAGSource]:
        """Close the run and return its sources, numbered 1..n in first-seen order."""
        return self._tracker.end()

    def current_sources(self) -> list[RAGSource]:
        """The open run's sources so far (empty outside a run)."""
        return self._tracker.current()

    def _tracked(self, context: RAGContext) -> RAGContext:
        if not self._tracker.active:
            return context
        numbers = tuple(self._tracker.record(hit.chunk, hit.score) or 0 for hit in context.results)
        return RAGContext(
            query=context.query,
            results=context.results,
            total_found=context.total_found,
            timing_ms=context.timing_ms,
            citations=numbers,
        )

    def _tracked_fetch(self, found: ChunkContext | None) -> ChunkContext | None:
        if found is not None:
            # A passage read by id was not ranked; it enters the run unscored.
            self._tracker.record(found.chunk, 0.0)
        return found
