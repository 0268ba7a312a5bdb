"""What the bodies of several areas share: the error body any route may answer with,
the bounds of the ids in paths, and principal names."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field

from ragsage.core.scopes import PRINCIPAL_PATTERN

# Ids in paths are hashes, UUIDs and ordinals: short, printable, never a control character.
MAX_PATH_ID_CHARS = 512
PATH_ID_PATTERN = r"^[^\x00-\x1f\x7f]*$"
# What ragsage.core.scopes accepts as a principal name, said to clients in the schema.
PrincipalName = Annotated[str, Field(min_length=1, max_length=200, pattern=PRINCIPAL_PATTERN)]


class ErrorDetail(BaseModel):
    code: str
    message: str
    details: list[dict[str, Any]] | None = None


class ErrorResponse(BaseModel):
    error: ErrorDetail
