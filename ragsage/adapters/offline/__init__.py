"""The model adapters a keyless install runs: no network, no model files.

Each is a real adapter, tuned for nothing but honest behaviour offline: the
hashing embedder's cosine tracks shared words, the overlap reranker drops
passages that share none with the question (so "not found" fires), the
extractive reader answers with cited sentences of the best source, and the
term rewriter carries a follow-up's earlier words.  None keeps anything per
call, so a server running them for months holds what it held on day one.
"""

from ragsage.adapters.offline.hashing import DEFAULT_DIMENSION, HashingEmbedder, hashed_vector
from ragsage.adapters.offline.reading import ExtractiveReader
from ragsage.adapters.offline.reranking import OverlapReranker, overlap_score
from ragsage.adapters.offline.rewriting import TermRewriter

__all__ = [
    "DEFAULT_DIMENSION",
    "ExtractiveReader",
    "HashingEmbedder",
    "OverlapReranker",
    "TermRewriter",
    "hashed_vector",
    "overlap_score",
]
