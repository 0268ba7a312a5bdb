"""Span relevance compares word sequences, so parsing's reformatting does not hide answers."""

from __future__ import annotations

from ragsage.evaluation.datasets import Question
from ragsage.evaluation.judging import RankedChunk, judge
from ragsage.evaluation.metrics import ndcg_at, recall_at, reciprocal_rank

QUESTION = Question(
    id="q",
    text="How do I roll back?",
    relevant={"deploy.md": 1.0},
    answers=("deployctl rollback --to previous",),
)


def chunk(text: str, document: str = "deploy.md", engine: str = "doc_1") -> RankedChunk:
    return RankedChunk(f"{engine}:0", engine, (document,), text)


def test_a_span_survives_markdown_escaping_and_whitespace() -> None:
    ranked = [chunk("To roll back, call `deployctl rollback\n   --to previous` and post")]
    assert reciprocal_rank(judge(QUESTION, ranked)) == 1.0


def test_the_span_must_be_contiguous_and_from_the_questions_document() -> None:
    scattered = chunk("deployctl can rollback anything --to the previous state")
    elsewhere = chunk("deployctl rollback --to previous", document="other.md", engine="doc_2")
    judged = judge(QUESTION, [scattered, elsewhere])
    assert reciprocal_rank(judged) == 0.0


def test_beir_documents_are_ranked_in_first_seen_order_of_their_chunks() -> None:
    question = Question(id="b", text="cranes", relevant={"d1": 2.0, "d2": 1.0})
    ranked = [
        RankedChunk("x:0", "x", ("d9",), ""),
        RankedChunk("a:0", "a", ("d1",), ""),
        RankedChunk("x:1", "x", ("d9",), ""),  # same document again: collapses
        RankedChunk("b:0", "b", ("d2",), ""),
    ]
    judged = judge(question, ranked)
    assert len(judged.covers) == 3
    assert recall_at(judged, 3) == 1.0
    assert recall_at(judged, 2) == 0.5
    assert ndcg_at(judged, 3) < 1.0
