"""One settings object for every ragsage process, read from ``RAGSAGE_*`` variables.

The API, the worker and the CLI all build their ports from this (see
:mod:`ragsage.runtime`).  Every value has a default that works offline except the
service URLs, which have local defaults; a bad value fails at start-up with the
variable's name in the message, never later with a stack trace.  Secrets (API
keys, passwords inside URLs) are kept out of ``repr``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, TypeVar

from ragsage.adapters.parsing.languages import CODE_CHUNKING, CODE_WINDOW
from ragsage.core.errors import ConfigurationError
from ragsage.core.jobs import Quotas
from ragsage.query.fusion import FUSION_METHODS

if TYPE_CHECKING:
    from ragsage.adapters.celery.broker import QueueSettings

_T = TypeVar("_T")
PREFIX = "RAGSAGE_"
EMBEDDERS = ("auto", "hashing", "voyage", "openai", "local")
GENERATORS = ("extractive", "openai")
RERANKERS = ("overlap", "voyage", "none")
CONTEXTUALIZERS = ("heading-window", "openai", "none")
TRANSCRIBERS = ("auto", "openai", "tesseract", "none")
REWRITERS = ("terms", "openai", "none")
KEYWORD_WEIGHTINGS = ("idf", "plain")
# How the local model reads a text longer than its 256 word pieces (local_embedder.py).
LOCAL_LONG_TEXTS = ("windows", "truncate")
LOCAL_PRECISIONS = ("int8", "float")
# What a width's shared HNSW graph is built on (PostgresConfig.hnsw_type).
HNSW_TYPES = ("vector", "halfvec")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
# The most RAGSAGE_RESTRICTED_KEY_MAX_LIFETIME may allow a restricted key: 31 days.
LONGEST_RESTRICTED_KEY = 31 * 86400
# The width of the bundled local embedding model (all-MiniLM-L6-v2).
LOCAL_MODEL_WIDTH = 384
# The sealing keys' earlier name, from when only webhook secrets were sealed.
_OLD_SEALING_VARIABLE = "RAGSAGE_WEBHOOK_KEYS"


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything configurable, with its ``RAGSAGE_`` variable in each field's name.

    Durations are in seconds.  The job timings (lease, heartbeat, watchdog,
    retry backoff, time limits) default to production values; tests shrink them.
    """

    # Services
    database_url: str = field(default="", repr=False)
    app_database_url: str = field(default="", repr=False)
    # Streaming replicas (app-role URLs, comma-separated) that answer searches and
    # answers while within replica_max_lag seconds of the primary; empty: none.
    replica_database_urls: str = field(default="", repr=False)
    replica_max_lag: float = 5.0
    redis_url: str = field(default="redis://127.0.0.1:6379/0", repr=False)
    cache_redis_url: str = field(default="", repr=False)
    # Where request rates are counted (shared by every API process); empty: the
    # cache's Redis, else the broker's.
    limits_redis_url: str = field(default="", repr=False)
    embedding_dim: int = 384
    # The other vector widths indexed (comma-separated); empty: the catalog's models'.
    embedding_widths: str = ""
    text_search_config: str = "english"
    db_pool_size: int = 5
    # A namespace with at least this many chunks of a width gets an HNSW graph of
    # its own when `ragsage graphs` runs (0: never); walked with graph_ef_search.
    graph_rows: int = 10_000
    graph_ef_search: int = 400
    # What each width's shared HNSW graph is built on: vector or halfvec (half the
    # memory; rebuilt by the next migrate when changed).
    hnsw_type: str = "vector"
    # Models
    # "auto": the local model where it is installed and the width is its own,
    # else hashing; resolved once, at construction (see _resolved_embedder).
    embedder: str = "auto"
    embedding_model: str = ""
    generator: str = "extractive"
    generation_model: str = "gpt-4o"
    vision_model: str = "gpt-4o"
    context_model: str = "gpt-4o-mini"
    reranker: str = "overlap"
    rerank_model: str = "rerank-2"
    contextualizer: str = "heading-window"
    transcriber: str = "auto"
    rewriter: str = "terms"
    rewrite_model: str = "gpt-4o-mini"
    openai_api_key: str = field(default="", repr=False)
    openai_base_url: str = ""
    voyage_api_key: str = field(default="", repr=False)
    voyage_base_url: str = ""
    provider_timeout: float = 60.0
    provider_max_retries: int = 2
    local_model_dir: str = ""
    local_model_long_texts: str = "windows"
    local_model_precision: str = "int8"
    model_cache_dir: str = ""
    # Retrieval
    fusion: str = "score"
    # Words of passages an answer reads, filled as a search's budget_tokens (0:
    # top_k passages of at most 4,000 characters each, as before).
    answer_context_words: int = 0
    keyword_weighting: str = "idf"
    # Ingestion
    chunk_size: int = 512
    chunk_overlap: int = 64
    code_chunking: str = "definitions"
    code_window: int = CODE_WINDOW
    max_upload_bytes: int = 100 * 1024 * 1024
    # The memory one worker process may use for a job (bytes): files larger than
    # their format can be read in within it are refused, and a job that grows
    # past it anyway is failed and its process replaced.
    job_memory_limit: int = 1024 * 1024 * 1024
    parse_cache_ttl: int = 30 * 24 * 3600
    # Jobs
    ingest_queue: str = "ragsage.ingest"
    reindex_queue: str = "ragsage.reindex"
    job_lease: float = 60.0
    job_heartbeat: float = 15.0
    job_max_attempts: int = 5
    job_max_deliveries: int = 5
    job_retry_backoff: float = 2.0
    job_retry_backoff_max: float = 300.0
    job_soft_time_limit: float = 1800.0
    job_time_limit: float = 1900.0
    job_unsent_grace: float = 30.0
    job_requeue_after: float = 3600.0
    watchdog_interval: float = 30.0
    # The jobs one namespace runs at once while another namespace has work
    # waiting (0: no cap beyond the fair turn order); `ragsage namespaces set`
    # overrides it per namespace.  A namespace alone uses every slot.
    job_namespace_slots: int = 0
    # What one namespace may hold (0: no limit); `ragsage namespaces set` overrides
    # each per namespace.  An upload over one is refused before it is stored; a
    # document whose chunks would pass the chunk quota fails its job.
    quota_documents: int = 0
    quota_bytes: int = 0
    quota_chunks: int = 0
    quota_queued_jobs: int = 0
    # Request rates ("50/second", "1000 per minute"; "none": no limit), per API key and
    # per namespace, searches and answers counted apart from everything else.
    rate_limit_search_key: str = "50/second"
    rate_limit_search_namespace: str = "200/second"
    rate_limit_other_key: str = "100/second"
    rate_limit_other_namespace: str = "300/second"
    # Lookups of credentials the API cannot check itself (keys made before keys
    # carried a check, restricted keys naming a parent this process has not
    # seen) one client address may cause; the address is the peer's, or the
    # X-Forwarded-For entry trusted_proxies hops back (docs/security.md).
    rate_limit_unknown_keys: str = "30/minute"
    trusted_proxies: int = 0
    # When set, GET /metrics asks for "Authorization: Bearer <this>".
    metrics_token: str = field(default="", repr=False)
    # What one search or answer may ask for, under the request contract's own
    # ceilings (top_k 100, neighbours 10, history 50), and answers one key may
    # be producing at once (0: no cap).
    max_top_k: int = 100
    # How long one statement of a search or answer may run (ms), overridable per
    # namespace; 0: the sessions' own statement timeout (30 s).
    search_timeout_ms: int = 0
    max_neighbours: int = 10
    max_history_turns: int = 50
    answers_per_key: int = 4
    # The OpenAI-compatible chat endpoint appends a short Sources list to each
    # answer's text (a request's own "sources" field wins); docs/chat.md.
    chat_sources: bool = True
    # Restricted keys (docs/restricted-keys.md): the longest life one may ask for
    # (seconds), and how long an API process trusts what it last read of a parent
    # delegate key; revoking or rotating a parent takes effect within the latter.
    restricted_key_max_lifetime: int = 24 * 3600
    restricted_key_recheck: float = 5.0
    # The operator's Fernet keys that seal every stored secret (webhook endpoints',
    # delegate keys') and check new API keys (comma-separated, the first seals;
    # RAGSAGE_WEBHOOK_KEYS, its earlier name, is still read: docs/security.md).
    sealing_keys: str = field(default="", repr=False)
    # Webhooks (docs/webhooks.md).  Private receivers (loopback,
    # 10/8, ...) refused unless allowed; one attempt's deadline; the retry
    # schedule (backoff base and cap, and how long an event is retried); how
    # long a rotated secret keeps signing; how long delivered and undelivered
    # events are kept; sends at once per worker, per endpoint and per namespace; endpoints per
    # namespace.
    webhook_allow_private: bool = False
    webhook_timeout: float = 10.0
    webhook_retry_base: float = 30.0
    webhook_retry_cap: float = 4 * 3600.0
    webhook_retry_window: float = 24 * 3600.0
    webhook_rotation_grace: float = 24 * 3600.0
    webhook_retention: float = 7 * 86400.0
    webhook_undelivered_retention: float = 30 * 86400.0
    webhook_concurrency: int = 32
    webhook_endpoint_concurrency: int = 4
    webhook_namespace_concurrency: int = 8
    webhook_poll_interval: float = 5.0
    webhook_max_endpoints: int = 20
    # Worker processes run this much nicer than the API: on a shared machine the
    # CPU goes to a waiting query before a background ingest (docs/configuration.md).
    worker_nice: int = 5
    broker_visibility_timeout: float = 7200.0
    # Observability
    log_level: str = "INFO"
    log_json: bool = False
    otel_endpoint: str = ""
    otel_service_name: str = "ragsage"
    worker_metrics_port: int = 0
    worker_metrics_host: str = "0.0.0.0"
    # Where one API server's or one worker's processes share their counts; one
    # directory per unit, never shared.  Empty: a private temporary directory.
    metrics_dir: str = ""

    def __post_init__(self) -> None:
        _one_of("RAGSAGE_EMBEDDER", self.embedder, EMBEDDERS)
        # Frozen, but this is construction: every reader sees the resolved kind.
        object.__setattr__(self, "embedder", _resolved_embedder(self))
        _one_of("RAGSAGE_GENERATOR", self.generator, GENERATORS)
        _one_of("RAGSAGE_RERANKER", self.reranker, RERANKERS)
        _one_of("RAGSAGE_CONTEXTUALIZER", self.contextualizer, CONTEXTUALIZERS)
        _one_of("RAGSAGE_TRANSCRIBER", self.transcriber, TRANSCRIBERS)
        _one_of("RAGSAGE_REWRITER", self.rewriter, REWRITERS)
        _one_of("RAGSAGE_FUSION", self.fusion, FUSION_METHODS)
        _one_of("RAGSAGE_KEYWORD_WEIGHTING", self.keyword_weighting, KEYWORD_WEIGHTINGS)
        _one_of("RAGSAGE_CODE_CHUNKING", self.code_chunking, CODE_CHUNKING)
        _between("RAGSAGE_CODE_WINDOW", self.code_window, 0, 8192)
        _between("RAGSAGE_ANSWER_CONTEXT_WORDS", self.answer_context_words, 0, 20_000)
        _one_of("RAGSAGE_LOCAL_MODEL_LONG_TEXTS", self.local_model_long_texts, LOCAL_LONG_TEXTS)
        _one_of("RAGSAGE_LOCAL_MODEL_PRECISION", self.local_model_precision, LOCAL_PRECISIONS)
        _one_of("RAGSAGE_HNSW_TYPE", self.hnsw_type, HNSW_TYPES)
        _between("RAGSAGE_GRAPH_ROWS", self.graph_rows, 0, 2**62)
        _between("RAGSAGE_GRAPH_EF_SEARCH", self.graph_ef_search, 1, 1000)
        if self.replica_max_lag <= 0:
            raise ConfigurationError("RAGSAGE_REPLICA_MAX_LAG must be positive")
        if self.log_level.upper() not in LOG_LEVELS:
            raise ConfigurationError(
                f"RAGSAGE_LOG_LEVEL must be one of {', '.join(LOG_LEVELS)}; got {self.log_level!r}"
            )
        _between("RAGSAGE_JOB_NAMESPACE_SLOTS", self.job_namespace_slots, 0, 100_000)
        for name in ("documents", "bytes", "chunks", "queued_jobs"):
            _between(f"RAGSAGE_QUOTA_{name.upper()}", getattr(self, f"quota_{name}"), 0, 2**62)
        _between("RAGSAGE_WORKER_NICE", self.worker_nice, 0, 19)
        _between("RAGSAGE_MAX_TOP_K", self.max_top_k, 1, 100)
        _between("RAGSAGE_SEARCH_TIMEOUT_MS", self.search_timeout_ms, 0, 3_600_000)
        _between("RAGSAGE_MAX_NEIGHBOURS", self.max_neighbours, 0, 10)
        _between("RAGSAGE_MAX_HISTORY_TURNS", self.max_history_turns, 0, 50)
        _between("RAGSAGE_ANSWERS_PER_KEY", self.answers_per_key, 0, 10_000)
        _between(
            "RAGSAGE_RESTRICTED_KEY_MAX_LIFETIME",
            self.restricted_key_max_lifetime,
            60,
            LONGEST_RESTRICTED_KEY,
        )
        if not 0 <= self.restricted_key_recheck <= 300:
            raise ConfigurationError(
                "RAGSAGE_RESTRICTED_KEY_RECHECK must be between 0 and 300 seconds"
            )
        _between("RAGSAGE_WORKER_METRICS_PORT", self.worker_metrics_port, 0, 65535)
        self._check_webhooks()
        self.indexed_widths()  # refuses a malformed list at start
        _between("RAGSAGE_EMBEDDING_DIM", self.embedding_dim, 1, 2000)
        if not 16 <= self.chunk_size <= 8192:
            raise ConfigurationError("RAGSAGE_CHUNK_SIZE must be between 16 and 8192 tokens")
        if not 0 <= self.chunk_overlap < self.chunk_size // 2:
            raise ConfigurationError(
                "RAGSAGE_CHUNK_OVERLAP must be at least 0 and less than half of RAGSAGE_CHUNK_SIZE"
            )
        if self.job_heartbeat <= 0 or self.job_lease <= 2 * self.job_heartbeat:
            raise ConfigurationError(
                "RAGSAGE_JOB_LEASE must be more than twice RAGSAGE_JOB_HEARTBEAT, so one late "
                "heartbeat does not hand a live job to another worker"
            )
        if self.job_time_limit <= self.job_soft_time_limit:
            raise ConfigurationError(
                "RAGSAGE_JOB_TIME_LIMIT must be greater than RAGSAGE_JOB_SOFT_TIME_LIMIT"
            )
        if self.broker_visibility_timeout <= self.job_time_limit:
            raise ConfigurationError(
                "RAGSAGE_BROKER_VISIBILITY_TIMEOUT must exceed RAGSAGE_JOB_TIME_LIMIT, or the "
                "broker redelivers jobs that are still running"
            )
        if self.job_memory_limit < 64 * 1024 * 1024:
            raise ConfigurationError("RAGSAGE_JOB_MEMORY_LIMIT must be at least 67108864 (64 MiB)")
        if self.job_max_attempts < 1 or self.job_max_deliveries < 1:
            raise ConfigurationError("RAGSAGE_JOB_MAX_ATTEMPTS and _MAX_DELIVERIES must be >= 1")

    def _check_webhooks(self) -> None:
        _between("RAGSAGE_WEBHOOK_CONCURRENCY", self.webhook_concurrency, 1, 1000)
        _between("RAGSAGE_WEBHOOK_ENDPOINT_CONCURRENCY", self.webhook_endpoint_concurrency, 1, 100)
        _between(
            "RAGSAGE_WEBHOOK_NAMESPACE_CONCURRENCY", self.webhook_namespace_concurrency, 1, 1000
        )
        _between("RAGSAGE_WEBHOOK_MAX_ENDPOINTS", self.webhook_max_endpoints, 1, 1000)
        for name, value, low, high in (
            ("TIMEOUT", self.webhook_timeout, 0.1, 120.0),
            ("RETRY_BASE", self.webhook_retry_base, 0.01, 86400.0),
            ("RETRY_CAP", self.webhook_retry_cap, 0.01, 7 * 86400.0),
            ("RETRY_WINDOW", self.webhook_retry_window, 0.0, 30 * 86400.0),
            ("ROTATION_GRACE", self.webhook_rotation_grace, 0.0, 30 * 86400.0),
            ("RETENTION", self.webhook_retention, 0.0, 3650 * 86400.0),
            ("UNDELIVERED_RETENTION", self.webhook_undelivered_retention, 0.0, 3650 * 86400.0),
            ("POLL_INTERVAL", self.webhook_poll_interval, 0.05, 600.0),
        ):
            if not low <= value <= high:
                raise ConfigurationError(
                    f"RAGSAGE_WEBHOOK_{name} must be between {low:g} and {high:g} seconds"
                )

    @property
    def embedding_model_name(self) -> str:
        """The pinned model id, defaulted per embedder kind."""
        if self.embedding_model:
            return self.embedding_model
        return {
            "hashing": f"ragsage-hashing-{self.embedding_dim}",
            "voyage": "voyage-3-large",
            "openai": "text-embedding-3-small",
            "local": "all-MiniLM-L6-v2",
        }[self.embedder]

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Read ``RAGSAGE_<FIELD>`` variables; ``overrides`` win over the environment."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for spec in fields(cls):
            name = PREFIX + spec.name.upper()
            if spec.name in overrides:
                values[spec.name] = overrides[spec.name]
            elif name in env and env[name] != "":
                values[spec.name] = _parse(name, env[name], type(spec.default))
        if "sealing_keys" not in values and env.get(_OLD_SEALING_VARIABLE, ""):
            values["sealing_keys"] = env[_OLD_SEALING_VARIABLE]
        return cls(**values)

    def replica_urls(self) -> tuple[str, ...]:
        """The replica URLs of RAGSAGE_REPLICA_DATABASE_URLS, in order."""
        return tuple(u.strip() for u in self.replica_database_urls.split(",") if u.strip())

    def indexed_widths(self) -> tuple[int, ...]:
        """Every vector width with an HNSW index: the configured set and RAGSAGE_EMBEDDING_DIM.

        Without ``RAGSAGE_EMBEDDING_WIDTHS`` the set is every width of the
        provider catalog's models that pgvector can index, plus 384 (the local
        model), so re-indexing into any of them needs no schema change.
        """
        from ragsage.adapters.providers.catalog import catalog_widths

        if not self.embedding_widths.strip():
            return tuple(sorted({*catalog_widths(), LOCAL_MODEL_WIDTH, self.embedding_dim}))
        widths = set()
        for part in self.embedding_widths.split(","):
            if not part.strip().isdigit() or not 1 <= int(part) <= 2000:
                raise ConfigurationError(
                    "RAGSAGE_EMBEDDING_WIDTHS must be comma-separated widths from 1 to 2000; "
                    f"got {part.strip()!r}"
                )
            widths.add(int(part))
        return tuple(sorted({*widths, self.embedding_dim}))

    def limits_url(self) -> str:
        """The Redis that counts request rates and answers at once."""
        return self.limits_redis_url or self.cache_redis_url or self.redis_url

    def quotas(self) -> Quotas:
        """The deployment's per-namespace quotas (each namespace may have its own)."""
        return Quotas(
            documents=self.quota_documents,
            bytes=self.quota_bytes,
            chunks=self.quota_chunks,
            queued_jobs=self.quota_queued_jobs,
        )

    def queue(self) -> QueueSettings:
        """The part of these settings the job queue reads."""
        # Here, not at the top: the broker module loads Celery, which the settings must not.
        from ragsage.adapters.celery.broker import QueueSettings

        return QueueSettings(
            redis_url=self.redis_url,
            ingest_queue=self.ingest_queue,
            reindex_queue=self.reindex_queue,
            job_soft_time_limit=self.job_soft_time_limit,
            job_time_limit=self.job_time_limit,
            broker_visibility_timeout=self.broker_visibility_timeout,
        )

    def to_env(self) -> dict[str, str]:
        """These settings as ``RAGSAGE_*`` variables, for processes this one starts."""
        env = {}
        for spec in fields(self):
            value = getattr(self, spec.name)
            env[PREFIX + spec.name.upper()] = (
                ("true" if value else "false") if isinstance(value, bool) else str(value)
            )
        return env

    def replace(self, **changes: Any) -> Settings:
        """A copy with ``changes`` applied (and validated).

        The embedder stays the kind this copy resolved to unless ``changes``
        names one: pass ``embedder="auto"`` beside a new width to choose again.
        """
        current = {spec.name: getattr(self, spec.name) for spec in fields(self)}
        return Settings(**{**current, **changes})


def _resolved_embedder(settings: Settings) -> str:
    """The embedder kind to run: as named, or what ``auto`` means on this machine.

    The local model where its files are installed (``ragsage[local]``, or
    ``RAGSAGE_LOCAL_MODEL_DIR``) and the configured width is the model's own:
    on plain-word questions it finds the answer far more often than the hashing
    embedder (docs/retrieval.md).  Otherwise the hashing embedder, which needs
    nothing installed.  Only file lookups: nothing is loaded here.
    """
    if settings.embedder != "auto":
        return settings.embedder
    from ragsage.adapters.providers.local_model import MODEL_NAME, local_model_available

    if settings.embedding_dim != LOCAL_MODEL_WIDTH:
        return "hashing"
    if settings.embedding_model not in ("", MODEL_NAME):
        return "hashing"  # a model named for another embedder (ragsage-hashing-384, ...)
    if settings.local_model_dir:
        return "local"  # pointed at a model: a wrong path should fail loudly, not fall back
    return "local" if local_model_available() else "hashing"


def _between(name: str, value: int, low: int, high: int) -> None:
    if not low <= value <= high:
        raise ConfigurationError(f"{name} must be between {low} and {high}")


def _one_of(variable: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ConfigurationError(f"{variable} must be one of {', '.join(allowed)}; got {value!r}")


def _parse(variable: str, raw: str, kind: type[Any]) -> Any:
    converters: dict[type[Any], Callable[[str], Any]] = {
        str: str,
        int: int,
        float: float,
        bool: _boolean,
    }
    try:
        return converters[kind](raw.strip())
    except (ValueError, KeyError) as exc:
        raise ConfigurationError(f"{variable} must be {kind.__name__}, got {raw[:40]!r}") from exc


def _boolean(raw: str) -> bool:
    lowered = raw.lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ValueError(raw)
