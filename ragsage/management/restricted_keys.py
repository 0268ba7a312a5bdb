"""Restricted keys: short-lived tokens a product gives its users, signed under a delegate key.

A restricted key is a JSON Web Token (RFC 7519) signed with HMAC-SHA256 by the
signing secret of one delegate key, its *parent*: the API issues them
(``POST /v1/restricted-keys``), and a product's backend may mint them itself
with the secret it was shown once (:func:`mint` here, or any JWT library).
The token names its parent in the header (``kid``) and carries:

* ``ns``: the parent's namespace;
* ``exp``: when it stops working (required; at most the operator's
  ``RAGSAGE_RESTRICTED_KEY_MAX_LIFETIME`` ahead);
* ``principals``: whom it reads for, a non-empty subset of what the parent
  may grant (any names for a parent bound to none);
* ``role``: ``read`` (the default) or ``write``;
* ``filters``: search filters every search and answer of the key obeys;
* ``sub``: the product's name for the user, shown in the API's logs.

The API checks a token against its parent as the API last read it (at most
``RAGSAGE_RESTRICTED_KEY_RECHECK`` seconds ago): revoking the parent, or
rotating its secret, refuses every token under it within that bound, with
no database lookup per token.  PyJWT does the signing and checking.
"""

from __future__ import annotations

import math
import re
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

import jwt
from pydantic import Field, ValidationError

from ragsage.core.errors import Forbidden, InvalidRequest
from ragsage.core.filters import SearchFilters
from ragsage.core.keys import Principal, Restriction, Role, Signer, hash_key
from ragsage.core.scopes import NAMESPACE_PATTERN, PRINCIPAL_PATTERN, Scope, check_principals
from ragsage.query.requests import Filters, Strict

ALGORITHM = "HS256"
# A token with every claim at its limit stays well under this.
MAX_TOKEN_CHARS = 16_384
# An offline minter's clock may run ahead of the API's by this much.
CLOCK_SKEW_SECONDS = 60
# Beyond any lifetime an operator may allow; past it a date is not worth making.
_FARTHEST_EXPIRY = 10 * 366 * 86400
_KEY_ID = re.compile(r"^[a-z0-9]{10}$")
_NAMESPACE = re.compile(NAMESPACE_PATTERN)
_JWT = re.compile(r"^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$")


class RestrictedKeyRefused(Exception):
    """A token that is not a valid restricted key now: malformed, tampered, expired, orphaned."""


class SignatureMismatch(RestrictedKeyRefused):
    """A token its parent's signing secret, as read, did not sign."""


@dataclass(frozen=True, slots=True)
class Grant:
    """What one restricted key allows."""

    principals: frozenset[str]
    expires_at: datetime
    role: Role = Role.READ
    filters: SearchFilters | None = None
    subject: str = ""


class _Claims(Strict):
    """A restricted key's payload; any claim not named here is refused, not ignored.

    A misspelt ``filters`` must not yield a key that reads more than its
    issuer meant, so unknown claims make the token invalid.
    """

    ns: str = Field(min_length=1, max_length=128)
    exp: float
    principals: list[str] = Field(min_length=1)
    role: Literal["read", "write"] = "read"
    filters: Filters | None = None
    sub: str | None = Field(default=None, pattern=PRINCIPAL_PATTERN)
    # Registered claims a JWT library may add; read for nothing.
    iat: float | None = None
    nbf: float | None = None
    jti: str | None = Field(default=None, max_length=200)


def grant_of(
    principals: Any,
    expires_in: float,
    *,
    role: Role | str = Role.READ,
    filters: SearchFilters | None = None,
    subject: str = "",
    now: float | None = None,
) -> Grant:
    """A grant from its parts, refused (InvalidRequest) where a part is malformed."""
    names = check_principals(principals, "a restricted key's principals")
    if not names:
        raise InvalidRequest("a restricted key names at least one principal")
    chosen = Role(role)
    if chosen not in (Role.READ, Role.WRITE):
        raise InvalidRequest("a restricted key's role is read or write")
    if filters is not None and filters.is_empty:
        filters = None
    if filters is not None and chosen is not Role.READ:
        raise InvalidRequest(
            "filters narrow what a key reads: a restricted key with filters is read-only"
        )
    if subject and not re.fullmatch(PRINCIPAL_PATTERN, subject):
        raise InvalidRequest(
            "a restricted key's subject is 1-200 characters of letters, digits "
            "and _ . : @ + / = # -"
        )
    if not (isinstance(expires_in, int | float) and math.isfinite(expires_in) and expires_in >= 1):
        raise InvalidRequest("a restricted key needs an expiry at least 1 second ahead")
    if expires_in > _FARTHEST_EXPIRY:
        raise InvalidRequest("a restricted key's expiry is at most ten years ahead")
    at = (time.time() if now is None else now) + expires_in
    return Grant(names, datetime.fromtimestamp(int(at), UTC), chosen, filters, subject)


def mint(key_id: str, namespace: str, signing_secret: str, grant: Grant) -> str:
    """The restricted key of ``grant``, signed under the delegate key ``key_id``.

    What a product's backend runs (or its own JWT library's equivalent) to
    give a user a key without calling the API; the API checks the grant
    against the parent when the key is used.
    """
    if not _KEY_ID.fullmatch(key_id):
        raise InvalidRequest(f"{key_id!r} is not a key id (10 lowercase letters and digits)")
    claims: dict[str, Any] = {
        "ns": Scope(namespace).namespace,
        "exp": int(grant.expires_at.timestamp()),
        "iat": int(time.time()),
        # Two keys of the same grant issued in one second are two keys, counted apart.
        "jti": secrets.token_urlsafe(9),
        "principals": sorted(grant.principals),
    }
    if grant.role is not Role.READ:
        claims["role"] = grant.role.value
    if grant.filters is not None:
        claims["filters"] = filters_claim(grant.filters)
    if grant.subject:
        claims["sub"] = grant.subject
    return jwt.encode(claims, signing_secret, algorithm=ALGORITHM, headers={"kid": key_id})


def looks_restricted(credential: str) -> bool:
    """True if ``credential`` has a JWT's shape (API keys start ``rsk_``)."""
    return len(credential) <= MAX_TOKEN_CHARS and _JWT.fullmatch(credential) is not None


def signing_input(token: str) -> str:
    """What a token's signature covers: its identity, however the signature is encoded.

    Two spellings of one signature (base64's unused trailing bits) verify
    alike; counting, logging or remembering a key by this part makes them one key.
    """
    return token.rpartition(".")[0]


def parent_of(token: str) -> tuple[str, str]:
    """The (namespace, key id) a token says signed it, read before its signature is checked."""
    try:
        header = jwt.get_unverified_header(token)
        payload = jwt.decode(token, options={"verify_signature": False})
    except (jwt.PyJWTError, ValueError, RecursionError):
        raise RestrictedKeyRefused("the restricted key is not a well-formed token") from None
    key_id, namespace = header.get("kid"), payload.get("ns")
    if not isinstance(key_id, str) or not _KEY_ID.fullmatch(key_id):
        raise RestrictedKeyRefused("the restricted key does not name its parent key (kid)")
    # Checked before anything is looked up or remembered under this name.
    if not isinstance(namespace, str) or not _NAMESPACE.fullmatch(namespace):
        raise RestrictedKeyRefused("the restricted key does not name a namespace (ns)")
    return namespace, key_id


def verify(
    token: str, signer: Signer, *, max_lifetime: float, now: float | None = None
) -> Principal:
    """The principal ``token`` acts as, checked against its parent ``signer``.

    RestrictedKeyRefused (answered 401) for a token that is not valid now:
    signed with another secret, altered, expired, malformed.  Forbidden (403)
    for a valid token that asks for more than its parent may grant.
    """
    moment = time.time() if now is None else now
    try:
        payload = jwt.decode(
            token,
            signer.secret,
            algorithms=[ALGORITHM],
            options={"require": ["exp"], "verify_exp": False},
            # iat and nbf from a minter whose clock runs a little ahead; exp is checked below.
            leeway=CLOCK_SKEW_SECONDS,
        )
    except jwt.InvalidSignatureError:
        raise SignatureMismatch(
            "the restricted key's signature does not match its parent key's signing secret"
        ) from None
    except jwt.ImmatureSignatureError:
        raise RestrictedKeyRefused("the restricted key is not valid yet (iat or nbf)") from None
    except (jwt.PyJWTError, ValueError, RecursionError):
        raise RestrictedKeyRefused("the restricted key is not a well-formed token") from None
    try:
        claims = _Claims.model_validate(payload)
    except ValidationError as exc:
        raise RestrictedKeyRefused(
            f"the restricted key's claims are not valid: {_first(exc)}"
        ) from None
    if claims.exp <= moment:
        expired = datetime.fromtimestamp(claims.exp, UTC).isoformat()
        raise RestrictedKeyRefused(f"the restricted key expired at {expired}")
    if claims.ns != signer.namespace:
        raise RestrictedKeyRefused("the restricted key names another namespace than its parent's")
    try:
        grant = grant_of(
            claims.principals,
            claims.exp - moment,
            role=claims.role,
            filters=claims.filters.to_filters() if claims.filters is not None else None,
            subject=claims.sub or "",
            now=moment,
        )
    except InvalidRequest as exc:
        raise RestrictedKeyRefused(f"the restricted key's claims are not valid: {exc}") from None
    check_grant(grant, signer, max_lifetime=max_lifetime, now=moment)
    restriction = Restriction(
        expires_at=datetime.fromtimestamp(claims.exp, UTC),
        token_id=hash_key(signing_input(token))[:16],
        subject=grant.subject,
        filters=grant.filters,
    )
    return Principal(
        scope=Scope(signer.namespace, grant.principals),
        key_id=signer.key_id,
        role=grant.role,
        restriction=restriction,
    )


def check_grant(grant: Grant, signer: Signer, *, max_lifetime: float, now: float) -> None:
    """Forbidden if ``grant`` asks for more than ``signer`` may give."""
    beyond = grant.principals - signer.principals if signer.principals is not None else set()
    if beyond:
        raise Forbidden(
            "a restricted key may name only principals its parent key holds; "
            f"{', '.join(sorted(beyond))} {'is' if len(beyond) == 1 else 'are'} not among them"
        )
    if grant.expires_at.timestamp() - now > max_lifetime + CLOCK_SKEW_SECONDS:
        raise Forbidden(
            f"a restricted key lives at most {int(max_lifetime)} seconds "
            "(RAGSAGE_RESTRICTED_KEY_MAX_LIFETIME)"
        )


def filters_claim(filters: SearchFilters) -> dict[str, Any]:
    """``filters`` as a token (and the API) writes them: the search request's own form."""
    return Filters.of(filters).model_dump(mode="json", exclude_none=True)


def _first(error: ValidationError) -> str:
    problem = error.errors()[0]
    where = ".".join(str(part) for part in problem["loc"]) or "the token"
    return f"{where}: {problem['msg']}"
