"""The bodies of a namespace's usage and quotas (:mod:`api.routes.usage`)."""

from __future__ import annotations

from pydantic import BaseModel, Field


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
