"""``ragsage.providers``: the model providers' adapters, by their documented path.

They live in :mod:`ragsage.adapters.providers`.  As there, importing this loads
no provider SDK; building the clients does.
"""

from ragsage.adapters.providers import (
    LocalEmbedder,
    LocalModelFiles,
    OpenAIContextualizer,
    OpenAIEmbedder,
    OpenAILLMClient,
    OpenAIQueryRewriter,
    OpenAIService,
    ProviderClients,
    ProviderConfig,
    RetryPolicy,
    TesseractTranscriber,
    VoyageClient,
    VoyageEmbedder,
    VoyageReranker,
    build_provider_clients,
    locate_local_model,
    tesseract_available,
)

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
