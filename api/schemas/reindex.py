"""The bodies of re-indexing and embedding generations (:mod:`api.routes.reindex`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Field

from ragsage.query.requests import Strict, json_integer

# No embedder ragsage offers makes vectors narrower than this.
MIN_DIM = 16


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


class ReindexStatus(BaseModel):
    generations: list[GenerationOut]


class ReindexStarted(BaseModel):
    generation: int
    queued: int
