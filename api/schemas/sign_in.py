"""The bodies of the web page's sign-in exchange (:mod:`api.routes.sign_in`)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from ragsage.management.sign_in import MAX_CODE_CHARS
from ragsage.query.requests import Strict


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
