"""The composition root: every port of a process, built once from :class:`Settings`.

The API calls :func:`build_runtime` in its app factory, the worker in its process
start-up hook, the CLI per command.  Ports passed in explicitly win over the
ones the settings describe, which is how tests plug in a slow or failing model.
Building opens no connection; the first query does.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ragsage.adapters.offline import (
    ExtractiveReader,
    HashingEmbedder,
    OverlapReranker,
    TermRewriter,
)
from ragsage.contextualizing import HeadingWindowContextualizer
from ragsage.embedding_cache import CachingEmbedder
from ragsage.errors import ConfigurationError
from ragsage.fusion import FusionMethod
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
from ragsage.query import QueryConfig, QueryEngine
from ragsage.settings import Settings
from ragsage.tracing import LoggingTracer
from ragsage.transcribing import NoTranscriber, SplitLLMClient, Transcriber
from ragsage.types import Scope

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from ragsage.providers import ProviderClients, ProviderConfig
    from ragsage.storage import Database, PgDocumentStore, PgLexicalStore, PgVectorStore
    from ragsage.storage.vector_store import DensePaths


EmbedderFactory = Callable[[str, str, "int | None"], Embedder]
# Namespaces whose active embedder one process remembers (least recent dropped).
_REMEMBERED_NAMESPACES = 1024
_T = TypeVar("_T")


@dataclass
class Runtime:
    """Every port one process uses, plus the database they share.

    ``embedder`` is the default, for namespaces with no vectors yet; a namespace
    that has them is always served by the embedder of its active generation
    (see :meth:`embedder_for_scope`), so a configuration change can never mix
    models in one index — that is what ``ragsage reindex`` is for.
    """

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
    embedder_factory: EmbedderFactory
    providers: _Providers | None = None
    # How long :meth:`with_engine` trusts the active generation it last read
    # for a namespace; see there why a switch in between is still safe.
    active_embedder_seconds: float = 30.0
    _embedders: dict[tuple[str, str, int | None], Embedder] = field(default_factory=dict)
    _active_embedders: OrderedDict[str, tuple[float, Embedder]] = field(default_factory=OrderedDict)
    # One engine per embedder for with_engine: building one per search cost 0.15 ms.
    _engines: dict[int, tuple[Embedder, QueryEngine]] = field(default_factory=dict)
    # Each namespace's dense search path, shared by every store built here.
    _dense_paths: DensePaths | None = None

    def ingestion_config(self) -> IngestionConfig:
        return IngestionConfig(
            chunk_size=self.settings.chunk_size,
            chunk_overlap=self.settings.chunk_overlap,
            contextualize=self.contextualizer is not None,
            parse_cache_ttl_seconds=self.settings.parse_cache_ttl,
        )

    def embedder_for(self, kind: str, model: str, dim: int | None) -> Embedder:
        """The embedder that produces ``model``'s vectors (built once per process)."""
        default = self.embedder
        if kind == self.settings.embedder and model == default.model:
            if dim is None or dim == default.dimension:
                return default
        key = (kind, model, dim)
        if key not in self._embedders:
            built = self.embedder_factory(kind, model, dim)
            if self.cache is not None and kind != "hashing":
                # Paid models only: hashing is cheaper to recompute than to fetch.
                built = CachingEmbedder(built, self.cache)
            if dim is not None and built.dimension != dim:
                raise ConfigurationError(
                    f"embedder {kind}/{model} makes {built.dimension}-dimensional vectors, "
                    f"but its generation holds {dim}"
                )
            self._embedders[key] = built
        return self._embedders[key]

    async def embedder_for_scope(self, scope: Scope) -> Embedder:
        """The embedder of the namespace's active generation (default if it has none).

        Read on every call, so a generation switch is seen at once.
        """
        from ragsage.storage.generations import active_generation_of

        active = await active_generation_of(self.database, scope)
        if active is None:
            return self.embedder
        return self.embedder_for(active.embedder, active.embedding_model, active.embedding_dim)

    @property
    def can_transcribe(self) -> bool:
        """Whether scanned pages can be read here (a vision model or Tesseract is configured)."""
        return not isinstance(getattr(self.llm, "transcriber", None), NoTranscriber)

    def embedder_kind(self, embedder: Embedder) -> str:
        """The adapter kind an embedder instance was built as."""
        for (kind, _, _), built in self._embedders.items():
            if built is embedder:
                return kind
        return self.settings.embedder

    def stores(
        self,
        target: Database | AsyncSession | None = None,
        *,
        embedder: Embedder | None = None,
        generation: int | None = None,
    ) -> tuple[PgVectorStore, PgLexicalStore, PgDocumentStore]:
        """The three Postgres stores over ``target`` (default: a session per call).

        ``generation`` points the two searches at that live generation instead
        of the active one.
        """
        from ragsage.storage import PgDocumentStore, PgLexicalStore, PgVectorStore
        from ragsage.storage.vector_store import DensePaths

        where = target if target is not None else self.database
        chosen = embedder or self.embedder
        if self._dense_paths is None:
            self._dense_paths = DensePaths()
        return (
            PgVectorStore(
                where,
                embedding_model=chosen.model,
                embedding_dim=chosen.dimension,
                embedder_kind=self.embedder_kind(chosen),
                generation=generation,
                paths=self._dense_paths,
            ),
            PgLexicalStore(
                where,
                text_search_config=self.settings.text_search_config,
                weighted=self.settings.keyword_weighting == "idf",
                generation=generation,
            ),
            PgDocumentStore(where),
        )

    def pipeline(self, embedder: Embedder | None = None) -> IngestionPipeline:
        """The ingestion pipeline; its stores open a session per call unless overridden."""
        chosen = embedder or self.embedder
        vectors, lexical, documents = self.stores(embedder=chosen)
        return IngestionPipeline(
            parser=self.parser,
            classifier=self.classifier,
            chunker=self.chunker,
            contextualizer=self.contextualizer or HeadingWindowContextualizer(window=0),
            embedder=chosen,
            llm=self.llm,
            vector_store=vectors,
            lexical_store=lexical,
            document_store=documents,
            cache=self.cache,
            tracer=self.tracer,
            config=self.ingestion_config(),
        )

    def query_engine(
        self, embedder: Embedder | None = None, *, generation: int | None = None
    ) -> QueryEngine:
        chosen = embedder or self.embedder
        vectors, lexical, documents = self.stores(embedder=chosen, generation=generation)
        return QueryEngine(
            embedder=chosen,
            vector_store=vectors,
            lexical_store=lexical,
            document_store=documents,
            llm=self.llm,
            reranker=self.reranker,
            rewriter=self.rewriter,
            tracer=self.tracer,
            config=QueryConfig(
                fusion=cast(FusionMethod, self.settings.fusion),
                rerank_searches=not isinstance(self.reranker, OverlapReranker),
            ),
        )

    async def query_engine_for(self, scope: Scope) -> QueryEngine:
        """A query engine using the namespace's active embedding generation (read now)."""
        return self.query_engine(await self.embedder_for_scope(scope))

    async def query_engine_for_generation(self, scope: Scope, generation: int) -> QueryEngine:
        """A query engine searching one live generation with the embedder it was built by.

        This is how a building generation is evaluated before it serves anyone.
        """
        from ragsage.errors import InvalidRequest
        from ragsage.storage import live_generations

        async with self.database.session(scope) as session:
            live = await live_generations(session)
        chosen = next((g for g in live if g.id == generation), None)
        if chosen is None:
            raise InvalidRequest(
                f"namespace {scope.namespace!r} has no active or building generation {generation}"
            )
        embedder = self.embedder_for(chosen.embedder, chosen.embedding_model, chosen.embedding_dim)
        return self.query_engine(embedder, generation=generation)

    async def with_engine(self, scope: Scope, call: Callable[[QueryEngine], Awaitable[_T]]) -> _T:
        """Run ``call`` with the namespace's engine, once more if a re-index switched
        generations under it.

        The active generation's embedder is remembered per namespace for
        :attr:`active_embedder_seconds`, which spares each search a round trip.
        That is safe because dense search reads the generation it searches in
        its own statement and refuses a query embedded by another model
        (:class:`~ragsage.storage.EmbeddingModelMismatch`); the namespace is then
        read afresh and ``call`` runs once more.
        """
        from ragsage.storage import EmbeddingModelMismatch

        embedder = await self._remembered_embedder(scope)
        kept = self._engines.get(id(embedder))
        if kept is None or kept[0] is not embedder:
            kept = self._engines[id(embedder)] = (embedder, self.query_engine(embedder))
        try:
            return await call(kept[1])
        except EmbeddingModelMismatch:
            self._active_embedders.pop(scope.namespace, None)
            return await call(await self.query_engine_for(scope))

    async def _remembered_embedder(self, scope: Scope) -> Embedder:
        now = time.monotonic()
        seen = self._active_embedders.get(scope.namespace)
        if seen is not None and now - seen[0] < self.active_embedder_seconds:
            return seen[1]
        embedder = await self.embedder_for_scope(scope)
        self._active_embedders[scope.namespace] = (now, embedder)
        self._active_embedders.move_to_end(scope.namespace)
        while len(self._active_embedders) > _REMEMBERED_NAMESPACES:
            self._active_embedders.popitem(last=False)
        return embedder

    async def aclose(self) -> None:
        """Release pooled connections and clients."""
        await self.database.dispose()
        close = getattr(self.cache, "close", None)
        if close is not None:
            await close()
        if self.providers is not None:
            await self.providers.aclose()
        flush = getattr(self.tracer, "shutdown", None)
        if flush is not None:
            # Exports the spans still buffered; blocking I/O, so off the loop.
            await asyncio.to_thread(flush)


def hashing_dimension(model: str) -> int | None:
    """The width a ``ragsage-hashing-<N>`` model name encodes."""
    prefix = "ragsage-hashing-"
    if model.startswith(prefix) and model[len(prefix) :].isdigit():
        return int(model[len(prefix) :])
    return None


def provider_config(settings: Settings) -> ProviderConfig:
    """The provider adapters' configuration, from the settings."""
    from ragsage.providers import ProviderConfig

    return ProviderConfig(
        openai_api_key=settings.openai_api_key,
        voyage_api_key=settings.voyage_api_key,
        openai_base_url=settings.openai_base_url,
        voyage_base_url=settings.voyage_base_url,
        embedding_model=settings.embedding_model_name,
        embedding_dimension=settings.embedding_dim,
        rerank_model=settings.rerank_model,
        generation_model=settings.generation_model,
        vision_model=settings.vision_model,
        context_model=settings.context_model,
        rewrite_model=settings.rewrite_model,
        timeout_seconds=settings.provider_timeout,
        max_retries=settings.provider_max_retries,
    )


class _Providers:
    """The provider clients, built on first need (no SDK is imported before)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._clients: ProviderClients | None = None

    def __call__(self) -> ProviderClients:
        if self._clients is None:
            from ragsage.providers import build_provider_clients

            self._clients = build_provider_clients(provider_config(self.settings))
        return self._clients

    async def aclose(self) -> None:
        if self._clients is not None:
            await self._clients.aclose()


def make_embedder(
    settings: Settings,
    kind: str,
    model: str,
    dim: int | None,
    providers: Callable[[], ProviderClients] | None = None,
) -> Embedder:
    """Build the embedder ``kind`` names for ``model`` (the default factory)."""
    if kind == "hashing":
        width = dim or hashing_dimension(model) or settings.embedding_dim
        built = HashingEmbedder(dimension=width)
        if model != built.model:
            raise ConfigurationError(
                f"the hashing embedder's model is named {built.model!r}, not {model!r}"
            )
        return built
    if kind == "local":
        from ragsage.providers import LocalEmbedder, locate_local_model

        return LocalEmbedder(locate_local_model(settings.local_model_dir or None))
    clients = (providers or _Providers(settings))()
    if kind == "voyage":
        from ragsage.providers import VoyageEmbedder

        return VoyageEmbedder(clients.voyage, model=model, dimension=dim)
    if kind == "openai":
        from ragsage.providers import OpenAIEmbedder

        return OpenAIEmbedder(clients.openai, model=model, dimension=dim)
    raise ConfigurationError(f"unknown embedder kind {kind!r}")


def _transcriber(settings: Settings, providers: _Providers) -> Transcriber:
    choice = settings.transcriber
    if choice == "auto":
        if settings.generator == "openai":
            choice = "openai"
        else:
            from ragsage.providers import tesseract_available

            choice = "tesseract" if tesseract_available() else "none"
    if choice == "openai":
        return providers().openai_llm()
    if choice == "tesseract":
        from ragsage.providers import TesseractTranscriber

        return TesseractTranscriber()
    return NoTranscriber()


def _llm(settings: Settings, providers: _Providers) -> LLMClient:
    generator: LLMClient = (
        providers().openai_llm() if settings.generator == "openai" else ExtractiveReader()
    )
    return SplitLLMClient(generator, _transcriber(settings, providers))


def _reranker(settings: Settings, providers: _Providers) -> Reranker | None:
    if settings.reranker == "none":
        return None
    if settings.reranker == "voyage":
        return providers().voyage_reranker()
    return OverlapReranker()


def _contextualizer(settings: Settings, providers: _Providers) -> Contextualizer | None:
    if settings.contextualizer == "none":
        return None
    if settings.contextualizer == "openai":
        return providers().openai_contextualizer()
    return HeadingWindowContextualizer()


def _rewriter(settings: Settings, providers: _Providers) -> QueryRewriter | None:
    if settings.rewriter == "none":
        return None
    if settings.rewriter == "openai":
        return providers().openai_rewriter()
    return TermRewriter()


def build_tracer(settings: Settings) -> Tracer:
    """OpenTelemetry spans when an OTLP endpoint is set, else span timings logged at DEBUG."""
    if not settings.otel_endpoint:
        return LoggingTracer()
    try:
        from ragsage.observability.otel import build_otel_tracer
    except ImportError as exc:
        raise ConfigurationError(
            "RAGSAGE_OTEL_ENDPOINT is set but OpenTelemetry is not installed: "
            "pip install 'ragsage[otel]'"
        ) from exc
    return build_otel_tracer(settings.otel_endpoint, settings.otel_service_name)


def build_database(settings: Settings) -> Database:
    """The Postgres pools the settings describe."""
    from ragsage.storage import Database, PostgresConfig

    if not settings.database_url and not settings.app_database_url:
        raise ConfigurationError(
            "neither RAGSAGE_APP_DATABASE_URL nor RAGSAGE_DATABASE_URL is set; point them at "
            "Postgres 15+ with pgvector 0.8+ (or run `ragsage up`, which starts an embedded one)"
        )
    return Database(
        PostgresConfig(
            dsn=settings.database_url,
            app_dsn=settings.app_database_url or None,
            embedding_dim=settings.embedding_dim,
            embedding_widths=settings.indexed_widths(),
            text_search_config=settings.text_search_config,
            pool_size=settings.db_pool_size,
        )
    )


def build_cache(settings: Settings) -> Cache | None:
    """The Redis parse cache, or None when no cache URL is configured."""
    if not settings.cache_redis_url:
        return None
    from ragsage.cache.redis import RedisCache

    # parse_cache_key already prefixes its keys ("ragsage:parse:...", per tenant).
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
    embedder_factory: EmbedderFactory | None = None,
    parser: DocumentParser | None = None,
) -> Runtime:
    """Every port for ``settings``; explicitly passed ports win.

    ``parser`` replaces only the reading of files (chunking stays the built-in
    backend's): for a custom format, or a test that needs a slow parser.
    """
    backend = HeuristicBackend(code_chunking=settings.code_chunking)
    providers = _Providers(settings)

    def default_factory(kind: str, model: str, dim: int | None) -> Embedder:
        return make_embedder(settings, kind, model, dim, providers)

    factory = embedder_factory or default_factory
    built_embedder = embedder or factory(
        settings.embedder, settings.embedding_model_name, settings.embedding_dim
    )
    built_cache = cache if cache is not None else build_cache(settings)
    if built_cache is not None and embedder is None and settings.embedder != "hashing":
        built_embedder = CachingEmbedder(built_embedder, built_cache)
    if built_embedder.dimension != settings.embedding_dim:
        raise ConfigurationError(
            f"the embedder returns {built_embedder.dimension}-dimensional vectors but "
            f"RAGSAGE_EMBEDDING_DIM is {settings.embedding_dim}"
        )
    return Runtime(
        settings=settings,
        database=database or build_database(settings),
        parser=parser or backend,
        chunker=backend,
        classifier=LayoutPageClassifier(),
        contextualizer=_contextualizer(settings, providers),
        embedder=built_embedder,
        llm=llm or _llm(settings, providers),
        reranker=reranker if reranker is not None else _reranker(settings, providers),
        rewriter=_rewriter(settings, providers),
        cache=built_cache,
        tracer=tracer or build_tracer(settings),
        embedder_factory=factory,
        providers=providers,
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
