"""The composition root: every port of a process, built once from :class:`Settings`.

The API calls :func:`build_runtime` in its app factory, the worker in its process
start-up hook, the CLI per command.  Ports passed in explicitly win over the
ones the settings describe, which is how tests plug in a slow or failing model.
Building opens no connection; the first query does.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ragsage.contextualizing import HeadingWindowContextualizer
from ragsage.errors import ConfigurationError
from ragsage.fakes.models import FakeEmbedder, FakeLLMClient, FakeQueryRewriter, FakeReranker
from ragsage.ingestion import IngestionConfig, IngestionPipeline
from ragsage.parsing import HeuristicBackend, LayoutPageClassifier
from ragsage.ports import (
    Cache,
    Chunker,
    Contextualizer,
    DocumentParser,
    Embedder,
    LLMClient,
    PageClassifier,
    QueryRewriter,
    Reranker,
    Tracer,
)
from ragsage.query import QueryEngine
from ragsage.settings import Settings
from ragsage.tracing import LoggingTracer

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from ragsage.storage import Database, PgDocumentStore, PgLexicalStore, PgVectorStore


@dataclass
class Runtime:
    """Every port one process uses, plus the database they share."""

    settings: Settings
    database: Database
    parser: DocumentParser
    chunker: Chunker
    classifier: PageClassifier
    contextualizer: Contextualizer | None
    embedder: Embedder
    llm: LLMClient
    reranker: Reranker | None
    rewriter: QueryRewriter | None
    cache: Cache | None
    tracer: Tracer
    closers: list[object] = field(default_factory=list)

    def ingestion_config(self) -> IngestionConfig:
        return IngestionConfig(
            chunk_size=self.settings.chunk_size,
            chunk_overlap=self.settings.chunk_overlap,
            contextualize=self.contextualizer is not None,
            parse_cache_ttl_seconds=self.settings.parse_cache_ttl,
        )

    def stores(
        self, target: Database | AsyncSession | None = None
    ) -> tuple[PgVectorStore, PgLexicalStore, PgDocumentStore]:
        """The three Postgres stores over ``target`` (default: a session per call)."""
        from ragsage.storage import PgDocumentStore, PgLexicalStore, PgVectorStore

        where = target if target is not None else self.database
        return (
            PgVectorStore(
                where,
                embedding_model=self.embedder.model,
                embedding_dim=self.embedder.dimension,
            ),
            PgLexicalStore(where, text_search_config=self.settings.text_search_config),
            PgDocumentStore(where),
        )

    def pipeline(self) -> IngestionPipeline:
        """The ingestion pipeline; its stores open a session per call unless overridden."""
        vectors, lexical, documents = self.stores()
        return IngestionPipeline(
            parser=self.parser,
            classifier=self.classifier,
            chunker=self.chunker,
            contextualizer=self.contextualizer or HeadingWindowContextualizer(window=0),
            embedder=self.embedder,
            llm=self.llm,
            vector_store=vectors,
            lexical_store=lexical,
            document_store=documents,
            cache=self.cache,
            tracer=self.tracer,
            config=self.ingestion_config(),
        )

    def query_engine(self) -> QueryEngine:
        vectors, lexical, documents = self.stores()
        return QueryEngine(
            embedder=self.embedder,
            vector_store=vectors,
            lexical_store=lexical,
            document_store=documents,
            llm=self.llm,
            reranker=self.reranker,
            rewriter=self.rewriter,
            tracer=self.tracer,
        )

    async def aclose(self) -> None:
        """Release pooled connections and clients."""
        await self.database.dispose()
        close = getattr(self.cache, "close", None)
        if close is not None:
            await close()


def _embedder(settings: Settings) -> Embedder:
    if settings.embedder == "hashing":
        return FakeEmbedder(dimension=settings.embedding_dim)
    raise ConfigurationError(
        f"RAGSAGE_EMBEDDER={settings.embedder} needs the provider adapters, which this build "
        "does not include yet; use RAGSAGE_EMBEDDER=hashing"
    )


def _llm(settings: Settings) -> LLMClient:
    if settings.generator == "extractive":
        return FakeLLMClient()
    raise ConfigurationError(
        f"RAGSAGE_GENERATOR={settings.generator} needs the provider adapters, which this build "
        "does not include yet; use RAGSAGE_GENERATOR=extractive"
    )


def _reranker(settings: Settings) -> Reranker | None:
    if settings.reranker == "none":
        return None
    if settings.reranker == "overlap":
        return FakeReranker()
    raise ConfigurationError(
        f"RAGSAGE_RERANKER={settings.reranker} needs the provider adapters, which this build "
        "does not include yet; use overlap or none"
    )


def _contextualizer(settings: Settings) -> Contextualizer | None:
    if settings.contextualizer == "none":
        return None
    if settings.contextualizer == "heading-window":
        return HeadingWindowContextualizer()
    raise ConfigurationError(
        "RAGSAGE_CONTEXTUALIZER=openai needs the provider adapters, which this build does not "
        "include yet; use heading-window or none"
    )


def build_database(settings: Settings) -> Database:
    """The Postgres pools the settings describe."""
    from ragsage.storage import Database, PostgresConfig

    if not settings.database_url:
        raise ConfigurationError(
            "RAGSAGE_DATABASE_URL is not set; point it at Postgres 15+ with pgvector 0.8+ "
            "(or run `ragsage up`, which starts an embedded one)"
        )
    return Database(
        PostgresConfig(
            dsn=settings.database_url,
            app_dsn=settings.app_database_url or None,
            embedding_dim=settings.embedding_dim,
            text_search_config=settings.text_search_config,
            pool_size=settings.db_pool_size,
        )
    )


def build_cache(settings: Settings) -> Cache | None:
    """The Redis parse cache, or None when no cache URL is configured."""
    if not settings.cache_redis_url:
        return None
    from ragsage.cache.redis import RedisCache

    # parse_cache_key already namespaces its keys ("ragsage:parse:...").
    return RedisCache.from_url(settings.cache_redis_url, prefix="")


def build_runtime(
    settings: Settings,
    *,
    database: Database | None = None,
    embedder: Embedder | None = None,
    llm: LLMClient | None = None,
    reranker: Reranker | None = None,
    cache: Cache | None = None,
    tracer: Tracer | None = None,
) -> Runtime:
    """Every port for ``settings``; explicitly passed ports win."""
    backend = HeuristicBackend()
    built_embedder = embedder or _embedder(settings)
    if built_embedder.dimension != settings.embedding_dim:
        raise ConfigurationError(
            f"the embedder returns {built_embedder.dimension}-dimensional vectors but "
            f"RAGSAGE_EMBEDDING_DIM is {settings.embedding_dim}"
        )
    return Runtime(
        settings=settings,
        database=database or build_database(settings),
        parser=backend,
        chunker=backend,
        classifier=LayoutPageClassifier(),
        contextualizer=_contextualizer(settings),
        embedder=built_embedder,
        llm=llm or _llm(settings),
        reranker=reranker if reranker is not None else _reranker(settings),
        rewriter=FakeQueryRewriter(),
        cache=cache if cache is not None else build_cache(settings),
        tracer=tracer or LoggingTracer(),
    )


def adapter_overrides(settings: Settings) -> dict[str, Any]:
    """Ports from ``RAGSAGE_ADAPTERS=module:function``, for custom or test adapters.

    The function receives the settings and returns keyword arguments for
    :func:`ragsage.runtime.build_runtime` (``embedder=...``, ``llm=...``).
    """
    spec = os.environ.get("RAGSAGE_ADAPTERS", "")
    if not spec:
        return {}
    module_name, _, function_name = spec.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), function_name)
    except (ImportError, AttributeError) as exc:
        raise ConfigurationError(f"RAGSAGE_ADAPTERS={spec!r} cannot be imported: {exc}") from exc
    overrides = factory(settings)
    if not isinstance(overrides, dict):
        raise ConfigurationError(f"RAGSAGE_ADAPTERS={spec!r} must return a dict of ports")
    return overrides
