"""The model ports from the settings: embedders, generator, reranker, rewriter, contextualizer."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ragsage.adapters.offline import (
    ExtractiveReader,
    HashingEmbedder,
    OverlapReranker,
    TermRewriter,
)
from ragsage.adapters.parsing.contextualizing import HeadingWindowContextualizer
from ragsage.core.errors import ConfigurationError
from ragsage.core.ports import (
    Contextualizer,
    Embedder,
    LLMClient,
    QueryRewriter,
    Reranker,
)
from ragsage.core.transcribing import NoTranscriber, SplitLLMClient, Transcriber
from ragsage.settings import Settings

if TYPE_CHECKING:
    from ragsage.adapters.providers import ProviderClients, ProviderConfig


def hashing_dimension(model: str) -> int | None:
    """The width a ``ragsage-hashing-<N>`` model name encodes."""
    prefix = "ragsage-hashing-"
    if model.startswith(prefix) and model[len(prefix) :].isdigit():
        return int(model[len(prefix) :])
    return None


def worth_caching(embedder: Embedder) -> bool:
    """Whether a cache of ``embedder``'s vectors pays: not for the hashing embedder,
    which makes a vector faster than any cache can hand one back."""
    return hashing_dimension(embedder.model) is None


def provider_config(settings: Settings) -> ProviderConfig:
    """The provider adapters' configuration, from the settings."""
    from ragsage.adapters.providers import ProviderConfig

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


class Providers:
    """The provider clients, built on first need (no SDK is imported before)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._clients: ProviderClients | None = None

    def __call__(self) -> ProviderClients:
        if self._clients is None:
            from ragsage.adapters.providers import build_provider_clients

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
        from ragsage.adapters.providers import LocalEmbedder, locate_local_model
        from ragsage.adapters.providers.local_embedder import long_texts_of, precision_of
        from ragsage.adapters.providers.local_int8 import cache_folder

        return LocalEmbedder(
            locate_local_model(settings.local_model_dir or None),
            long_texts=long_texts_of(settings.local_model_long_texts),
            precision=precision_of(settings.local_model_precision),
            model_cache=cache_folder(settings.model_cache_dir),
        )
    clients = (providers or Providers(settings))()
    if kind == "voyage":
        from ragsage.adapters.providers import VoyageEmbedder

        return VoyageEmbedder(clients.voyage, model=model, dimension=dim)
    if kind == "openai":
        from ragsage.adapters.providers import OpenAIEmbedder

        return OpenAIEmbedder(clients.openai, model=model, dimension=dim)
    raise ConfigurationError(f"unknown embedder kind {kind!r}")


def _transcriber(settings: Settings, providers: Providers) -> Transcriber:
    choice = settings.transcriber
    if choice == "auto":
        if settings.generator == "openai":
            choice = "openai"
        else:
            from ragsage.adapters.providers import tesseract_available

            choice = "tesseract" if tesseract_available() else "none"
    if choice == "openai":
        return providers().openai_llm()
    if choice == "tesseract":
        from ragsage.adapters.providers import TesseractTranscriber

        return TesseractTranscriber()
    return NoTranscriber()


def build_llm(settings: Settings, providers: Providers) -> LLMClient:
    generator: LLMClient = (
        providers().openai_llm() if settings.generator == "openai" else ExtractiveReader()
    )
    return SplitLLMClient(generator, _transcriber(settings, providers))


def build_reranker(settings: Settings, providers: Providers) -> Reranker | None:
    if settings.reranker == "none":
        return None
    if settings.reranker == "voyage":
        return providers().voyage_reranker()
    return OverlapReranker()


def build_contextualizer(settings: Settings, providers: Providers) -> Contextualizer | None:
    if settings.contextualizer == "none":
        return None
    if settings.contextualizer == "openai":
        return providers().openai_contextualizer()
    return HeadingWindowContextualizer()


def build_rewriter(settings: Settings, providers: Providers) -> QueryRewriter | None:
    if settings.rewriter == "none":
        return None
    if settings.rewriter == "openai":
        return providers().openai_rewriter()
    return TermRewriter()
