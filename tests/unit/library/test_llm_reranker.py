"""LLMReranker against small fake models: an honest grader and a broken one."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

from ragsage import RAG, LLMReranker
from ragsage.core.chunks import Chunk, ScoredChunk
from ragsage.core.pages import PageImage

from .conftest import HANDBOOK

_PASSAGE = re.compile(r"^\[(\d+)\] (.*)$", re.MULTILINE)


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


class OverlapGrader:
    """Grades each passage by the share of query words it contains, as a model would reply."""

    def __init__(self, *, skip: frozenset[int] = frozenset()) -> None:
        self.skip = skip  # 1-based passage numbers left ungraded
        self.prompts: list[str] = []

    async def generate(self, prompt: str) -> AsyncIterator[str]:
        self.prompts.append(prompt)
        query = prompt.split("Query: ", 1)[1].split("\n", 1)[0]
        wanted = _words(query)
        lines = ["Sure, here are the grades:"]
        for number, text in _PASSAGE.findall(prompt.split("Passages:", 1)[1]):
            if int(number) in self.skip:
                continue
            grade = 10 * len(wanted & _words(text)) / max(1, len(wanted))
            lines.append(f"{number}: {grade:.1f}")
        for line in lines:
            yield line + "\n"

    async def transcribe(self, image: PageImage) -> str:
        return ""


class Garbage:
    """A model that answers anything but grades."""

    def __init__(self, reply: str) -> None:
        self.reply = reply

    async def generate(self, prompt: str) -> AsyncIterator[str]:
        yield self.reply

    async def transcribe(self, image: PageImage) -> str:
        return ""


def candidate(n: int, text: str) -> ScoredChunk:
    chunk = Chunk(id=f"d:{n}", document_id="d", ordinal=n, text=text, embed_text=text)
    return ScoredChunk(chunk=chunk, score=1.0 / (n + 1))


CANDIDATES = [
    candidate(0, "Parking rules for visitors."),
    candidate(1, "Holiday allowance is 28 days."),
    candidate(2, "Paid holiday days and holiday carry over rules per year."),
    candidate(3, "The canteen opens at noon."),
]


async def test_grades_reorder_candidates_and_are_normalised() -> None:
    grader = OverlapGrader()
    reranked = await LLMReranker(grader, batch_size=3).rerank(
        "holiday days per year", CANDIDATES, top_k=3
    )
    assert [c.chunk.id for c in reranked] == ["d:2", "d:1", "d:0"]
    assert reranked[0].rerank_score == 1.0
    assert all(0.0 <= (c.rerank_score or 0.0) <= 1.0 for c in reranked)
    assert reranked[0].score == CANDIDATES[2].score  # the fused score is kept apart
    assert len(grader.prompts) == 2  # four candidates in batches of three


async def test_an_ungraded_candidate_sinks_instead_of_failing() -> None:
    reranked = await LLMReranker(OverlapGrader(skip=frozenset({4}))).rerank(
        "holiday days per year", CANDIDATES, top_k=4
    )
    assert [c.chunk.id for c in reranked][-2:] == ["d:0", "d:3"]
    assert reranked[-1].rerank_score == 0.0


async def test_garbage_replies_leave_every_candidate_at_zero_in_order() -> None:
    for reply in ("I cannot help with that.", "", "1: lots\n99: 7\n0: 9", "{not json"):
        reranked = await LLMReranker(Garbage(reply)).rerank("holiday", CANDIDATES, top_k=4)
        assert [c.chunk.id for c in reranked] == [c.chunk.id for c in CANDIDATES]
        assert {c.rerank_score for c in reranked} == {0.0}


async def test_out_of_range_grades_are_clamped() -> None:
    reranked = await LLMReranker(Garbage("1: 15\n2: -4\n3: 7.5")).rerank(
        "q", CANDIDATES[:3], top_k=3
    )
    assert [(c.chunk.id, c.rerank_score) for c in reranked] == [
        ("d:0", 1.0),
        ("d:2", 0.75),
        ("d:1", 0.0),
    ]


def test_the_facade_reranks_with_an_llm() -> None:
    with RAG.default(reranker=LLMReranker(OverlapGrader())) as rag:
        rag.index_text(HANDBOOK, document_id="handbook")
        context = rag.search("report a lost laptop device", rerank=True)
        assert "lost device" in context.results[0].chunk.text
        assert context.results[0].rerank_score is not None


def test_conforms_to_the_reranker_port() -> None:
    from ragsage.core.ports import Reranker

    assert isinstance(LLMReranker(OverlapGrader()), Reranker)


def test_grades_dressed_in_markdown_or_arrows_are_read() -> None:
    from ragsage.query.llm_reranker import parse_grades

    reply = "**1**: 9\n2: **8**\n3 → 7\nPassage 4 -> 6\n`5`: 3\nno grade here"
    assert parse_grades(reply, 5) == {1: 9.0, 2: 8.0, 3: 7.0, 4: 6.0, 5: 3.0}
