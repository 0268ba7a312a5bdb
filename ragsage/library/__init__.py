"""The library facade: :class:`RAG` and the values it hands back."""

from ragsage.library.context import RAGContext
from ragsage.library.facade import RAG
from ragsage.library.inputs import TextDocument
from ragsage.library.tracking import RAGSource, SourceTrackingError

__all__ = ["RAG", "RAGContext", "RAGSource", "SourceTrackingError", "TextDocument"]
