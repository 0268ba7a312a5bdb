"""The shipit API's LLM reranker: a chat model grades passages in batches.

Any object with ``complete(messages=...)`` serves as the model; a batch whose
reply holds no readable marks scores 0 instead of failing the search.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ragsage.library.shipit.types import Chunk


class Message(dict[str, str]):
    """A chat message as ``complete(messages=...)`` takes it.

    A plain ``{"role": ..., "content": ...}`` dict (so it serialises to JSON and
    passes to any chat API as is) that also reads as ``.role`` and ``.content``.
    """

    def __init__(self, role: str, content: str) -> None:
        super().__init__(role=role, content=content)

    @property
    def role(self) -> str:
        return self["role"]

    @property
    def content(self) -> str:
        return self["content"]


_JUDGE = (
    "Rate how well each numbered passage answers the query, from 0 (unrelated) to 10 "
    "(answers it fully). Reply with a JSON array of integers, one per passage, in the "
    "passages' order, and nothing else.\n\nQuery: {query}\n\nPassages:\n{passages}"
)
_ARRAY = re.compile(r"\[[^\[\]]*\]")


@dataclass
class LLMReranker:
    """An LLM as relevance judge: ``llm.complete(messages=[...])`` scores each batch 0–10.

    The scores are divided by ten.  A reply that holds no readable array
    scores its batch 0 (the candidates keep their place behind the judged ones)
    rather than failing the search.
    """

    llm: Any
    batch_size: int = 10

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {self.batch_size}")
        if not callable(getattr(self.llm, "complete", None)):
            raise TypeError("LLMReranker needs an llm with a complete(messages=...) method")

    def rerank(self, query: str, chunks: list[Chunk], top_k: int) -> list[tuple[Chunk, float]]:
        scored: list[tuple[Chunk, float]] = []
        for start in range(0, len(chunks), self.batch_size):
            batch = chunks[start : start + self.batch_size]
            passages = "\n".join(
                f"[{n}] {' '.join(c.text.split())[:500]}" for n, c in enumerate(batch, 1)
            )
            reply = self.llm.complete(
                messages=[Message("user", _JUDGE.format(query=query, passages=passages))]
            )
            marks = _marks(_reply_text(reply), len(batch))
            scored.extend((chunk, mark / 10.0) for chunk, mark in zip(batch, marks, strict=True))
        scored.sort(key=lambda pair: -pair[1])
        return scored[: max(0, top_k)]


def _reply_text(reply: object) -> str:
    if isinstance(reply, str):
        return reply
    if isinstance(reply, dict):
        return str(reply.get("content") or "")
    return str(getattr(reply, "content", "") or "")


def _marks(text: str, expected: int) -> list[float]:
    """The scores in ``text``, clipped to 0–10 and padded with zeros.

    The last JSON array of numbers with one per passage; failing that, the
    last array of numbers (a reply may quote a passage marker such as [1]).
    """
    arrays: list[list[float]] = []
    for candidate in _ARRAY.findall(text):
        try:
            values = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(values, list) and values and all(_number(v) for v in values):
            arrays.append([min(10.0, max(0.0, float(v))) for v in values])
    fitting = [a for a in arrays if len(a) == expected]
    found = fitting[-1] if fitting else (arrays[-1] if arrays else [])
    return (found + [0.0] * expected)[:expected]


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
