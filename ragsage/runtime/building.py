"""build_runtime: every port for the settings, and the RAGSAGE_ADAPTERS overrides."""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

from ragsage.adapters.embedding_cache import CachingEmbedder
from ragsage.adapters.parsing import HeuristicBackend, LayoutPageClassifier
from ragsage.core.errors import ConfigurationError
from ragsage.core.ports import (
    Cache,
    DocumentParser,
    Embedder,
    LLMClient,
    Reranker,
    Tracer,
)
from ragsage.settings import Settings

if TYPE_CHECKING:
    from ragsage.adapters.postgres import Database

from ragsage.runtime.container import EmbedderFactory, Runtime
from ragsage.runtime.infrastructure import build_cache, build_database, build_tracer
from ragsage.runtime.models import (
    Providers,
    build_contextualizer,
    build_llm,
    build_reranker,
    build_rewriter,
    make_embedder,
    worth_caching,
)


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
    backend = HeuristicBackend(
        code_chunking=settings.code_chunking, code_window=settings.code_window
    )
    providers = Providers(settings)

    def default_factory(kind: str, model: str, dim: int | None) -> Embedder:
        return make_embedder(settings, kind, model, dim, providers)

    factory = embedder_factory or default_factory
    built_embedder = embedder or factory(
        settings.embedder, settings.embedding_model_name, settings.embedding_dim
    )
    built_cache = cache if cache is not None else build_cache(settings)
    if built_cache is not None and embedder is None and worth_caching(built_embedder):
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
        contextualizer=build_contextualizer(settings, providers),
        embedder=built_embedder,
        llm=llm or build_llm(settings, providers),
        reranker=reranker if reranker is not None else build_reranker(settings, providers),
        rewriter=build_rewriter(settings, providers),
        cache=built_cache,
        tracer=tracer or build_tracer(settings),
        embedder_factory=factory,
        count_tokens=backend.count_tokens,
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
