"""The provider clients of a process, built once from a :class:`ProviderConfig`."""

from __future__ import annotations

from dataclasses import dataclass

from ragsage.adapters.providers.config import (
    OPENAI_DEFAULT_BASE_URL,
    PLACEHOLDER_API_KEY,
    VOYAGE_DEFAULT_BASE_URL,
    ProviderConfig,
)
from ragsage.adapters.providers.openai_contextualizer import OpenAIContextualizer
from ragsage.adapters.providers.openai_embedder import OpenAIEmbedder
from ragsage.adapters.providers.openai_llm import OpenAILLMClient
from ragsage.adapters.providers.openai_rewriter import OpenAIQueryRewriter
from ragsage.adapters.providers.openai_service import OpenAIService
from ragsage.adapters.providers.resilience import guard_sdk_logs
from ragsage.adapters.providers.voyage_client import VoyageClient
from ragsage.adapters.providers.voyage_embedder import VoyageEmbedder
from ragsage.adapters.providers.voyage_reranker import VoyageReranker


@dataclass(frozen=True, slots=True)
class ProviderClients:
    """One OpenAI and one Voyage client, and the adapters bound to them by role.

    Models and token caps travel with each call, so one client per provider
    serves every role; the methods below hand each adapter its role's model and
    caps from :attr:`config`.  Call :meth:`aclose` on shutdown.
    """

    config: ProviderConfig
    openai: OpenAIService
    voyage: VoyageClient

    def voyage_embedder(self) -> VoyageEmbedder:
        return VoyageEmbedder(
            self.voyage,
            model=self.config.embedding_model,
            dimension=self.config.embedding_dimension,
            similarity_floor=self.config.similarity_floor,
            batch_size=self.config.embed_batch_size,
        )

    def voyage_reranker(self) -> VoyageReranker:
        return VoyageReranker(self.voyage, model=self.config.rerank_model)

    def openai_embedder(self) -> OpenAIEmbedder:
        return OpenAIEmbedder(
            self.openai,
            model=self.config.embedding_model,
            dimension=self.config.embedding_dimension,
            similarity_floor=self.config.similarity_floor,
            batch_size=self.config.embed_batch_size,
        )

    def openai_llm(self) -> OpenAILLMClient:
        return OpenAILLMClient(
            self.openai,
            generation_model=self.config.generation_model,
            vision_model=self.config.vision_model,
            generation_max_tokens=self.config.generation_max_tokens,
            vision_max_tokens=self.config.vision_max_tokens,
        )

    def openai_contextualizer(self) -> OpenAIContextualizer:
        return OpenAIContextualizer(
            self.openai,
            model=self.config.context_model,
            max_tokens=self.config.context_max_tokens,
            max_document_chars=self.config.context_document_chars,
        )

    def openai_rewriter(self) -> OpenAIQueryRewriter:
        return OpenAIQueryRewriter(
            self.openai, model=self.config.rewrite_model, max_tokens=self.config.rewrite_max_tokens
        )

    async def aclose(self) -> None:
        await self.openai.aclose()


def build_provider_clients(config: ProviderConfig) -> ProviderClients:
    """Construct both providers' clients from ``config`` without opening a socket.

    The SDKs' own retries are off (``max_retries=0``) because every call retries
    through :mod:`ragsage.adapters.providers.resilience`.  Base URLs are always passed, so
    an ``OPENAI_BASE_URL`` lying in the environment cannot redirect a process
    configured without one; likewise an empty key becomes a placeholder rather
    than whatever ``OPENAI_API_KEY`` holds.  The keys are registered with a
    filter that redacts them from the SDKs' own log records.
    """
    from openai import AsyncOpenAI

    guard_sdk_logs((config.openai_api_key, config.voyage_api_key))
    policy = config.retry_policy
    sdk = AsyncOpenAI(
        api_key=config.openai_api_key or PLACEHOLDER_API_KEY,
        base_url=config.openai_base_url or OPENAI_DEFAULT_BASE_URL,
        timeout=config.timeout_seconds,
        max_retries=0,
    )
    voyage = VoyageClient(
        api_key=config.voyage_api_key or PLACEHOLDER_API_KEY,
        base_url=(config.voyage_base_url or VOYAGE_DEFAULT_BASE_URL).rstrip("/"),
        policy=policy,
        keyless=not config.voyage_api_key,
    )
    return ProviderClients(config=config, openai=OpenAIService(sdk, policy=policy), voyage=voyage)
