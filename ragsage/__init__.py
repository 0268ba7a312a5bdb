"""ragsage: a self-hostable retrieval-augmented-generation engine.

The top-level package re-exports the engine's domain types, its error tree, its
two pipelines and the library facade :class:`RAG` (``RAG.default()`` is a
knowledge base in memory, ready in one line).  It stays light on purpose: no
database driver, web framework, queue or model SDK is imported here (adapters
live in subpackages you import explicitly, such as ``ragsage.adapters.postgres``
and ``ragsage.adapters.providers``).
"""

from ragsage.adapters.functions import CallableEmbedder
from ragsage.core.chunks import Chunk, EmbeddedChunk, ScoredChunk
from ragsage.core.conversations import Turn
from ragsage.core.documents import Document, RawSource
from ragsage.core.errors import (
    ConfigurationError,
    DocumentError,
    EmptyDocument,
    Forbidden,
    InputError,
    InvalidRequest,
    ParseError,
    PermanentProviderError,
    ProviderError,
    RagsageError,
    RetryableProviderError,
    StorageError,
    UnsupportedFormat,
)
from ragsage.core.filters import SearchFilters
from ragsage.core.pages import Page, PageImage, PageLayout, PageRoute, ParsedDocument
from ragsage.core.scopes import Scope
from ragsage.ingestion import IngestionConfig, IngestionPipeline, IngestResult
from ragsage.library import RAG, RAGContext, RAGSource, TextDocument
from ragsage.query import (
    Answer,
    Citation,
    QueryConfig,
    QueryEngine,
    RetrievalOptions,
    RetrievalResult,
    SearchHit,
)
from ragsage.query.llm_reranker import LLMReranker

__version__ = "0.1.0"

__all__ = [
    "Answer",
    "CallableEmbedder",
    "Chunk",
    "Citation",
    "ConfigurationError",
    "Document",
    "DocumentError",
    "EmbeddedChunk",
    "EmptyDocument",
    "Forbidden",
    "IngestResult",
    "IngestionConfig",
    "IngestionPipeline",
    "InputError",
    "InvalidRequest",
    "LLMReranker",
    "Page",
    "PageImage",
    "PageLayout",
    "PageRoute",
    "ParseError",
    "ParsedDocument",
    "PermanentProviderError",
    "ProviderError",
    "QueryConfig",
    "QueryEngine",
    "RAG",
    "RAGContext",
    "RAGSource",
    "RagsageError",
    "RawSource",
    "RetrievalOptions",
    "RetrievalResult",
    "RetryableProviderError",
    "Scope",
    "ScoredChunk",
    "SearchFilters",
    "SearchHit",
    "StorageError",
    "TextDocument",
    "Turn",
    "UnsupportedFormat",
    "__version__",
]
