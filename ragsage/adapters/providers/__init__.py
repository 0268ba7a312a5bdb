"""Model providers: Voyage, OpenAI (and OpenAI-compatible servers), local models.

Each class here implements one model-shaped port of :mod:`ragsage.core.ports`; none
is special to the engine, and the in-memory fakes remain a full alternative.
This package is not imported by ``import ragsage``: reach for it where a process
means to talk to a model.  Importing it loads neither provider SDK, onnxruntime
nor numpy — :func:`build_provider_clients` loads the SDKs, and a
:class:`LocalEmbedder` loads onnxruntime when one is built.

    from ragsage.adapters.providers import ProviderConfig, build_provider_clients

    clients = build_provider_clients(ProviderConfig(voyage_api_key=..., openai_api_key=...))
    embedder = clients.voyage_embedder()   # or clients.openai_embedder()
    llm = clients.openai_llm()
    ...
    await clients.aclose()

Every provider call has a deadline and a few retries with backoff on HTTP 429
and 5xx (honouring ``Retry-After``), and fails with
:class:`~ragsage.core.errors.RetryableProviderError` or
:class:`~ragsage.core.errors.PermanentProviderError`; no API key is ever put into a
message.
"""

from ragsage.adapters.providers.clients import ProviderClients, build_provider_clients
from ragsage.adapters.providers.config import ProviderConfig, RetryPolicy
from ragsage.adapters.providers.local_embedder import LocalEmbedder
from ragsage.adapters.providers.local_model import LocalModelFiles, locate_local_model
from ragsage.adapters.providers.openai_contextualizer import OpenAIContextualizer
from ragsage.adapters.providers.openai_embedder import OpenAIEmbedder
from ragsage.adapters.providers.openai_llm import OpenAILLMClient
from ragsage.adapters.providers.openai_rewriter import OpenAIQueryRewriter
from ragsage.adapters.providers.openai_service import OpenAIService
from ragsage.adapters.providers.tesseract import TesseractTranscriber, tesseract_available
from ragsage.adapters.providers.voyage_client import VoyageClient
from ragsage.adapters.providers.voyage_embedder import VoyageEmbedder
from ragsage.adapters.providers.voyage_reranker import VoyageReranker

__all__ = [
    "LocalEmbedder",
    "LocalModelFiles",
    "OpenAIContextualizer",
    "OpenAIEmbedder",
    "OpenAILLMClient",
    "OpenAIQueryRewriter",
    "OpenAIService",
    "ProviderClients",
    "ProviderConfig",
    "RetryPolicy",
    "TesseractTranscriber",
    "VoyageClient",
    "VoyageEmbedder",
    "VoyageReranker",
    "build_provider_clients",
    "locate_local_model",
    "tesseract_available",
]
