"""The runtime: every port of a process, and the stores and engines made from them."""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar, cast

from ragsage.adapters.embedding_cache import CachingEmbedder
from ragsage.adapters.offline import (
    OverlapReranker,
)
from ragsage.adapters.parsing.contextualizing import HeadingWindowContextualizer
from ragsage.adapters.parsing.tokens import make_token_counter
from ragsage.core.errors import ConfigurationError
from ragsage.core.ports import (
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
from ragsage.core.scopes import Scope
from ragsage.core.transcribing import NoTranscriber
from ragsage.ingestion import IngestionConfig, IngestionPipeline
from ragsage.ingestion.fingerprint import chunking_fingerprint
from ragsage.management import Management
from ragsage.query import QueryConfig, QueryEngine
from ragsage.query.fusion import FusionMethod
from ragsage.runtime.composition import (
    Engine,
    EnginePorts,
    compose,
    compose_ingestion,
    compose_query,
)
from ragsage.settings import Settings

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from ragsage.adapters.postgres import Database, PgDocumentStore, PgLexicalStore, PgVectorStore
    from ragsage.adapters.postgres.dense_statements import DensePaths

from ragsage.runtime.models import Providers, worth_caching

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
    providers: Providers | None = None
    # The chunker's token counter, for whoever measures results (the re-index gate).
    count_tokens: Callable[[str], int] = field(default_factory=make_token_counter)
    # How long :meth:`with_engine` trusts the active generation it last read
    # for a namespace; see there why a switch in between is still safe.
    active_embedder_seconds: float = 30.0
    _embedders: dict[tuple[str, str, int | None], Embedder] = field(default_factory=dict)
    _active_embedders: OrderedDict[str, tuple[float, Embedder]] = field(default_factory=OrderedDict)
    # One engine per embedder for with_engine: building one per search cost 0.15 ms.
    _engines: dict[int, tuple[Embedder, QueryEngine]] = field(default_factory=dict)
    # Each namespace's dense search path, shared by every store built here.
    _dense_paths: DensePaths | None = None
    _chunking: str | None = None
    _management: Management | None = None

    @property
    def management(self) -> Management:
        """The management services (documents, jobs, usage, ...) over this database."""
        if self._management is None:
            from ragsage.runtime.management import build_management

            self._management = build_management(self.database, self.settings)
        return self._management

    def ingestion_config(self) -> IngestionConfig:
        return IngestionConfig(
            chunk_size=self.settings.chunk_size,
            chunk_overlap=self.settings.chunk_overlap,
            contextualize=self.contextualizer is not None,
            parse_cache_ttl_seconds=self.settings.parse_cache_ttl,
        )

    def chunking_fingerprint(self) -> str:
        """The fingerprint recorded with every chunk row this runtime writes (migration 26)."""
        if self._chunking is None:
            self._chunking = chunking_fingerprint(
                self.ingestion_config(), self.chunker, self.contextualizer
            )
        return self._chunking

    def embedder_for(self, kind: str, model: str, dim: int | None) -> Embedder:
        """The embedder that produces ``model``'s vectors (built once per process)."""
        default = self.embedder
        if kind == self.settings.embedder and model == default.model:
            if dim is None or dim == default.dimension:
                return default
        key = (kind, model, dim)
        if key not in self._embedders:
            built = self.embedder_factory(kind, model, dim)
            if self.cache is not None and worth_caching(built):
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
        from ragsage.adapters.postgres.generations import active_generation_of

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
        from ragsage.adapters.postgres import PgDocumentStore, PgLexicalStore, PgVectorStore
        from ragsage.adapters.postgres.dense_statements import DensePaths

        where = target if target is not None else self.database
        chosen = embedder or self.embedder
        if self._dense_paths is None:
            config = self.database.config
            self._dense_paths = DensePaths(
                graph_ef_search=config.graph_ef_search, hnsw_type=config.hnsw_type
            )
        return (
            PgVectorStore(
                where,
                embedding_model=chosen.model,
                embedding_dim=chosen.dimension,
                embedder_kind=self.embedder_kind(chosen),
                generation=generation,
                paths=self._dense_paths,
                chunking=self.chunking_fingerprint(),
            ),
            PgLexicalStore(
                where,
                text_search_config=self.settings.text_search_config,
                weighted=self.settings.keyword_weighting == "idf",
                generation=generation,
            ),
            PgDocumentStore(where),
        )

    def engine(self, embedder: Embedder | None = None, *, generation: int | None = None) -> Engine:
        """Both pipelines over this runtime's ports; their stores open a session per call.

        ``generation`` points searches at that live generation instead of the active one.
        """
        ports = self._ports(embedder, generation)
        return compose(ports, ingestion=self.ingestion_config(), query=self._query_config())

    def pipeline(self, embedder: Embedder | None = None) -> IngestionPipeline:
        """The ingestion pipeline; its stores open a session per call unless overridden."""
        return compose_ingestion(self._ports(embedder), self.ingestion_config())

    def query_engine(
        self, embedder: Embedder | None = None, *, generation: int | None = None
    ) -> QueryEngine:
        return compose_query(self._ports(embedder, generation), self._query_config())

    def _ports(self, embedder: Embedder | None, generation: int | None = None) -> EnginePorts:
        chosen = embedder or self.embedder
        vectors, lexical, documents = self.stores(embedder=chosen, generation=generation)
        return EnginePorts(
            parser=self.parser,
            classifier=self.classifier,
            chunker=self.chunker,
            # With contextualizing off the pipeline never asks; the port still needs one.
            contextualizer=self.contextualizer or HeadingWindowContextualizer(window=0),
            embedder=chosen,
            llm=self.llm,
            vector_store=vectors,
            lexical_store=lexical,
            document_store=documents,
            reranker=self.reranker,
            rewriter=self.rewriter,
            cache=self.cache,
            tracer=self.tracer,
        )

    def _query_config(self) -> QueryConfig:
        return QueryConfig(
            fusion=cast(FusionMethod, self.settings.fusion),
            rerank_searches=not isinstance(self.reranker, OverlapReranker),
            context_words=self.settings.answer_context_words,
        )

    async def query_engine_for(self, scope: Scope) -> QueryEngine:
        """A query engine using the namespace's active embedding generation (read now)."""
        return self.query_engine(await self.embedder_for_scope(scope))

    async def query_engine_for_generation(self, scope: Scope, generation: int) -> QueryEngine:
        """A query engine searching one live generation with the embedder it was built by.

        This is how a building generation is evaluated before it serves anyone.
        """
        from ragsage.adapters.postgres import live_generations
        from ragsage.core.errors import InvalidRequest

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
        (:class:`~ragsage.core.generations.EmbeddingModelMismatch`); the namespace is then
        read afresh and ``call`` runs once more.
        """
        from ragsage.core.generations import EmbeddingModelMismatch

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
