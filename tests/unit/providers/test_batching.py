from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ragsage.adapters.providers.batching import BUDGET_SHARE, estimate_tokens, plan_batches


def test_batches_respect_the_count_limit() -> None:
    batches = plan_batches(["a"] * 300, max_items=128, max_tokens=10**6)
    assert [len(batch) for batch in batches] == [128, 128, 44]


def test_batches_respect_the_token_budget() -> None:
    texts = ["word " * 600] * 10  # ~1,000 estimated tokens each
    batches = plan_batches(texts, max_items=128, max_tokens=5_000)
    budget = 5_000 * BUDGET_SHARE
    assert len(batches) > 1
    for batch in batches:
        assert sum(estimate_tokens(texts[i]) for i in batch) <= budget


def test_an_oversized_text_goes_alone() -> None:
    texts = ["small", "x" * 100_000, "small"]
    assert plan_batches(texts, max_items=10, max_tokens=1_000) == [
        range(0, 1),
        range(1, 2),
        range(2, 3),
    ]


def test_no_texts_no_batches() -> None:
    assert plan_batches([], max_items=10, max_tokens=100) == []


def test_the_estimate_is_high_for_english() -> None:
    # English runs about four bytes a token; the estimate must not undercount it.
    text = "The quick brown fox jumps over the lazy dog. " * 20
    assert estimate_tokens(text) >= len(text) / 4


@given(
    st.lists(st.text(max_size=300), max_size=60),
    st.integers(min_value=1, max_value=20),
    st.integers(min_value=1, max_value=400),
)
def test_batches_cover_every_text_once_in_order(
    texts: list[str], max_items: int, max_tokens: int
) -> None:
    batches = plan_batches(texts, max_items=max_items, max_tokens=max_tokens)
    assert [i for batch in batches for i in batch] == list(range(len(texts)))
    assert all(0 < len(batch) <= max_items for batch in batches)
