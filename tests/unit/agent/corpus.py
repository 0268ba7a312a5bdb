"""A small, honest in-memory ToolBackend for the agent tests."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ragsage.core.errors import InvalidRequest

_WORD = re.compile(r"\w+")


@dataclass
class Passage:
    chunk_id: str
    document_id: str
    source: str
    text: str


@dataclass
class Corpus:
    """Ranks passages by how many query words they share; records every call."""

    passages: list[Passage] = field(default_factory=list)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def add(self, source: str, *texts: str) -> None:
        document_id = f"doc-{source}"
        for ordinal, text in enumerate(texts):
            self.passages.append(Passage(f"{document_id}:{ordinal}", document_id, source, text))

    def tool_search(self, query: str, *, top_k: int, rerank: bool) -> dict[str, Any]:
        self.calls.append(("search", {"query": query, "top_k": top_k, "rerank": rerank}))
        words = {w.lower() for w in _WORD.findall(query)}
        if not words:
            raise InvalidRequest("the query has no words to search for")
        scored = [
            (len(words & {w.lower() for w in _WORD.findall(p.text)}), p) for p in self.passages
        ]
        hits = sorted(((s, p) for s, p in scored if s), key=lambda pair: -pair[0])
        return {
            "query": query,
            "total_found": len(hits),
            "results": [
                {
                    "citation": number,
                    "chunk_id": p.chunk_id,
                    "document_id": p.document_id,
                    "source": p.source,
                    "title": p.source,
                    "heading_path": [],
                    "score": float(score),
                    "text": p.text,
                }
                for number, (score, p) in enumerate(hits[:top_k], start=1)
            ],
        }

    def tool_fetch_chunk(
        self, chunk_id: str, *, chunks_above: int, chunks_below: int
    ) -> dict[str, Any] | None:
        self.calls.append(("fetch", {"chunk_id": chunk_id, "above": chunks_above}))
        for p in self.passages:
            if p.chunk_id != chunk_id:
                continue
            same = [q for q in self.passages if q.document_id == p.document_id]
            at = same.index(p)
            return {
                "chunk_id": p.chunk_id,
                "document_id": p.document_id,
                "source": p.source,
                "title": p.source,
                "text": p.text,
                "context_above": [
                    {"chunk_id": q.chunk_id, "text": q.text}
                    for q in same[max(0, at - chunks_above) : at]
                ],
                "context_below": [
                    {"chunk_id": q.chunk_id, "text": q.text}
                    for q in same[at + 1 : at + 1 + chunks_below]
                ],
            }
        return None

    def tool_list_sources(self) -> list[str]:
        self.calls.append(("sources", {}))
        return sorted({p.source for p in self.passages})


def sample() -> Corpus:
    corpus = Corpus()
    corpus.add(
        "handbook.md",
        "Employees get 25 days of paid holiday each year.",
        "Holiday requests go to your manager two weeks ahead.",
        "Unused holiday days expire at the end of March.",
    )
    corpus.add("security.md", "Laptops must use full-disk encryption.")
    return corpus
