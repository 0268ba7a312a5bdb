"""The shipit RAG API (``shipit_agent.rag``) on ragsage's engine.

Code written against that API's reference page runs here with its import
line changed to ``from ragsage.library.shipit import ...``: the same classes, fields,
defaults and methods, with ragsage's chunker and query engine doing the work.
The ``RAG``-prefixed names are the aliases the page's top-level package uses.
docs/library.md ("Coming from shipit") maps each name to ragsage's own API.
"""

from ragsage.library.shipit.components import (
    CallableEmbedder,
    DocumentChunker,
    Embedder,
    HashingEmbedder,
    InMemoryBM25Store,
    InMemoryVectorStore,
    KeywordStore,
    Reranker,
    VectorStore,
)
from ragsage.library.shipit.extraction import RAGDependencyError, RAGIngestError, TextExtractor
from ragsage.library.shipit.facade import RAG
from ragsage.library.shipit.pipeline import HybridSearchPipeline
from ragsage.library.shipit.reranking import LLMReranker
from ragsage.library.shipit.tools import RAGFetchChunkTool, RAGListSourcesTool, RAGSearchTool
from ragsage.library.shipit.types import (
    Chunk,
    Document,
    IndexFilters,
    RAGContext,
    RAGSource,
    SearchQuery,
    SearchResult,
)

RAGChunk = Chunk
RAGDocument = Document
RAGIndexFilters = IndexFilters
RAGSearchQuery = SearchQuery
RAGSearchResult = SearchResult

__all__ = [
    "RAG",
    "CallableEmbedder",
    "Chunk",
    "Document",
    "DocumentChunker",
    "Embedder",
    "HashingEmbedder",
    "HybridSearchPipeline",
    "InMemoryBM25Store",
    "InMemoryVectorStore",
    "IndexFilters",
    "KeywordStore",
    "LLMReranker",
    "RAGChunk",
    "RAGContext",
    "RAGDependencyError",
    "RAGDocument",
    "RAGFetchChunkTool",
    "RAGIndexFilters",
    "RAGIngestError",
    "RAGListSourcesTool",
    "RAGSearchQuery",
    "RAGSearchResult",
    "RAGSearchTool",
    "RAGSource",
    "Reranker",
    "SearchQuery",
    "SearchResult",
    "TextExtractor",
    "VectorStore",
]
