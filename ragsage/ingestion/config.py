"""How the ingestion pipeline cuts and embeds documents."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class IngestionConfig:
    """How documents are cut and embedded; sizes are in tokens."""

    chunk_size: int = 512
    chunk_overlap: int = 64
    contextualize: bool = True
    embed_batch_size: int = 64
    concurrency: int = 8
    parse_cache_ttl_seconds: int | None = 30 * 24 * 3600

    def __post_init__(self) -> None:
        if self.chunk_size < 16:
            raise ValueError(f"chunk_size must be at least 16 tokens, got {self.chunk_size}")
        if not 0 <= self.chunk_overlap < self.chunk_size // 2:
            raise ValueError(
                f"chunk_overlap must be between 0 and half of chunk_size, got {self.chunk_overlap}"
            )
        if self.embed_batch_size < 1 or self.concurrency < 1:
            raise ValueError("embed_batch_size and concurrency must be positive")
