"""The feature-hashing embedder: a vector from the words alone."""

from __future__ import annotations

import functools
import hashlib
import math
from collections import Counter
from collections.abc import Sequence

from ragsage.core.offload import run_cpu
from ragsage.core.ports import InputType
from ragsage.core.text import terms

DEFAULT_DIMENSION = 1024


# Words repeat across a corpus far more than they vary: hashing each distinct
# one once is most of what embedding a chunk costs.
@functools.lru_cache(maxsize=1 << 18)
def _bucket(term: str, dimension: int, seed: str = "") -> tuple[int, float]:
    # An empty seed hashes the bare word, as every stored hashing vector was made.
    keyed = f"{seed}\0{term}" if seed else term
    digest = hashlib.blake2b(keyed.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    # The sign bit halves the bias that hash collisions add to a dot product.
    return value % dimension, (1.0 if value >> 63 else -1.0)


def hashed_vector(text: str, dimension: int, seed: str = "") -> dict[int, float]:
    """The sparse, L2-normalised hashing embedding of ``text`` (index → weight).

    A ``seed`` picks another, unrelated hashing of the same words.
    """
    counts = Counter(terms(text))
    sparse: dict[int, float] = {}
    for term, count in counts.items():
        index, sign = _bucket(term, dimension, seed)
        # Sublinear term frequency: a word said ten times is not ten times the topic.
        sparse[index] = sparse.get(index, 0.0) + sign * (1.0 + math.log(count))
    norm = math.sqrt(sum(weight * weight for weight in sparse.values()))
    return {index: weight / norm for index, weight in sparse.items() if weight} if norm else {}


class HashingEmbedder:
    """Deterministic feature-hashing embedder: cosine similarity tracks shared terms.

    Text with no terms in common with the query scores (nearly) zero, which is
    what lets the relevance floor, and so the honest "not found", work offline.
    """

    def __init__(self, *, dimension: int = DEFAULT_DIMENSION) -> None:
        if dimension < 16:
            raise ValueError(f"dimension must be at least 16, got {dimension}")
        self._dimension = dimension

    @property
    def model(self) -> str:
        return f"ragsage-hashing-{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def similarity_floor(self) -> float:
        # One shared term between a short query and a long chunk scores ~0.1;
        # collisions between unrelated terms stay well under this.
        return 0.05

    async def embed(
        self, texts: Sequence[str], *, input_type: InputType = "document"
    ) -> Sequence[tuple[float, ...]]:
        if len(texts) <= 4:
            return self._vectors(texts)  # a query: cheaper than a trip to a thread
        return await run_cpu(self._vectors, texts)

    def _vectors(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        vectors = []
        for text in texts:
            dense = [0.0] * self._dimension
            for index, weight in hashed_vector(text, self._dimension).items():
                dense[index] = weight
            vectors.append(tuple(dense))
        return vectors
