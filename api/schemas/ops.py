"""The body of the health probes (:mod:`api.routes.ops`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class Health(BaseModel):
    status: Literal["ok", "degraded", "unavailable"]
    checks: dict[str, str] = Field(default_factory=dict)
