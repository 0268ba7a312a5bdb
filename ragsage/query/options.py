"""What a caller can ask of retrieval, and how the engine is tuned."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ragsage.core.errors import ConfigurationError, InvalidRequest
from ragsage.core.filters import SearchFilters
from ragsage.query.fusion import DEFAULT_RRF_K, FusionMethod
from ragsage.query.scores import CODE_LENGTH_EXPONENT

MAX_TOP_K = 100
MAX_EXPANSION = 10
MAX_QUERY_CHARS = 8_000
MAX_BUDGET_TOKENS = 20_000


@dataclass(frozen=True, slots=True)
class RetrievalOptions:
    """Per-request retrieval options (the shipit-style search surface).

    ``hybrid_alpha`` weighs dense against lexical results (1 = dense only,
    0 = lexical only); None leaves it to the engine: 0.3, or 0.5 for a
    question about code that names none of it (:func:`fusion_for`).  With
    ``recency_bias`` a chunk's fused score is multiplied by
    ``0.5 + 0.5 * 2^(-age_days / half_life)``: an old document keeps at least
    half its score rather than vanishing.  ``chunks_above``/``chunks_below`` add
    that many neighbouring chunks of the same document around each hit.

    ``rerank`` None leaves the choice to the engine (see
    :attr:`QueryConfig.rerank_searches`); True or False decides it.  A search
    returns ``top_k`` results whenever that many candidates share a term with
    the query or lie at a positive cosine from it; ``min_score`` (on each
    result's final ``score``) drops the weaker ones when a caller wants that.
    Answers instead keep only candidates past the relevance floor, and say
    "not found" when none is.

    ``budget_tokens`` asks for the passages that best fill that many
    whitespace-separated words, headings included
    (:func:`~ragsage.query.passages.fill_budget`); ``top_k`` still caps their
    number.
    """

    top_k: int = 5
    filters: SearchFilters | None = None
    hybrid_alpha: float | None = None
    rerank: bool | None = None
    recency_bias: bool = False
    recency_half_life_days: float = 30.0
    chunks_above: int = 0
    chunks_below: int = 0
    candidates: int | None = None
    min_score: float | None = None
    budget_tokens: int | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.top_k <= MAX_TOP_K:
            raise InvalidRequest(f"top_k must be between 1 and {MAX_TOP_K}, got {self.top_k}")
        if self.hybrid_alpha is not None and not 0.0 <= self.hybrid_alpha <= 1.0:
            raise InvalidRequest(f"hybrid_alpha must be between 0 and 1, got {self.hybrid_alpha}")
        if not self.recency_half_life_days > 0:
            raise InvalidRequest(
                f"recency_half_life_days must be positive, got {self.recency_half_life_days}"
            )
        for name in ("chunks_above", "chunks_below"):
            value = getattr(self, name)
            if not 0 <= value <= MAX_EXPANSION:
                raise InvalidRequest(f"{name} must be between 0 and {MAX_EXPANSION}, got {value}")
        if self.min_score is not None and not math.isfinite(self.min_score):
            raise InvalidRequest(f"min_score must be a finite number, got {self.min_score}")
        if self.budget_tokens is not None and not 1 <= self.budget_tokens <= MAX_BUDGET_TOKENS:
            raise InvalidRequest(
                f"budget_tokens must be between 1 and {MAX_BUDGET_TOKENS}, got {self.budget_tokens}"
            )
        if self.candidates is not None and not self.top_k <= self.candidates <= 10 * MAX_TOP_K:
            raise InvalidRequest(
                f"candidates must be between top_k and {10 * MAX_TOP_K}, got {self.candidates}"
            )

    @property
    def result_rows(self) -> int:
        """How many results are read: ``top_k``, or under a budget as many as could
        fill it (a passage of code or prose rarely runs under 20 words)."""
        if self.budget_tokens is None:
            return self.top_k
        return min(self.top_k, 10 + self.budget_tokens // 20)

    @property
    def candidate_count(self) -> int:
        """How many candidates each retriever returns before fusion and rerank."""
        return self.candidates or max(4 * self.result_rows, 20)


@dataclass(frozen=True, slots=True)
class QueryConfig:
    """Engine-wide tuning.

    The relevance floor: with reranking, a candidate must score at least
    ``min_rerank_score``; without it, its cosine must reach ``min_vector_score``
    (default: the embedder's own ``similarity_floor``) or its keyword score must
    exceed ``min_keyword_score``.  When nothing passes, the engine answers
    ``not_found_message`` instead of asking the model to answer from nothing.

    ``rerank_searches`` is whether a search reranks when its options leave it
    open; answers always do when a reranker exists.  The runtime turns it off
    for the offline overlap reranker, which costs a search more than the
    search itself (docs/retrieval.md, "Reranking"); a provider's reranker
    keeps it on.

    ``code_length_exponent`` is how strongly a long source-code passage's
    score is scaled down by its length when scores were fused (not ranks) and
    no reranker ordered the results
    (:func:`~ragsage.query.scores.prefer_concise_code`; 0 turns it off).

    ``context_words`` (0: off) fills an answer's sources as a search with
    ``budget_tokens`` of that many words would, when the request sets no
    budget of its own; off, an answer reads ``top_k`` passages of at most
    ``max_source_chars`` each.
    """

    fusion: FusionMethod = "score"
    rrf_k: int = DEFAULT_RRF_K
    min_rerank_score: float = 0.3
    min_vector_score: float | None = None
    min_keyword_score: float = 0.0
    max_history_turns: int = 8
    max_source_chars: int = 4000
    not_found_message: str = "I could not find an answer to that in your documents."
    rerank_searches: bool = True
    code_length_exponent: float = CODE_LENGTH_EXPONENT
    context_words: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.context_words <= MAX_BUDGET_TOKENS:
            raise ConfigurationError(
                f"context_words must be between 0 and {MAX_BUDGET_TOKENS}, got {self.context_words}"
            )
        if not 0.0 <= self.code_length_exponent <= 2.0:
            raise ConfigurationError(
                f"code_length_exponent must be between 0 and 2, got {self.code_length_exponent}"
            )
