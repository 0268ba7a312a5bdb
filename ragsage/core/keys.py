"""Who a request acts as, and the keys it presents: roles, principals, delegate signers.

The types every layer speaks of; storing keys is the Postgres adapter's work
(:mod:`ragsage.adapters.postgres.keys`), deciding what they may do the
management services' (:mod:`ragsage.management.keys`).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from ragsage.core.filters import SearchFilters
from ragsage.core.scopes import Scope
from ragsage.core.sealing import Seals

NO_SEALING_KEY = (
    "a delegate key's signing secret is stored sealed, and RAGSAGE_SEALING_KEYS is not set "
    "(`ragsage webhooks new-operator-key` makes a key)"
)
PREFIX = "rsk_"
SECRET_PREFIX = "rss_"
_SHAPE = re.compile(r"^rsk_([a-z0-9]{10})_([A-Za-z0-9_-]{43})(?:_([A-Za-z0-9_-]{22}))?$")


class KeyCheck(StrEnum):
    """What a presented key's shape and check say before any lookup."""

    # Not a ragsage key at all, or a check that no sealing key made.
    REFUSED = "refused"
    # Carries a check one of the sealing keys made: the server issued it.
    ISSUED = "issued"
    # A well-formed key with no check to make (an older key, or no sealing key here).
    UNCHECKED = "unchecked"


class Role(StrEnum):
    """What a key may do; each role includes the ones before it.

    A delegate key does what a write key does and also signs restricted keys
    (:mod:`ragsage.management.restricted_keys`); only an admin acts on the whole
    namespace (re-index, usage).
    """

    READ = "read"
    WRITE = "write"
    DELEGATE = "delegate"
    ADMIN = "admin"

    def allows(self, needed: Role) -> bool:
        return _ORDER.index(self) >= _ORDER.index(needed)


_ORDER = (Role.READ, Role.WRITE, Role.DELEGATE, Role.ADMIN)


@dataclass(frozen=True, slots=True)
class Restriction:
    """What a restricted key adds to the principal it acts as.

    ``token_id`` tells one restricted key from its siblings (a digest of the
    token, never the token); ``subject`` is the end user the product named.
    """

    expires_at: datetime
    token_id: str
    subject: str = ""
    filters: SearchFilters | None = None


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a request acts as: the key's namespace, role and (if bound) principals.

    ``scope.principals`` is None for a key bound to no principal, which reads
    the whole namespace.  A restricted key acts as a principal whose
    ``key_id`` is its parent's and whose ``restriction`` says what else it is.
    """

    scope: Scope
    key_id: str
    role: Role
    restriction: Restriction | None = None

    @property
    def filters(self) -> SearchFilters | None:
        """The filters a restricted key applies to everything it reads; None for others."""
        return self.restriction.filters if self.restriction is not None else None

    @property
    def holder(self) -> str:
        """Whose share of per-key allowances this is: the key, or one restricted key."""
        if self.restriction is None:
            return self.key_id
        return f"{self.key_id}.{self.restriction.token_id}"

    @property
    def label(self) -> str:
        """How logs name the key: its id, or its parent's id and which restricted key."""
        if self.restriction is None:
            return self.key_id
        return f"{self.key_id}/restricted/{self.restriction.token_id}"


@dataclass(frozen=True, slots=True)
class KeyInfo:
    """A key as listings show it; the secret is never stored, so never shown."""

    id: str
    role: Role
    name: str
    created_at: datetime
    revoked_at: datetime | None
    principals: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Signer:
    """A live delegate key, as the restricted keys issued under it are checked against it."""

    namespace: str
    key_id: str
    # What it may grant: None for a parent bound to no principal.
    principals: frozenset[str] | None
    secret: str = field(repr=False)


def hash_key(key: str) -> str:
    """The stored form of a key."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def well_formed(key: str) -> bool:
    """True if ``key`` has the shape of a ragsage key (checked before any lookup)."""
    return _SHAPE.fullmatch(key) is not None


def key_id_of(key: str) -> str | None:
    """The id part of a well-formed key, or None."""
    shape = _SHAPE.fullmatch(key)
    return shape.group(1) if shape is not None else None


def precheck(key: str, sealer: Seals | None) -> KeyCheck:
    """What can be told of ``key`` without the database: its shape, and its check."""
    shape = _SHAPE.fullmatch(key)
    if shape is None:
        return KeyCheck.REFUSED
    check = shape.group(3)
    if check is None or sealer is None:
        return KeyCheck.UNCHECKED
    body = key[: -len(check) - 1]
    return KeyCheck.ISSUED if sealer.checks(body, check) else KeyCheck.REFUSED


def new_key(sealer: Seals | None = None) -> tuple[str, str]:
    """A fresh (key id, full key), carrying the sealing key's check when there is one."""
    key_id = "".join(secrets.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(10))
    key = f"{PREFIX}{key_id}_{secrets.token_urlsafe(32)}"
    return key_id, key if sealer is None else f"{key}_{sealer.check(key)}"


@dataclass(frozen=True, slots=True)
class NewKey:
    """A key just created: the only time its secret parts are visible."""

    id: str
    key: str = field(repr=False)
    # A delegate key's secret for signing restricted keys; empty for other roles.
    signing_secret: str = field(default="", repr=False)


def new_signing_secret() -> str:
    """A fresh HMAC key for restricted keys: 32 random bytes, marked for secret scanners."""
    return f"{SECRET_PREFIX}{secrets.token_urlsafe(32)}"
