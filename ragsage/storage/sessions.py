"""How a store gets a session: one it was handed, or a fresh scoped one per call."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from sqlalchemy.ext.asyncio import AsyncSession

from ragsage.errors import StorageError
from ragsage.storage.isolation import SCOPE_KEY
from ragsage.types import Scope

if TYPE_CHECKING:
    from ragsage.storage.database import Database


@asynccontextmanager
async def scoped(target: Database | AsyncSession, scope: Scope) -> AsyncIterator[AsyncSession]:
    """A session for ``scope``.

    A store bound to a session (to share one transaction with other writes)
    uses it, after checking that it was opened for the same namespace; a store
    bound to a :class:`Database` opens a short transaction per call, which is
    what lets dense and lexical search run in parallel on separate connections.
    """
    if isinstance(target, AsyncSession):
        pinned = target.info.get(SCOPE_KEY)
        if pinned != scope.namespace:
            raise StorageError(
                f"a session scoped to {pinned!r} cannot serve namespace {scope.namespace!r}"
            )
        yield target
        return
    async with target.session(scope) as session:
        yield session
