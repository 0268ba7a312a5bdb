"""Request and response bodies, validated by pydantic and published as OpenAPI.

The same models validate what arrives and describe it in ``/openapi.json``, so
the published schema cannot drift from what the server accepts.  Unknown fields
are refused by name.  The search options and filters are the contract the
facade and the agent tools share (:mod:`ragsage.query.requests`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Field

from ragsage.core.scopes import MAX_PRINCIPALS, PRINCIPAL_PATTERN
from ragsage.library.sign_in import MAX_CODE_CHARS
from ragsage.query.options import MAX_QUERY_CHARS
from ragsage.query.requests import Filters, Query, SearchOptions, Strict, Timestamp, json_integer
from ragsage.settings import LONGEST_RESTRICTED_KEY

# The longest document-list cursor accepted: cursors are document ids, never this long.
MAX_CURSOR_CHARS = 512
# A document-name filter longer than any file name is a mistake, not a search.
MAX_NAME_FILTER_CHARS = 256
# Ids in paths are hashes, UUIDs and ordinals: short, printable, never a control character.
MAX_PATH_ID_CHARS = 512
PATH_ID_PATTERN = r"^[^\x00-\x1f\x7f]*$"
# What ragsage.core.scopes accepts as a principal name, said to clients in the schema.
PrincipalName = Annotated[str, Field(min_length=1, max_length=200, pattern=PRINCIPAL_PATTERN)]
# No embedder ragsage offers makes vectors narrower than this.
MIN_DIM = 16


class RetrievalOptionsBody(SearchOptions):
    """How to retrieve; defaults suit most questions."""


class SearchRequest(RetrievalOptionsBody):
    """Retrieval only: ranked passages with each stage's score."""

    query: Query
    namespace: str | None = Field(
        default=None, description="Ignored: the namespace always comes from the API key."
    )


class TurnBody(Strict):
    role: Literal["user", "assistant"]
    content: str = Field(max_length=MAX_QUERY_CHARS)


class QueryRequest(Strict):
    """A question, optionally in a conversation, answered with citations."""

    question: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    history: list[TurnBody] = Field(default_factory=list, max_length=50)
    options: RetrievalOptionsBody = Field(default_factory=RetrievalOptionsBody)
    stream: bool = Field(
        default=False, description="Answer as Server-Sent Events (also: Accept: text/event-stream)."
    )
    namespace: str | None = Field(
        default=None, description="Ignored: the namespace always comes from the API key."
    )


class UploadFields(Strict):
    """What describes an upload besides its bytes."""

    filename: str = Field(min_length=1, max_length=255, pattern=r"^[^\x00-\x1f]+$")
    media_type: str | None = Field(default=None, max_length=200)
    metadata: dict[str, str | int | float | bool] = Field(default_factory=dict)
    external_id: str | None = Field(default=None, min_length=1, max_length=512)
    job_class: Literal["interactive", "bulk"] = Field(
        default="interactive",
        description=(
            "interactive (the default: someone waits for this file) runs before the "
            "namespace's bulk backlog; send bulk for files of a large batch."
        ),
    )
    namespace: str | None = Field(
        default=None, description="Ignored: the namespace always comes from the API key."
    )
    access: list[PrincipalName] | None = Field(
        default=None,
        max_length=MAX_PRINCIPALS,
        description=(
            "Principals who may read the document (for example group:sales); [] opens it "
            "to the whole namespace.  Absent: a new document gets the key's own principals "
            "(open, for a key bound to none), a new version keeps the document's list.  A "
            "key bound to principals may name only a non-empty subset of them (else 403)."
        ),
    )


class DocumentUpload(UploadFields):
    """A document as JSON, its bytes base64-encoded."""

    content_base64: str = Field(
        min_length=4,
        pattern=(
            r"^(?:[A-Za-z0-9+/]{4})+(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
            r"|^(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)$"
        ),
        description="The file's bytes, standard base64 with padding.",
    )


class AccessChange(Strict):
    """A document's new access list."""

    access: list[PrincipalName] = Field(
        max_length=MAX_PRINCIPALS,
        description=(
            "Principals who may read the document; [] opens it to the whole namespace "
            "(not for a key bound to principals, which may name only a non-empty subset "
            "of its own)."
        ),
    )


class ChunkSectionOut(BaseModel):
    heading_path: list[str]
    start: int = Field(description="Where the section's part starts in the chunk's text")
    end: int
    page: int
    page_start: int = Field(description="Where the same words start in the page's text")
    page_end: int


class ChunkOut(BaseModel):
    id: str
    document_id: str
    ordinal: int
    text: str
    source: str
    title: str
    heading_path: list[str]
    page_numbers: list[int]
    metadata: dict[str, Any]
    created_at: datetime | None
    start_char: int
    end_char: int
    sections: list[ChunkSectionOut] = Field(
        description="The sections a chunk that joined small ones holds; empty: one section"
    )


class SearchResultOut(BaseModel):
    chunk: ChunkOut
    score: float
    vector_score: float | None
    keyword_score: float | None
    rerank_score: float | None
    above: list[ChunkOut]
    below: list[ChunkOut]


class SearchResponse(BaseModel):
    query: str
    total_found: int
    results: list[SearchResultOut]
    timing_ms: dict[str, float]


class PageBoxOut(BaseModel):
    """A box on a page, in the page's own units from its top-left corner (points on a PDF's
    text page, pixels on a scan read by OCR): divide by page_width and page_height."""

    page: int
    left: float
    top: float
    right: float
    bottom: float
    page_width: float
    page_height: float


class CitationOut(BaseModel):
    number: int
    chunk_id: str
    document_id: str
    source: str
    title: str
    heading_path: list[str] = Field(description="The section of the cited words")
    page_numbers: list[int]
    text: str
    quote: str = Field(description="The passage's words the answer used; empty when none aligned")
    start: int = Field(description="Where the quote starts in text")
    end: int
    page_start: int = Field(description="Where the quote starts in its page's text")
    page_end: int
    located: Literal["sentence", "passage"] = Field(
        description="sentence: the answer's words were found; passage: its first section is named"
    )
    boxes: list[PageBoxOut] = Field(
        description="Where the quote is drawn on its page (PDF pages); empty elsewhere"
    )
    lines: list[int] | None = Field(
        default=None,
        description="Source code: the first and last line of the file the quote (or the "
        "passage, when no quote was placed) covers; null elsewhere",
    )


class QueryResponse(BaseModel):
    answer: str
    citations: list[CitationOut]
    not_found: bool
    small_talk: bool
    query: str
    timing_ms: dict[str, float]


class ChunkResponse(BaseModel):
    chunk: ChunkOut
    above: list[ChunkOut]
    below: list[ChunkOut]


class SourcesResponse(BaseModel):
    sources: list[str]


class DocumentOut(BaseModel):
    id: str
    external_id: str
    filename: str | None
    title: str
    media_type: str | None
    size_bytes: int | None
    status: Literal["queued", "processing", "ready", "failed"]
    error: str | None
    content_hash: str
    metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    access: list[str] = Field(description="Principals who may read it; empty: the whole namespace.")


class DocumentList(BaseModel):
    documents: list[DocumentOut]
    next_cursor: str | None


class UploadResponse(BaseModel):
    document_id: str
    job_id: str | None
    state: Literal["queued", "running", "succeeded", "failed", "cancelled", "superseded"]
    duplicate: bool


class JobProgress(BaseModel):
    """How far a running job's stage has got: chunks embedded of the document's total."""

    done: int
    total: int


class JobOut(BaseModel):
    id: str
    document_id: str
    kind: str
    job_class: Literal["interactive", "bulk", "reindex"]
    state: Literal["queued", "running", "succeeded", "failed", "cancelled", "superseded"]
    stage: str | None
    progress: JobProgress | None
    filename: str
    content_hash: str
    attempts: int
    deliveries: int
    lost_deliveries: int
    version: int | None
    error: str | None
    timings_ms: dict[str, float]
    result: dict[str, Any] | None
    created_at: datetime | None
    updated_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None


class JobList(BaseModel):
    jobs: list[JobOut]
    next_cursor: str | None


class ErrorDetail(BaseModel):
    code: str
    message: str
    details: list[dict[str, Any]] | None = None


class ErrorResponse(BaseModel):
    error: ErrorDetail


class ReindexRequest(Strict):
    """Re-embed the key's namespace with another model; the switch happens when done."""

    embedding_model: str = Field(min_length=1, max_length=200)
    embedder: Literal["hashing", "voyage", "openai", "local"] | None = None
    # Bounds before the validator, or the published schema loses them inside the union.
    dim: (
        Annotated[int, Field(strict=False, ge=MIN_DIM, le=2000), BeforeValidator(json_integer)]
        | None
    ) = None
    held: bool = Field(
        default=False,
        description="once complete, wait for POST /v1/reindex/{generation}/activate instead of "
        "switching (an evaluation gate's decision)",
    )


class RollbackRequest(Strict):
    """Undo the last switch, or abandon a re-index still building."""

    force: bool = Field(
        default=False,
        description="roll back even over documents uploaded or replaced since the switch, "
        "which the previous generation lacks",
    )


class ActiveGeneration(BaseModel):
    generation: int
    embedder: str
    embedding_model: str
    embedding_dim: int


class DroppedGenerations(BaseModel):
    freed_chunks: int


class GenerationOut(BaseModel):
    id: int
    embedder: str
    embedding_model: str
    embedding_dim: int
    state: Literal["building", "active", "retired"]
    chunks: int
    done: int
    failed: int
    pending: int
    total: int
    failures: list[dict[str, str]]
    held: bool = Field(
        default=False, description="started with an evaluation gate: it switches only on request"
    )
    complete: bool = Field(
        default=False, description="a building generation that already holds every document"
    )
    gate: dict[str, Any] | None = Field(
        default=None,
        description="the evaluation gate's verdict on this generation (figures, margin, "
        "passed, forced), when `ragsage reindex --gate` judged it",
    )


class QuotasOut(BaseModel):
    """What the namespace may hold; 0 is no limit."""

    documents: int
    stored_bytes: int
    chunks: int
    queued_jobs: int


class UsageOut(BaseModel):
    """What the key's namespace holds and may hold, and the requests its limits refused."""

    namespace: str
    documents: int
    chunks: int = Field(description="chunks in the generation serving searches")
    stored_bytes: int
    jobs_queued: int
    jobs_running: int
    quotas: QuotasOut
    job_slots: int = Field(description="jobs it runs at once while others wait (0: no cap)")
    rate_limits: dict[str, str] = Field(description="each limit in force, as configured")
    refused: dict[str, int] | None = Field(
        description="requests refused by each limit; null when the limits' Redis is away"
    )


class ReindexStatus(BaseModel):
    generations: list[GenerationOut]


class ReindexStarted(BaseModel):
    generation: int
    queued: int


class Health(BaseModel):
    status: Literal["ok", "degraded", "unavailable"]
    checks: dict[str, str] = Field(default_factory=dict)


class RestrictedKeyRequest(Strict):
    """What a restricted key may do; it never exceeds the delegate key that issues it."""

    principals: list[PrincipalName] = Field(
        min_length=1,
        max_length=MAX_PRINCIPALS,
        description="Whom the key reads for: a subset of the delegate key's principals "
        "(any names for a delegate key bound to none).",
    )
    expires_in: Annotated[
        int, Field(strict=False, ge=1, le=LONGEST_RESTRICTED_KEY), BeforeValidator(json_integer)
    ] = Field(
        description="Seconds until the key stops working (at most "
        "RAGSAGE_RESTRICTED_KEY_MAX_LIFETIME)."
    )
    role: Literal["read", "write"] = Field(
        default="read", description="read (the default), or write for a key that may upload"
    )
    filters: Filters | None = Field(
        default=None,
        description="Applied to every search and answer of the key, on top of the request's; "
        "a key with filters is read-only and may only search, answer, list sources and open "
        "chunks.",
    )
    subject: str | None = Field(
        default=None,
        pattern=PRINCIPAL_PATTERN,
        description="The product's name for the user, shown in the API's logs.",
    )


class RestrictedKeyOut(BaseModel):
    key: str = Field(description="The restricted key, for Authorization: Bearer")
    parent: str = Field(description="The delegate key it was issued under")
    namespace: str
    principals: list[str]
    role: str
    expires_at: datetime
    filters: dict[str, Any] | None = None
    subject: str | None = None


class SigningSecretOut(BaseModel):
    key_id: str
    signing_secret: str = Field(
        description="The delegate key's new secret for minting restricted keys (HS256); "
        "shown only now. Keys signed with the previous one stop working."
    )


class SignInRequest(Strict):
    """A one-time sign-in code, as a sign-in link carries it (``/#code=...``)."""

    code: str = Field(
        min_length=1,
        max_length=MAX_CODE_CHARS,
        # Fernet's alphabet: url-safe base64.
        pattern=r"^[A-Za-z0-9_=-]+$",
        description="The code from the link; it works once, within minutes of being made.",
    )


class SignInOut(BaseModel):
    key: str = Field(
        description="The key the code stood for; GET /v1/key with it says whose it is."
    )


class KeyRestrictionOut(BaseModel):
    expires_at: datetime
    subject: str | None = None
    filters: dict[str, Any] | None = None


class CurrentKeyOut(BaseModel):
    """The key a request was made with, as the API sees it."""

    namespace: str
    key_id: str = Field(description="The key's id; a restricted key's parent's")
    role: str
    principals: list[str] | None = Field(
        description="Whom the key reads for; null: the whole namespace"
    )
    restricted: KeyRestrictionOut | None = Field(
        default=None, description="Set for a restricted key: when it expires, and its filters"
    )


# ------------------------------------------------------------------ webhooks

WebhookEventType = Literal[
    "job.succeeded",
    "job.failed",
    "job.superseded",
    "job.cancelled",
    "document.deleted",
    "reindex.switched",
    "reindex.failed",
]
_EVENTS_FIELD = (
    "The event types posted to the endpoint; every type when left out. The body of each "
    "is {id, type, timestamp, namespace, data}, data holding the fields the API returns for "
    "the job, document or generation (docs/webhooks.md)."
)
_PRINCIPALS_FIELD = (
    "Bind the endpoint to principals: it then receives events about documents open to the "
    "whole namespace or listing one of them. null: every event of the namespace."
)


class WebhookCreate(Strict):
    url: str = Field(
        max_length=2048,
        description="Where events are posted (https:// or http://). By default it may not "
        "resolve to a loopback, private, link-local or metadata address.",
    )
    events: list[WebhookEventType] | None = Field(
        default=None, min_length=1, max_length=7, description=_EVENTS_FIELD
    )
    principals: list[PrincipalName] | None = Field(
        default=None, min_length=1, max_length=MAX_PRINCIPALS, description=_PRINCIPALS_FIELD
    )
    description: str = Field(default="", max_length=500)
    enabled: bool = True


class WebhookUpdate(Strict):
    """Only the fields given change; enabling a disabled endpoint clears its failure."""

    url: str | None = Field(default=None, max_length=2048)
    events: list[WebhookEventType] | None = Field(default=None, min_length=1, max_length=7)
    principals: list[PrincipalName] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_PRINCIPALS,
        description="A list binds the endpoint; null unbinds it; left out, unchanged.",
    )
    description: str | None = Field(default=None, max_length=500)
    enabled: bool | None = None


class WebhookOut(BaseModel):
    id: str
    url: str
    events: list[str]
    enabled: bool
    principals: list[str] | None
    description: str
    disabled_reason: str | None = Field(
        description="Why the workers disabled the endpoint (it kept failing); replay its "
        "undelivered events once it is fixed and enabled again."
    )
    failing_since: datetime | None
    previous_secret_until: datetime | None = Field(
        description="Until then deliveries carry a signature with the previous secret too."
    )
    created_at: datetime
    updated_at: datetime


class WebhookCreated(WebhookOut):
    secret: str = Field(
        description="The endpoint's signing secret (whsec_...), for standardwebhooks or svix; "
        "shown only now."
    )


class WebhookList(BaseModel):
    webhooks: list[WebhookOut]


class WebhookSecretOut(BaseModel):
    id: str
    secret: str = Field(description="The new signing secret; shown only now.")
    previous_secret_until: datetime | None = Field(
        description="Deliveries carry both signatures until then."
    )


class DeliveryOut(BaseModel):
    event_id: str
    event_type: str
    event_created_at: datetime
    state: Literal["pending", "delivered", "failed"]
    attempts: int
    next_attempt_at: datetime | None
    last_attempt_at: datetime | None
    last_status: int | None = Field(description="The receiver's HTTP status; null: no answer.")
    last_latency_ms: float | None
    last_error: str | None


class DeliveryList(BaseModel):
    deliveries: list[DeliveryOut]


class ReplayRequest(Strict):
    since: Timestamp | None = Field(
        default=None, description="Only events from then on; every undelivered one if left out."
    )


class ReplayOut(BaseModel):
    scheduled: int = Field(description="Undelivered events scheduled to be sent again now.")
