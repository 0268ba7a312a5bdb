"""The bodies of restricted keys, delegate keys' signing secrets and the key a request
was made with (:mod:`api.routes.keys`)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Field

from api.schemas.common import PrincipalName
from ragsage.core.scopes import MAX_PRINCIPALS, PRINCIPAL_PATTERN
from ragsage.query.requests import Filters, Strict, json_integer
from ragsage.settings import LONGEST_RESTRICTED_KEY


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
