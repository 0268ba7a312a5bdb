"""What the ingestion pipeline hands back: a prepared document, and what ingesting did."""

from __future__ import annotations

from dataclasses import dataclass, field

from ragsage.core.chunks import Chunk, EmbeddedChunk
from ragsage.core.documents import Document
from ragsage.core.pages import Page


@dataclass(frozen=True, slots=True)
class IngestResult:
    """What ingesting one source did."""

    document: Document
    chunks: int
    pages: int
    vision_pages: int
    duplicate: bool = False
    parse_cache_hit: bool = False
    timing_ms: dict[str, float] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PreparedDocument:
    """A document ready to write: its resolved pages and embedded chunks."""

    document: Document
    pages: tuple[Page, ...]
    records: tuple[EmbeddedChunk, ...]
    vision_pages: int
    parse_cache_hit: bool
    timing_ms: dict[str, float]
    warnings: tuple[str, ...] = ()

    @property
    def chunks(self) -> tuple[Chunk, ...]:
        return tuple(record.chunk for record in self.records)

    def result(self) -> IngestResult:
        return IngestResult(
            document=self.document,
            chunks=len(self.records),
            pages=len(self.pages),
            vision_pages=self.vision_pages,
            parse_cache_hit=self.parse_cache_hit,
            timing_ms=dict(self.timing_ms),
            warnings=self.warnings,
        )
