"""Retrieval and grounded answering over the stores."""

from ragsage.query.engine import QueryEngine
from ragsage.query.options import QueryConfig, RetrievalOptions
from ragsage.query.results import (
    Answer,
    AnswerEvent,
    ChunkContext,
    Citation,
    CitationsEvent,
    DoneEvent,
    RetrievalResult,
    SearchHit,
    TokenEvent,
)
from ragsage.query.smalltalk import is_small_talk

__all__ = [
    "Answer",
    "AnswerEvent",
    "ChunkContext",
    "Citation",
    "CitationsEvent",
    "DoneEvent",
    "QueryConfig",
    "QueryEngine",
    "RetrievalOptions",
    "RetrievalResult",
    "SearchHit",
    "TokenEvent",
    "is_small_talk",
]
