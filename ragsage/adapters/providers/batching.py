"""Splitting embedding requests to fit a provider's per-request limits."""

from __future__ import annotations

from collections.abc import Sequence

# Providers cap a request's total tokens, but counting them exactly needs the
# model's tokenizer (Voyage's lives on a model hub we cannot reach).  A UTF-8
# byte count over three overestimates English (about four bytes a token), and
# the budget keeps a further margin for text that tokenizes worse than that.
_BYTES_PER_TOKEN = 3
BUDGET_SHARE = 0.6


def estimate_tokens(text: str) -> int:
    """A deliberately high guess at ``text``'s token count."""
    return len(text.encode("utf-8")) // _BYTES_PER_TOKEN + 1


def plan_batches(texts: Sequence[str], *, max_items: int, max_tokens: int) -> list[range]:
    """Consecutive index ranges of ``texts``, each within both request limits.

    A single text over the token budget still gets a request of its own: the
    provider truncates or rejects it, which is its call to make, not ours.
    """
    budget = max(1, int(max_tokens * BUDGET_SHARE))
    batches: list[range] = []
    start, used = 0, 0
    for index, text in enumerate(texts):
        cost = estimate_tokens(text)
        if index > start and (index - start >= max_items or used + cost > budget):
            batches.append(range(start, index))
            start, used = index, 0
        used += cost
    if start < len(texts):
        batches.append(range(start, len(texts)))
    return batches
