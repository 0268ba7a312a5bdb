"""Each metric against values worked out by hand for tiny rankings."""

from __future__ import annotations

import math

import pytest

from ragsage.evaluation.metrics import (
    Judged,
    aggregate,
    ndcg_at,
    pass_at,
    percentile,
    question_metrics,
    recall_at,
    reciprocal_rank,
)

NONE: frozenset[str] = frozenset()


def ranking(*covers: str | None, grades: dict[str, float], one_answer: bool = False) -> Judged:
    return Judged(
        covers=tuple(frozenset({c}) if c else NONE for c in covers),
        grades=grades,
        one_answer=one_answer,
    )


# Graded BEIR-style ranking: positions hold documents x, a, y, b, z.
# a has grade 2, b grade 1, c (never retrieved) grade 1.
GRADED = ranking(None, "a", None, "b", None, grades={"a": 2.0, "b": 1.0, "c": 1.0})


def test_ndcg_with_graded_gains_and_log2_discount() -> None:
    # DCG@5 = 2/log2(3) + 1/log2(5); ideal = 2/log2(2) + 1/log2(3) + 1/log2(4)
    dcg = 2 / math.log2(3) + 1 / math.log2(5)
    ideal = 2 + 1 / math.log2(3) + 1 / 2
    assert ndcg_at(GRADED, 5) == pytest.approx(dcg / ideal)
    assert ndcg_at(GRADED, 5) == pytest.approx(1.6925 / 3.1309, abs=1e-4)  # 0.5406
    # At k=1 nothing relevant is in the window.
    assert ndcg_at(GRADED, 1) == 0.0
    # k=2: DCG = 2/log2(3) = 1.2619; ideal@2 = 2 + 1/log2(3) = 2.6309
    assert ndcg_at(GRADED, 2) == pytest.approx(1.2619 / 2.6309, abs=1e-4)


def test_binary_ndcg_of_a_perfect_ranking_is_one() -> None:
    perfect = ranking("a", "b", None, grades={"a": 1.0, "b": 1.0})
    assert ndcg_at(perfect, 10) == pytest.approx(1.0)


def test_recall_counts_relevant_units_found_in_the_top_k() -> None:
    # Three relevant documents (a, b, c); a at rank 2, b at rank 4.
    assert recall_at(GRADED, 1) == 0.0
    assert recall_at(GRADED, 2) == pytest.approx(1 / 3)
    assert recall_at(GRADED, 5) == pytest.approx(2 / 3)


def test_mrr_takes_the_first_relevant_rank_within_the_depth() -> None:
    assert reciprocal_rank(GRADED) == 0.5
    assert reciprocal_rank(GRADED, depth=1) == 0.0
    assert reciprocal_rank(ranking(None, None, None, grades={"a": 1.0})) == 0.0


def test_pass_at_k_is_whether_anything_relevant_made_the_cut() -> None:
    assert pass_at(GRADED, 1) == 0.0
    assert pass_at(GRADED, 2) == 1.0


def test_a_second_chunk_with_the_same_answer_earns_nothing() -> None:
    # One relevant unit found twice: the duplicate at rank 2 adds no gain.
    twice = ranking("a", "a", grades={"a": 1.0})
    assert ndcg_at(twice, 10) == pytest.approx(1.0)


def test_qa_answers_are_alternatives_for_ndcg_but_counted_for_recall() -> None:
    # Two answer spans (0 and 1); the first relevant chunk is at rank 2 and holds
    # span 0, the chunk at rank 3 holds span 1.
    judged = ranking(None, "0", "1", grades={"0": 1.0, "1": 1.0}, one_answer=True)
    assert ndcg_at(judged, 10) == pytest.approx(1 / math.log2(3))  # 0.6309
    assert recall_at(judged, 2) == 0.5
    assert recall_at(judged, 3) == 1.0
    # Both spans in the first chunk: a perfect score, not a penalty.
    both = Judged(covers=(frozenset({"0", "1"}),), grades={"0": 1.0, "1": 1.0}, one_answer=True)
    assert ndcg_at(both, 10) == pytest.approx(1.0)


def test_question_metrics_include_tokens_at_every_k() -> None:
    metrics = question_metrics(GRADED, [1, 3], chunk_tokens=[10, 20, 30, 40, 50])
    assert metrics["tokens@1"] == 10
    assert metrics["tokens@3"] == 60
    assert metrics["mrr"] == 0.5
    assert metrics["recall@3"] == pytest.approx(1 / 3)
    assert set(metrics) == {
        "ndcg@1", "ndcg@3", "recall@1", "recall@3", "pass@1", "pass@3",
        "tokens@1", "tokens@3", "mrr",
    }  # fmt: skip


def test_aggregate_and_percentiles() -> None:
    assert aggregate([{"mrr": 1.0}, {"mrr": 0.5}, {"mrr": 0.0}]) == {"mrr": 0.5}
    latencies = [float(n) for n in range(1, 21)]  # 1..20 ms
    assert percentile(latencies, 0.5) == 10.0
    assert percentile(latencies, 0.95) == 19.0
    assert percentile([], 0.5) == 0.0
