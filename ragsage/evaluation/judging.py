"""Deciding which retrieved chunks answer a question.

QA spans are judged per chunk: a chunk satisfies an answer span when it comes
from the question's document and the span's words appear, contiguously, among
the chunk's words.  Comparing word sequences (``ragsage.core.text.words``) rather
than raw strings survives what parsing does to text — HTML turned into
Markdown, escaped characters, backticks, re-flowed whitespace.

A question marked ``match: overlap`` (a definition in source code, which a
chunker may cut into parts) is met by a chunk when the word n-grams the two
share (:data:`OVERLAP_N` words, fewer when either is shorter) make up at least
half of the smaller one's n-grams: the chunk is mostly a part of the
definition, or holds most of it.  A chunk that merely mentions the
definition's name, or holds its first line at the end of something else, is
not an answer.

BEIR questions are judged per document: chunks collapse into documents in the
order each document is first seen, and a document satisfies itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from ragsage.core.text import words
from ragsage.evaluation.datasets import Question
from ragsage.evaluation.metrics import Judged


@dataclass(frozen=True, slots=True)
class RankedChunk:
    """One retrieved chunk, its engine ids, and the dataset documents it stands for.

    ``documents`` has more than one id when the engine stored identical files
    once (it deduplicates by content).
    """

    chunk_id: str
    engine_document_id: str
    documents: tuple[str, ...]
    text: str


def judge(question: Question, ranked: Sequence[RankedChunk]) -> Judged:
    """The judged ranking of ``ranked`` for ``question``."""
    if question.answers:
        return _judge_spans(question, ranked)
    return _judge_documents(question.relevant, ranked)


def document_order(ranked: Sequence[RankedChunk]) -> list[RankedChunk]:
    """The first chunk of each engine document, in the order documents first appear."""
    seen: set[str] = set()
    out = []
    for chunk in ranked:
        if chunk.engine_document_id not in seen:
            seen.add(chunk.engine_document_id)
            out.append(chunk)
    return out


def _judge_documents(relevant: Mapping[str, float], ranked: Sequence[RankedChunk]) -> Judged:
    covers = tuple(
        frozenset(doc for doc in chunk.documents if relevant.get(doc, 0.0) > 0)
        for chunk in document_order(ranked)
    )
    return Judged(covers=covers, grades=dict(relevant))


OVERLAP_N = 8
OVERLAP_SHARE = 0.5


def _judge_spans(question: Question, ranked: Sequence[RankedChunk]) -> Judged:
    (document,) = question.relevant
    spans = [_tokens(answer) for answer in question.answers]
    meets = overlaps if question.match == "overlap" else contains
    covers = []
    for chunk in ranked:
        if document not in chunk.documents:
            covers.append(frozenset[str]())
            continue
        tokens = _tokens(chunk.text)
        covers.append(frozenset(str(i) for i, span in enumerate(spans) if meets(tokens, span)))
    return Judged(
        covers=tuple(covers), grades={str(i): 1.0 for i in range(len(spans))}, one_answer=True
    )


def contains(haystack: Sequence[str], needle: Sequence[str]) -> bool:
    """Whether ``needle`` occurs as a contiguous run inside ``haystack``."""
    size = len(needle)
    if size == 0 or size > len(haystack):
        return False
    first = needle[0]
    return any(
        haystack[i] == first and tuple(haystack[i : i + size]) == tuple(needle)
        for i in range(len(haystack) - size + 1)
    )


def overlaps(chunk: Sequence[str], span: Sequence[str]) -> bool:
    """Whether ``chunk`` and ``span`` share at least half of the smaller one's word n-grams."""
    size = min(OVERLAP_N, len(chunk), len(span))
    if size == 0:
        return False
    mine, theirs = _grams(tuple(chunk), size), _grams(tuple(span), size)
    return len(mine & theirs) >= OVERLAP_SHARE * min(len(mine), len(theirs))


@lru_cache(maxsize=4096)
def _grams(tokens: tuple[str, ...], size: int) -> frozenset[tuple[str, ...]]:
    return frozenset(tokens[i : i + size] for i in range(len(tokens) - size + 1))


@lru_cache(maxsize=8192)
def _tokens(text: str) -> tuple[str, ...]:
    return tuple(words(text))
