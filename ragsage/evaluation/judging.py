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

At a token budget (:func:`found_within`), what a reader is handed is the
results' words up to the first N whitespace-separated tokens, whatever the size
of each chunk, each result's heading path (file, class, signature: what a
search returns with the text) counted before its text, so moving words out of
the text into a heading does not make them free.  A code answer counts as
found when at least half of its non-blank lines are among the whole lines
handed over from its document (each handed-over line standing for one answer
line), a prose span when it is handed over whole.  Chunkers that return bigger
chunks get no credit for the extra text.
"""

from __future__ import annotations

from collections import Counter
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
    # Words handed over with the text: the heading path and any section headings.
    heading_words: int = 0


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


BUDGETS = (330, 660, 1320)


def found_within(
    question: Question, ranked: Sequence[RankedChunk], budgets: Sequence[int] = BUDGETS
) -> dict[int, float]:
    """For each budget, 1.0 when ``question``'s answer is handed over within it, else 0.0.

    A code answer (``match: overlap``) is found by its lines, as above; a prose
    span when its words run on, in order, inside one handed-over chunk of its
    document, cut at the budget.  Empty for a question judged by documents.
    """
    if not question.answers or not budgets:
        return {}
    (document,) = question.relevant
    if question.match != "overlap":
        return {budget: _span_within(question, ranked, document, budget) for budget in budgets}
    answers = [Counter(_lines(answer)) for answer in question.answers]
    # Every whole line of the results, in order, with the tokens handed over once it ends.
    handed: list[tuple[str, int]] = []
    spent = 0
    for chunk in ranked:
        mine = document in chunk.documents
        spent += chunk.heading_words
        for line in chunk.text.splitlines():
            spent += len(line.split())
            if mine and line.strip():
                handed.append((" ".join(line.split()), spent))
        if spent >= max(budgets):
            break
    out = {}
    for budget in budgets:
        within = Counter(line for line, end in handed if end <= budget)
        out[budget] = float(
            any(
                lines and sum((lines & within).values()) >= 0.5 * sum(lines.values())
                for lines in answers
            )
        )
    return out


def _span_within(
    question: Question, ranked: Sequence[RankedChunk], document: str, budget: int
) -> float:
    spans = [_tokens(answer) for answer in question.answers]
    left = budget
    for chunk in ranked:
        left -= chunk.heading_words
        if left <= 0:
            break
        handed = chunk.text.split()[:left]
        left -= len(handed)
        if document in chunk.documents:
            tokens = _tokens(" ".join(handed))
            if any(contains(tokens, span) for span in spans):
                return 1.0
    return 0.0


def _lines(text: str) -> list[str]:
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]
