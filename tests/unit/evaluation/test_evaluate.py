"""The library entry point a re-index gate uses: any search callable over an indexed corpus."""

from __future__ import annotations

import pytest

from ragsage.adapters.parsing.tokens import make_token_counter
from ragsage.core.chunks import Chunk
from ragsage.evaluation import Question, evaluate
from ragsage.query import RetrievalOptions, RetrievalResult, SearchHit

# A fixed "index": which documents each query returns, best first.
RANKINGS = {
    "cranes": ["d9", "d1", "d2"],
    "reefers": ["d3"],
    "nothing": [],
}
QUESTIONS = [
    Question(id="a", text="cranes", relevant={"d1": 1.0}, kind="fact"),
    Question(id="b", text="reefers", relevant={"d3": 1.0}, kind="keywords"),
    Question(id="c", text="nothing", relevant={"d5": 1.0}, kind="fact"),
]


async def search(query: str, options: RetrievalOptions) -> RetrievalResult:
    hits = tuple(
        SearchHit(Chunk(f"{doc}:0", doc, 0, "four words of text", "four words of text"), 1.0)
        for doc in RANKINGS[query][: options.top_k]
    )
    return RetrievalResult(query=query, hits=hits, total_found=len(hits))


async def test_evaluate_scores_any_search_callable() -> None:
    seen: list[RetrievalOptions] = []

    async def recording(query: str, options: RetrievalOptions) -> RetrievalResult:
        seen.append(options)
        return await search(query, options)

    report = await evaluate(
        recording,
        QUESTIONS,
        ks=[1, 3],
        options=RetrievalOptions(hybrid_alpha=0.0),
        count_tokens=make_token_counter(),
    )
    assert report.ks == (1, 3, 10)
    assert report.metrics["mrr"] == pytest.approx((1 / 2 + 1 + 0) / 3)
    assert report.metrics["pass@1"] == pytest.approx(1 / 3)
    assert report.metrics["recall@3"] == pytest.approx(2 / 3)
    assert report.metrics["tokens@1"] == pytest.approx(2 * 4 / 3)  # "four words of text"
    assert report.by_kind["fact"]["mrr"] == pytest.approx(0.25)
    assert report.questions[0].documents == ("d9", "d1", "d2")
    # Depth is raised to the deepest cut-off; the caller's alpha is kept.
    assert {(o.top_k, o.hybrid_alpha) for o in seen} == {(10, 0.0)}
    assert report.timing["questions"] == 3


async def test_document_ids_map_engine_ids_back_to_the_dataset() -> None:
    # The engine's ids differ from the dataset's: its d2 is the dataset's d1, at rank 3.
    renamed = {"d9": ("d9",), "d1": ("elsewhere",), "d2": ("d1",)}
    report = await evaluate(
        search, QUESTIONS[:1], ks=[5], document_ids=renamed, count_tokens=make_token_counter()
    )
    assert report.metrics["mrr"] == pytest.approx(1 / 3)


@pytest.mark.parametrize("depth", [0, -1])
def test_an_mrr_depth_below_one_is_refused(depth: int) -> None:
    from ragsage.evaluation.runner import retrieval_depth

    with pytest.raises(ValueError, match="MRR depth must be at least 1"):
        retrieval_depth((10,), depth)
