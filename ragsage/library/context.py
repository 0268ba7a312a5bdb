"""What :meth:`ragsage.RAG.search` returns: ranked hits and prompt-ready text."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ragsage.library.tracking import chunk_title
from ragsage.query.results import SearchHit

_ELLIPSIS = "…"
# A block cut shorter than this carries a header and a few words: noise, not context.
_MIN_PARTIAL_BLOCK = 80


@dataclass(frozen=True, slots=True)
class RAGContext:
    """The hits of one search, best first, with totals and per-stage timings.

    ``citations`` holds each hit's ``[n]`` number: its rank, or inside a
    tracked run the number the run gave that passage.
    """

    query: str
    results: tuple[SearchHit, ...] = ()
    total_found: int = 0
    timing_ms: dict[str, float] = field(default_factory=dict)
    citations: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not self.citations:
            object.__setattr__(self, "citations", tuple(range(1, len(self.results) + 1)))
        elif len(self.citations) != len(self.results):
            raise ValueError("citations must number every result")

    def __len__(self) -> int:
        return len(self.results)

    def to_prompt_context(self, max_chars: int = 8000) -> str:
        """The hits as numbered ``[n]`` blocks for a prompt, at most ``max_chars`` long.

        Blocks go in rank order; the first that does not fit is cut short (when
        enough room is left to be useful) and the rest are left out.
        """
        if max_chars < 1:
            raise ValueError(f"max_chars must be positive, got {max_chars}")
        out = ""
        for number, hit in zip(self.citations, self.results, strict=True):
            block = _block(number, hit)
            joined = f"{out}\n\n{block}" if out else block
            if len(joined) <= max_chars:
                out = joined
                continue
            room = max_chars - len(out) - (2 if out else 0)
            if room >= min(_MIN_PARTIAL_BLOCK, len(block)):
                cut = block[: room - len(_ELLIPSIS)].rstrip() + _ELLIPSIS
                out = f"{out}\n\n{cut}" if out else cut
            break
        return out

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable form (chunk metadata is passed through as given)."""
        return {
            "query": self.query,
            "total_found": self.total_found,
            "timing_ms": dict(self.timing_ms),
            "results": [
                {"citation": number, **hit.to_dict()}
                for number, hit in zip(self.citations, self.results, strict=True)
            ],
        }


def _block(number: int, hit: SearchHit) -> str:
    chunk = hit.chunk
    title = chunk_title(chunk)
    heading = " > ".join(part for part in chunk.heading_path if part != title)
    label = f"{title} — {heading}" if heading else title
    where = f" ({chunk.source})" if chunk.source and chunk.source != title else ""
    return f"[{number}] {label}{where}\n{hit.context_text.strip()}"
