"""API keys: each bound to one namespace and one role, stored only as a hash.

A key looks like ``rsk_<id>_<secret>``.  The fixed ``rsk_`` prefix lets secret
scanners recognise a leaked key; the id names the key in listings and
revocations without revealing it; the secret is 32 random bytes, so a plain
SHA-256 is the right hash (slow password hashes protect guessable secrets,
which these are not) and lookups stay one index probe.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from ragsage.core.errors import InvalidRequest
from ragsage.core.types import Scope, check_principals

if TYPE_CHECKING:
    from ragsage.adapters.postgres.database import Database

PREFIX = "rsk_"
_SHAPE = re.compile(r"^rsk_([a-z0-9]{10})_([A-Za-z0-9_-]{43})$")


class Role(StrEnum):
    """What a key may do; each role includes the ones before it."""

    READ = "read"
    WRITE = "write"
    ADMIN = "admin"

    def allows(self, needed: Role) -> bool:
        order = [Role.READ, Role.WRITE, Role.ADMIN]
        return order.index(self) >= order.index(needed)


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a request acts as: the key's namespace, role and (if bound) principals.

    ``scope.principals`` is None for a key bound to no principal, which reads
    the whole namespace.
    """

    scope: Scope
    key_id: str
    role: Role


@dataclass(frozen=True, slots=True)
class KeyInfo:
    """A key as listings show it; the secret is never stored, so never shown."""

    id: str
    role: Role
    name: str
    created_at: datetime
    revoked_at: datetime | None
    principals: tuple[str, ...] = ()


def hash_key(key: str) -> str:
    """The stored form of a key."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def well_formed(key: str) -> bool:
    """True if ``key`` has the shape of a ragsage key (checked before any lookup)."""
    return _SHAPE.fullmatch(key) is not None


def new_key() -> tuple[str, str]:
    """A fresh (key id, full key)."""
    key_id = "".join(secrets.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(10))
    return key_id, f"{PREFIX}{key_id}_{secrets.token_urlsafe(32)}"


async def create_key(
    session: AsyncSession,
    scope: Scope,
    role: Role,
    name: str = "",
    principals: Sequence[str] = (),
) -> str:
    """Store a new key for ``scope`` and return it — the only time it is visible.

    ``principals`` binds the key: it reads only documents open to the whole
    namespace or listing one of them.  An admin key acts on the whole
    namespace (re-index, usage), so it cannot be bound.
    """
    if len(name) > 200:
        raise InvalidRequest("a key name is at most 200 characters")
    bound = sorted(check_principals(list(principals), "a key's principals"))
    if bound and role is Role.ADMIN:
        raise InvalidRequest(
            "an admin key acts on the whole namespace and cannot be bound to principals; "
            "bind a read or write key"
        )
    key_id, key = new_key()
    await session.execute(
        text(
            "INSERT INTO ragsage_api_keys (namespace, id, key_hash, role, name, principals) "
            "VALUES (:namespace, :id, :hash, :role, :name, :principals)"
        ),
        {
            "namespace": scope.namespace,
            "id": key_id,
            "hash": hash_key(key),
            "role": role.value,
            "name": name,
            "principals": bound,
        },
    )
    return key


async def revoke_key(session: AsyncSession, key_id: str) -> bool:
    """Revoke a key of the session's namespace; False if it has no such live key."""
    row = (
        await session.execute(
            text(
                "UPDATE ragsage_api_keys SET revoked_at = now() "
                "WHERE id = :id AND revoked_at IS NULL RETURNING id"
            ),
            {"id": key_id},
        )
    ).first()
    return row is not None


async def list_keys(session: AsyncSession) -> list[KeyInfo]:
    rows = await session.execute(
        text(
            "SELECT id, role, name, created_at, revoked_at, principals FROM ragsage_api_keys "
            "ORDER BY created_at"
        )
    )
    return [KeyInfo(r[0], Role(r[1]), r[2], r[3], r[4], tuple(r[5] or ())) for r in rows]


async def authenticate(session: AsyncSession, key: str) -> Principal | None:
    """The principal of a live key, or None; ``session`` is a system session."""
    if not well_formed(key):
        return None
    row = (
        await session.execute(
            text("SELECT namespace, key_id, role, principals FROM ragsage_find_api_key(:hash)"),
            {"hash": hash_key(key)},
        )
    ).first()
    return _principal(key, row)


async def authenticate_on(database: Database, key: str) -> Principal | None:
    """:func:`authenticate` in one message, without the ORM (every request's check)."""
    if not well_formed(key):
        return None
    rows = await database.read(
        None,
        [
            (
                "SELECT namespace, key_id, role, principals FROM ragsage_find_api_key(%(hash)s)",
                {"hash": hash_key(key)},
            )
        ],
    )
    return _principal(key, rows[0] if rows else None)


def _principal(key: str, row: Sequence[Any] | None) -> Principal | None:
    if row is None:
        return None
    # The hash matched in SQL; compare the id too, in constant time, as a guard
    # against a row that is not the one the key names.
    if not hmac.compare_digest(str(row[1]), _SHAPE.fullmatch(key).group(1)):  # type: ignore[union-attr]
        return None
    bound = frozenset(str(name) for name in row[3] or ())
    scope = Scope(str(row[0]), bound or None)
    return Principal(scope=scope, key_id=str(row[1]), role=Role(str(row[2])))
