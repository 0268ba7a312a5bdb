"""What the provider adapters are configured with: keys, per-role models, call limits."""

from __future__ import annotations

from dataclasses import dataclass, field

from ragsage.core.errors import ConfigurationError

# The SDKs refuse an empty key at construction; this stands in so a process with
# no keys still boots, and the provider rejects the first real call (HTTP 401).
PLACEHOLDER_API_KEY = "ragsage-no-api-key-configured"
OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
VOYAGE_DEFAULT_BASE_URL = "https://api.voyageai.com/v1"


@dataclass(frozen=True, slots=True)
class ProviderConfig:
    """Keys, per-role model ids and call limits for the Voyage and OpenAI adapters.

    Roles are split because they are priced and shaped differently: embedding and
    reranking usually go to Voyage; generation, vision, contextualizing and query
    rewriting to OpenAI (or any server speaking its API at ``openai_base_url``,
    such as vLLM, Ollama or LM Studio), the last two on a cheap tier.

    An empty key is allowed and means "calls to this provider will fail": the
    clients still build, so a process that never calls a model boots, and a
    real call fails at request time with an authentication error.

    ``embedding_dimension`` is the vector width to request; ``None`` takes the
    model's native width from the catalogue of known models, and a model the
    catalogue does not know must name it.  Retries are deliberately few: the
    job runner retries whole jobs with its own, longer backoff.
    """

    openai_api_key: str = field(default="", repr=False)
    voyage_api_key: str = field(default="", repr=False)
    openai_base_url: str = ""
    voyage_base_url: str = ""
    embedding_model: str = "voyage-3-large"
    embedding_dimension: int | None = None
    similarity_floor: float | None = None
    rerank_model: str = "rerank-2"
    generation_model: str = "gpt-4o"
    vision_model: str = "gpt-4o"
    context_model: str = "gpt-4o-mini"
    rewrite_model: str = "gpt-4o-mini"
    timeout_seconds: float = 60.0
    max_retries: int = 2
    retry_backoff_seconds: float = 0.5
    max_retry_sleep_seconds: float = 20.0
    embed_batch_size: int = 128
    generation_max_tokens: int | None = None
    vision_max_tokens: int = 4096
    context_max_tokens: int = 128
    rewrite_max_tokens: int = 256
    context_document_chars: int = 300_000

    def __post_init__(self) -> None:
        if self.timeout_seconds <= 0:
            raise ConfigurationError("provider timeout must be positive")
        if not 0 <= self.max_retries <= 10:
            raise ConfigurationError("provider max_retries must be between 0 and 10")
        if self.retry_backoff_seconds < 0 or self.max_retry_sleep_seconds < 0:
            raise ConfigurationError("provider retry sleeps must not be negative")
        if self.embed_batch_size < 1:
            raise ConfigurationError("embed_batch_size must be at least 1")
        if self.embedding_dimension is not None and self.embedding_dimension < 1:
            raise ConfigurationError("embedding_dimension must be positive")
        for name in ("vision_max_tokens", "context_max_tokens", "rewrite_max_tokens"):
            if getattr(self, name) < 1:
                raise ConfigurationError(f"{name} must be at least 1")
        if self.generation_max_tokens is not None and self.generation_max_tokens < 1:
            raise ConfigurationError("generation_max_tokens must be at least 1")
        if self.context_document_chars < 1000:
            raise ConfigurationError("context_document_chars must be at least 1000")

    @property
    def retry_policy(self) -> RetryPolicy:
        return RetryPolicy(
            timeout_seconds=self.timeout_seconds,
            max_retries=self.max_retries,
            backoff_seconds=self.retry_backoff_seconds,
            max_sleep_seconds=self.max_retry_sleep_seconds,
        )


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How one provider call is bounded in time and retried.

    ``timeout_seconds`` bounds each attempt.  Transient failures are retried
    ``max_retries`` times, sleeping ``backoff_seconds * 2**n`` (with jitter) or the
    provider's ``Retry-After``, never longer than ``max_sleep_seconds``.
    """

    timeout_seconds: float = 60.0
    max_retries: int = 2
    backoff_seconds: float = 0.5
    max_sleep_seconds: float = 20.0
