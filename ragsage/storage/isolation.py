"""How a transaction is pinned to one namespace before any store touches it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from ragsage.storage.config import PostgresConfig, safe_identifier
from ragsage.types import Scope

SCOPE_KEY = "ragsage.scope"


@dataclass(frozen=True, slots=True)
class Statement:
    """One SQL statement and its bound parameters, inspectable without a database."""

    sql: str
    parameters: Mapping[str, str] = field(default_factory=dict)


def isolation_preamble(config: PostgresConfig, scope: Scope) -> tuple[Statement, ...]:
    """The statements that pin a transaction to ``scope`` under Row-Level Security.

    Every setting is transaction-local (``set_config(..., true)``), so nothing
    survives into the next transaction on the same pooled connection.  The
    namespace and the setting name are bound parameters; only the role name,
    which SQL cannot bind, is interpolated, and it is checked at that spot.
    """
    statements = []
    if not config.uses_app_login:
        statements.append(Statement(f'SET LOCAL ROLE "{safe_identifier(config.app_role)}"'))
    statements.append(
        Statement(
            "SELECT set_config(:name, :value, true)",
            {"name": config.isolation_variable, "value": scope.namespace},
        )
    )
    statements.append(
        Statement(
            "SELECT set_config('statement_timeout', :value, true)",
            {"value": str(config.statement_timeout_ms)},
        )
    )
    return tuple(statements)


@asynccontextmanager
async def open_scoped_session(
    sessionmaker: async_sessionmaker[AsyncSession], config: PostgresConfig, scope: Scope
) -> AsyncIterator[AsyncSession]:
    """A session in one transaction pinned to ``scope``: committed on success.

    The scope is recorded on the session so a store handed this session can
    refuse to act for a different namespace.
    """
    async with sessionmaker() as session, session.begin():
        for statement in isolation_preamble(config, scope):
            await session.execute(text(statement.sql), dict(statement.parameters))
        session.info[SCOPE_KEY] = scope.namespace
        yield session
