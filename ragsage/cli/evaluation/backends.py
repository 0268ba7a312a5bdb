"""Indexing an evaluation dataset somewhere searchable: in memory or in Postgres.

Each backend is an async context manager yielding an :class:`IndexedCorpus` —
a search callable plus the map from the engine's document ids back to the
dataset's — and cleans up after itself on exit.  The API backend lives in
:mod:`ragsage.cli.evaluation.api_backend`.
"""

from __future__ import annotations

import mimetypes
import secrets
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ragsage.core.documents import RawSource
from ragsage.core.errors import DocumentError
from ragsage.core.identity import content_hash
from ragsage.core.ports import Embedder
from ragsage.core.scopes import Scope
from ragsage.evaluation.datasets import Dataset, EvalDocument
from ragsage.evaluation.runner import SearchFn
from ragsage.ingestion import IngestionPipeline, PreparedDocument
from ragsage.settings import Settings

if TYPE_CHECKING:
    from ragsage.query import RetrievalOptions, RetrievalResult
    from ragsage.runtime import Engine, Runtime

Writer = Callable[[PreparedDocument], Awaitable[None]]
DEFAULT_CACHE_DIR = Path(".ragsage") / "eval-cache"
EMBEDDERS = ("hashing", "local")


@dataclass(frozen=True, slots=True)
class IndexConfig:
    """How to build the index: the embedder, the chunking, where to cache vectors."""

    embedder: str | None = None
    chunk_size: int | None = None
    chunk_overlap: int | None = None
    contextualize: bool = True
    code_chunking: str | None = None
    code_window: int | None = None
    cache_dir: Path | None = DEFAULT_CACHE_DIR
    keep: bool = False


@dataclass
class IndexedCorpus:
    """A dataset's documents, indexed and searchable."""

    search: SearchFn
    document_ids: dict[str, tuple[str, ...]]
    index_seconds: float
    chunks: int | None
    failures: list[str] = field(default_factory=list)
    where: str = ""
    embedding_model: str = ""
    chunk_size: int | None = None
    chunk_overlap: int | None = None


class _Mapping:
    """Engine document id → dataset ids, merging files the engine stored once."""

    def __init__(self) -> None:
        self.ids: dict[str, tuple[str, ...]] = {}

    def add(self, engine_id: str, dataset_id: str) -> None:
        self.ids[engine_id] = (*self.ids.get(engine_id, ()), dataset_id)


def source_of(document: EvalDocument) -> RawSource:
    media_type = document.media_type or mimetypes.guess_type(document.filename)[0]
    return RawSource(content=document.content, filename=document.filename, media_type=media_type)


async def ingest_all(
    pipeline: IngestionPipeline,
    scope: Scope,
    documents: Sequence[EvalDocument],
    write: Writer | None = None,
) -> tuple[_Mapping, int, list[str]]:
    """Ingest every document in order; failures are collected, not raised.

    ``write`` stores a prepared document (default: the pipeline's own stores);
    Postgres needs the write in one transaction, because a chunk's row refers
    to its document's and that check is deferred to the commit.
    """
    mapping, chunks, failures = _Mapping(), 0, []
    for document in documents:
        existing = await pipeline.document_store.find_by_hash(scope, content_hash(document.content))
        if existing is not None:
            mapping.add(existing.id, document.id)
            continue
        try:
            prepared = await pipeline.prepare(scope, source_of(document))
        except DocumentError as exc:
            failures.append(f"{document.id}: {exc}")
            continue
        if write is None:
            await pipeline.store(scope, prepared)
        else:
            await write(prepared)
        mapping.add(prepared.document.id, document.id)
        chunks += len(prepared.records)
    return mapping, chunks, failures


def _settings(base: Settings, config: IndexConfig) -> Settings:
    changes: dict[str, object] = {}
    if config.embedder:
        changes["embedder"] = config.embedder
        changes["embedding_model"] = ""
    if config.chunk_size is not None:
        changes["chunk_size"] = config.chunk_size
    if config.chunk_overlap is not None:
        changes["chunk_overlap"] = config.chunk_overlap
    if not config.contextualize:
        changes["contextualizer"] = "none"
    if config.code_chunking is not None:
        changes["code_chunking"] = config.code_chunking
    if config.code_window is not None:
        changes["code_window"] = config.code_window
    return base.replace(**changes) if changes else base


async def _with_cache(stack: AsyncExitStack, inner: Embedder, config: IndexConfig) -> Embedder:
    from ragsage.runtime import worth_caching

    if config.cache_dir is None or not worth_caching(inner):
        return inner
    from ragsage.cli.evaluation.disk_cache import cached_embedder

    embedder, cache = cached_embedder(inner, config.cache_dir)
    stack.callback(cache.close)
    return embedder


def memory_engine(settings: Settings, embedder: Embedder, *, contextualize: bool) -> Engine:
    """The offline set over ``embedder``, chunked as ``settings`` say, for one evaluation."""
    from ragsage.ingestion import IngestionConfig
    from ragsage.runtime import compose, offline_ports

    return compose(
        offline_ports(
            embedder=embedder,
            code_chunking=settings.code_chunking,
            code_window=settings.code_window,
        ),
        ingestion=IngestionConfig(
            chunk_size=settings.chunk_size,
            chunk_overlap=settings.chunk_overlap,
            contextualize=contextualize,
        ),
    )


@asynccontextmanager
async def in_memory(dataset: Dataset, config: IndexConfig) -> AsyncIterator[IndexedCorpus]:
    """The dataset in in-memory stores, parsed and chunked by the real heuristic parser."""
    from ragsage.runtime import make_embedder

    settings = _settings(
        Settings.from_env({}), replace(config, embedder=config.embedder or "hashing")
    )
    async with AsyncExitStack() as stack:
        inner = make_embedder(settings, settings.embedder, settings.embedding_model_name, None)
        embedder = await _with_cache(stack, inner, config)
        built = memory_engine(settings, embedder, contextualize=config.contextualize)
        yield await _index(dataset, built, Scope("eval"), settings, "memory")


@asynccontextmanager
async def in_postgres(
    dataset: Dataset, config: IndexConfig, settings: Settings | None = None
) -> AsyncIterator[IndexedCorpus]:
    """The dataset in a throwaway namespace of the configured Postgres, purged on exit.

    Runs the real stores, so it measures the production lexical and dense search.
    """
    from ragsage.runtime import build_runtime, make_embedder

    chosen = _settings(settings or Settings.from_env(), config)
    async with AsyncExitStack() as stack:
        inner = make_embedder(chosen, chosen.embedder, chosen.embedding_model_name, None)
        embedder = await _with_cache(stack, inner, config)
        runtime = build_runtime(chosen, embedder=embedder)
        stack.push_async_callback(runtime.aclose)
        scope = Scope(f"eval-{secrets.token_hex(4)}")
        if not config.keep:
            stack.push_async_callback(_purge, runtime, scope)
        engine = runtime.engine(embedder)

        async def write(prepared: PreparedDocument) -> None:
            from ragsage.jobs.versions import write_version

            async with runtime.database.session(scope) as session:
                await write_version(session, runtime, scope, engine.ingestion, prepared)

        where = f"postgres namespace {scope.namespace}"
        corpus = await _index(dataset, engine, scope, chosen, where, write)
        if config.keep:
            print(f"keeping namespace {scope.namespace!r}", file=sys.stderr)
        yield corpus


async def _index(
    dataset: Dataset,
    engine: Engine,
    scope: Scope,
    settings: Settings,
    where: str,
    write: Writer | None = None,
) -> IndexedCorpus:
    """Ingest the dataset into ``scope`` and search it there: what each backend yields."""
    started = time.perf_counter()
    mapping, chunks, failures = await ingest_all(engine.ingestion, scope, dataset.documents, write)
    elapsed = time.perf_counter() - started

    async def search(query: str, options: RetrievalOptions) -> RetrievalResult:
        return await engine.query.search(scope, query, options)

    return IndexedCorpus(
        search=search,
        document_ids=mapping.ids,
        index_seconds=elapsed,
        chunks=chunks,
        failures=failures,
        where=where,
        embedding_model=engine.query.embedder.model,
        chunk_size=settings.chunk_size,
        chunk_overlap=settings.chunk_overlap,
    )


async def _purge(runtime: Runtime, scope: Scope) -> None:
    from ragsage.adapters.postgres import purge_namespace

    async with runtime.database.session(scope) as session:
        await purge_namespace(session)
