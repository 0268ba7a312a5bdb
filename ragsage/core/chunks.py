"""Chunks: a document's retrievable passages, their ids, and their scores in a retrieval.

All frozen: a chunk that crosses a port cannot be changed behind the back of the
stage that made it, and equal chunks compare equal, which dedup leans on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ragsage.core.documents import Document


@dataclass(frozen=True, slots=True)
class ChunkSection:
    """The part of a chunk that one section of its document holds.

    ``start``/``end`` are offsets in the chunk's text; ``page_start``/``page_end``
    the same words' span in the text of page ``page``.  A chunk that joined
    small sections lists each, in order, so a citation can name the section a
    quoted sentence sits in rather than the chunk's first.
    """

    heading_path: tuple[str, ...]
    start: int
    end: int
    page: int = 0
    page_start: int = 0
    page_end: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "heading_path": list(self.heading_path),
            "start": self.start,
            "end": self.end,
            "page": self.page,
            "page_start": self.page_start,
            "page_end": self.page_end,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ChunkSection:
        return cls(
            heading_path=tuple(str(part) for part in data.get("heading_path") or ()),
            start=int(data.get("start") or 0),
            end=int(data.get("end") or 0),
            page=int(data.get("page") or 0),
            page_start=int(data.get("page_start") or 0),
            page_end=int(data.get("page_end") or 0),
        )


@dataclass(frozen=True, slots=True)
class Chunk:
    """A retrievable passage of a document.

    ``text`` is what a reader sees and what gets cited; ``embed_text`` is what the
    embedder sees (the text plus any context a contextualizer prepended). ``source``
    and ``created_at`` are copied from the document so stores can filter and apply
    recency bias without a join.  ``start_char``/``end_char`` are the span of the
    page text (of the chunk's first page) the chunk was cut from; a chunk that
    repeats a table header, or merges sections, covers that span without being a
    verbatim slice of it.  ``sections`` lists the sections a joined chunk holds
    (empty: all of it is ``heading_path``'s); :meth:`section_at` reads it.
    """

    id: str
    document_id: str
    ordinal: int
    text: str
    embed_text: str
    heading_path: tuple[str, ...] = ()
    page_numbers: tuple[int, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    source: str = ""
    created_at: datetime | None = None
    start_char: int = 0
    end_char: int = 0
    sections: tuple[ChunkSection, ...] = ()

    def section_at(self, offset: int) -> ChunkSection:
        """The section holding the chunk text's character at ``offset``: the last one
        starting at or before it (a one-section chunk's is all of it)."""
        if self.sections:
            started = [section for section in self.sections if section.start <= offset]
            return started[-1] if started else self.sections[0]
        page = self.page_numbers[0] if self.page_numbers else 0
        return ChunkSection(
            self.heading_path, 0, len(self.text), page, self.start_char, self.end_char
        )


def chunk_id(document_id: str, ordinal: int) -> str:
    """The id of a document's ``ordinal``-th chunk: ``<document>:<ordinal>``."""
    return f"{document_id}:{ordinal}"


def split_chunk_id(value: str) -> tuple[str, int] | None:
    """(document id, ordinal) of a chunk id, or None when ``value`` is not one."""
    document_id, _, ordinal = value.rpartition(":")
    if not document_id or not ordinal.isdigit() or len(ordinal) > 9:
        return None
    return document_id, int(ordinal)


@dataclass(frozen=True, slots=True)
class EmbeddedChunk:
    """A chunk together with the vector of its ``embed_text``."""

    chunk: Chunk
    vector: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class ScoredChunk:
    """A retrieval candidate; each stage's score is kept apart from the fused one."""

    chunk: Chunk
    score: float
    vector_score: float | None = None
    keyword_score: float | None = None
    rerank_score: float | None = None


@dataclass(frozen=True, slots=True)
class Ranked:
    """A candidate by chunk id and its stage's raw score.

    ``chunk`` is there when the store read the row anyway (the first few
    results of a ranking); otherwise it is read later, if the candidate wins.
    """

    chunk_id: str
    score: float
    chunk: Chunk | None = None


def make_chunk(
    document: Document,
    ordinal: int,
    text: str,
    *,
    heading_path: tuple[str, ...] = (),
    page_numbers: tuple[int, ...] = (),
    metadata: Mapping[str, Any] | None = None,
    start_char: int = 0,
    end_char: int = 0,
    sections: tuple[ChunkSection, ...] = (),
) -> Chunk:
    """A chunk of ``document`` carrying the document's source, time and metadata.

    Chunkers build chunks through this so every one of them copies the document
    fields the stores filter on in the same way (the document title lands in the
    metadata so citations can name it); ``embed_text`` starts as the text and the
    contextualizer replaces it.
    """
    merged = {"title": document.title, **document.metadata, **(metadata or {})}
    return Chunk(
        id=chunk_id(document.id, ordinal),
        document_id=document.id,
        ordinal=ordinal,
        text=text,
        embed_text=text,
        heading_path=heading_path,
        page_numbers=page_numbers,
        metadata=merged,
        source=document.source,
        created_at=document.created_at,
        start_char=start_char,
        end_char=end_char,
        sections=sections,
    )
