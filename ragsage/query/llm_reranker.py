"""A reranker that asks any LLMClient to grade passages against the query."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import replace

from ragsage.core.chunks import ScoredChunk
from ragsage.core.errors import ConfigurationError
from ragsage.core.ports import LLMClient

_MAX_GRADE = 10.0
# "3: 7", "[3] 7.5", "Passage 3 - 7/10", "3) 7": a passage number, then its grade.
_GRADE_LINE = re.compile(
    r"^\W*(?:passage\s*)?\[?(\d{1,4})\]?\s*(?:->|=>|→|[:=)\-–]|\.(?=\s)|\bis\b)?\s*"
    r"(-?\d+(?:\.\d+)?)",
    re.IGNORECASE,
)

_MARKUP = re.compile(r"[*_`]")


def grading_prompt(query: str, passages: Sequence[str]) -> str:
    """The instruction sent for one batch: grade each numbered passage 0–10."""
    blocks = "\n\n".join(f"[{number}] {text}" for number, text in enumerate(passages, start=1))
    return (
        "You grade search results. For each numbered passage below, judge how well it "
        "helps answer the query, from 0 (unrelated) to 10 (answers it directly).\n"
        "Reply with one line per passage in the form `<number>: <grade>` and nothing else.\n\n"
        f"Query: {query}\n\nPassages:\n\n{blocks}\n"
    )


def parse_grades(reply: str, count: int) -> dict[int, float]:
    """Grades by 1-based passage number; lines that are not grades are ignored.

    Grades are clamped to 0–10; numbers outside ``1..count`` are ignored, and the
    first grade given to a passage wins.
    """
    grades: dict[int, float] = {}
    for line in reply.splitlines():
        # Chat models dress grades in Markdown ("**1**: 8"); the marks carry nothing.
        match = _GRADE_LINE.match(_MARKUP.sub("", line).strip())
        if match is None:
            continue
        number, grade = int(match.group(1)), float(match.group(2))
        if 1 <= number <= count and number not in grades:
            grades[number] = min(_MAX_GRADE, max(0.0, grade))
    return grades


class LLMReranker:
    """The Reranker port on a generative model: it grades candidates in batches.

    Each candidate gets ``rerank_score`` = grade / 10, in [0, 1]; a candidate the
    model left ungraded (a truncated or malformed reply) scores 0 rather than
    failing the search.  Candidates are returned best first, ties in their
    incoming order, at most ``top_k`` of them.
    """

    def __init__(
        self, llm: LLMClient, *, batch_size: int = 10, max_passage_chars: int = 1500
    ) -> None:
        if batch_size < 1:
            raise ConfigurationError(f"batch_size must be at least 1, got {batch_size}")
        if max_passage_chars < 100:
            raise ConfigurationError(
                f"max_passage_chars must be at least 100, got {max_passage_chars}"
            )
        self.llm = llm
        self.batch_size = batch_size
        self.max_passage_chars = max_passage_chars

    async def rerank(
        self, query: str, candidates: Sequence[ScoredChunk], *, top_k: int
    ) -> Sequence[ScoredChunk]:
        if not candidates or top_k < 1:
            return []
        batches = [
            candidates[start : start + self.batch_size]
            for start in range(0, len(candidates), self.batch_size)
        ]
        graded = await asyncio.gather(*(self._grade(query, batch) for batch in batches))
        scores = [score for batch in graded for score in batch]
        order = sorted(range(len(candidates)), key=lambda i: (-scores[i], i))
        return [_with_rerank(candidates[i], scores[i]) for i in order[:top_k]]

    async def _grade(self, query: str, batch: Sequence[ScoredChunk]) -> list[float]:
        passages = [" ".join(c.chunk.text.split())[: self.max_passage_chars] for c in batch]
        reply = "".join(
            [piece async for piece in self.llm.generate(grading_prompt(query, passages))]
        )
        grades = parse_grades(reply, len(batch))
        return [grades.get(number, 0.0) / _MAX_GRADE for number in range(1, len(batch) + 1)]


def _with_rerank(candidate: ScoredChunk, score: float) -> ScoredChunk:
    return replace(candidate, rerank_score=score)
