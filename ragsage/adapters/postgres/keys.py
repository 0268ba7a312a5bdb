"""API keys: each bound to one namespace and one role, stored only as a hash.

A key looks like ``rsk_<id>_<secret>_<check>``.  The fixed ``rsk_`` prefix lets
secret scanners recognise a leaked key; the id names the key in listings and
revocations without revealing it; the secret is 32 random bytes, so a plain
SHA-256 is the right hash (slow password hashes protect guessable secrets,
which these are not) and lookups stay one index probe.  The check is a MAC of
the rest under the operator's sealing key, so the API refuses a forged or
random key without asking the database (:func:`precheck`); keys made before
it, or while no sealing key is set, have none, and are looked up under the
API's failed-key budget instead.

A delegate key's signing secret is stored sealed with the operator's key
(migration 36), and :func:`find_signer_on` opens it in the process that
verifies restricted keys.
"""

from __future__ import annotations

import hmac
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from ragsage.adapters.postgres.namespaces import pin_owner
from ragsage.adapters.postgres.sessions import namespace_of
from ragsage.core.errors import ConfigurationError, InvalidRequest
from ragsage.core.keys import (
    NO_SEALING_KEY,
    KeyInfo,
    NewKey,
    Principal,
    Role,
    Signer,
    hash_key,
    key_id_of,
    new_key,
    new_signing_secret,
    well_formed,
)
from ragsage.core.scopes import Scope, check_principals
from ragsage.core.sealing import Seals

if TYPE_CHECKING:
    from ragsage.adapters.postgres.database import Database


async def create_key(
    session: AsyncSession,
    scope: Scope,
    role: Role,
    name: str = "",
    principals: Sequence[str] = (),
    sealer: Seals | None = None,
) -> NewKey:
    """Store a new key for ``scope`` and return it — the only time it is visible.

    ``principals`` binds the key: it reads only documents open to the whole
    namespace or listing one of them.  An admin key acts on the whole
    namespace (re-index, usage), so it cannot be bound.  A delegate key gets a
    signing secret as well, for the restricted keys it issues, stored sealed:
    without ``sealer`` (the operator's sealing key) one is refused.  With it,
    the key carries the check that lets the API refuse forgeries unread.
    """
    if len(name) > 200:
        raise InvalidRequest("a key name is at most 200 characters")
    bound = sorted(check_principals(list(principals), "a key's principals"))
    if bound and role is Role.ADMIN:
        raise InvalidRequest(
            "an admin key acts on the whole namespace and cannot be bound to principals; "
            "bind a read or write key"
        )
    if role is Role.DELEGATE and sealer is None:
        raise ConfigurationError(NO_SEALING_KEY)
    key_id, key = new_key(sealer)
    secret = new_signing_secret() if role is Role.DELEGATE else ""
    await session.execute(
        text(
            "INSERT INTO ragsage_api_keys "
            "(namespace, id, key_hash, role, name, principals, sealed_signing_secret) "
            "VALUES (:namespace, :id, :hash, :role, :name, :principals, :secret)"
        ),
        {
            "namespace": scope.namespace,
            "id": key_id,
            "hash": hash_key(key),
            "role": role.value,
            "name": name,
            "principals": bound,
            "secret": sealer.seal(secret) if secret and sealer is not None else None,
        },
    )
    return NewKey(key_id, key, secret)


async def rotate_signing_secret(
    session: AsyncSession, key_id: str, sealer: Seals | None
) -> str | None:
    """Give a live delegate key of the session's namespace a new signing secret.

    Restricted keys signed with the old one are refused once each API
    process has re-read the parent (``RAGSAGE_RESTRICTED_KEY_RECHECK``).
    None if there is no such live delegate key.  The new secret is stored
    sealed, and a plaintext one left from before migration 36 goes with it.
    """
    if sealer is None:
        raise ConfigurationError(NO_SEALING_KEY)
    secret = new_signing_secret()
    row = (
        await session.execute(
            text(
                "UPDATE ragsage_api_keys SET sealed_signing_secret = :sealed, "
                "signing_secret = NULL "
                "WHERE namespace = :namespace AND id = :id AND role = 'delegate' "
                "AND revoked_at IS NULL RETURNING id"
            ),
            {"namespace": namespace_of(session), "id": key_id, "sealed": sealer.seal(secret)},
        )
    ).first()
    return secret if row is not None else None


async def revoke_key(session: AsyncSession, key_id: str) -> bool:
    """Revoke a key of the session's namespace; False if it has no such live key."""
    row = (
        await session.execute(
            text(
                "UPDATE ragsage_api_keys SET revoked_at = now() "
                "WHERE namespace = :namespace AND id = :id AND revoked_at IS NULL RETURNING id"
            ),
            {"namespace": namespace_of(session), "id": key_id},
        )
    ).first()
    return row is not None


async def list_keys(session: AsyncSession) -> list[KeyInfo]:
    rows = await session.execute(
        text(
            "SELECT id, role, name, created_at, revoked_at, principals FROM ragsage_api_keys "
            "WHERE namespace = :namespace ORDER BY created_at"
        ),
        {"namespace": namespace_of(session)},
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
    if not hmac.compare_digest(str(row[1]), key_id_of(key) or ""):
        return None
    bound = frozenset(str(name) for name in row[3] or ())
    scope = Scope(str(row[0]), bound or None)
    return Principal(scope=scope, key_id=str(row[1]), role=Role(str(row[2])))


async def find_signer_on(
    database: Database, namespace: str, key_id: str, sealer: Seals
) -> Signer | None:
    """The live delegate key ``key_id`` of ``namespace``, with its signing secret; else None.

    The database hands over the secret sealed; it is opened here, in the
    process that verifies restricted keys, and nowhere else.
    """
    rows = await database.read(
        None,
        [
            (
                "SELECT principals, sealed_secret FROM ragsage_find_signer(%(namespace)s, %(id)s)",
                {"namespace": namespace, "id": key_id},
            )
        ],
    )
    if not rows:
        return None
    bound = frozenset(str(name) for name in rows[0][0] or ())
    secret = sealer.open(str(rows[0][1]), "a delegate key's signing secret")
    return Signer(namespace, key_id, bound or None, secret)


async def migrate_and_seal(database: Database, sealer: Seals | None) -> tuple[int, int]:
    """Migrate, then seal the signing secrets stored in plaintext (SQL never sees the
    sealing key, so a migration cannot): the schema's version and how many were sealed."""
    version = await database.migrate()
    sealed = await seal_signing_secrets(database, sealer) if sealer is not None else 0
    return version, sealed


async def seal_signing_secrets(database: Database, sealer: Seals) -> int:
    """Seal every delegate key's signing secret still stored in plaintext; how many were.

    Secrets made before migration 36 were stored in plaintext, and SQL never
    sees the sealing key, so the application seals them (``ragsage migrate``
    and ``ragsage up`` call this).  The owner reads them as ``ragsage_system``,
    the one role whose policy sees every namespace's keys, then writes each
    pinned to its own namespace; a secret changed meanwhile is left for the next run.
    """
    async with database.owner_connection() as owner:
        await owner.exec_driver_sql("SET LOCAL ROLE ragsage_system")
        found = (
            await owner.execute(
                text(
                    "SELECT namespace, id, signing_secret FROM ragsage_api_keys "
                    "WHERE signing_secret IS NOT NULL ORDER BY namespace, id"
                )
            )
        ).all()
        await owner.exec_driver_sql("RESET ROLE")
        sealed = 0
        for namespace, key_id, secret in found:
            await pin_owner(owner, database.config.isolation_variable, Scope(str(namespace)))
            done = await owner.execute(
                text(
                    "UPDATE ragsage_api_keys SET sealed_signing_secret = :sealed, "
                    "signing_secret = NULL WHERE namespace = :namespace AND id = :id "
                    "AND signing_secret = :secret"
                ),
                {
                    "sealed": sealer.seal(str(secret)),
                    "namespace": namespace,
                    "id": key_id,
                    "secret": secret,
                },
            )
            sealed += done.rowcount
        return sealed
