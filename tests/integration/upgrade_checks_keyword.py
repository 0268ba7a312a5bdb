"""The upgrade checks of the keyword migrations (13 on), and the keyword calls they make.

The keyword function in its current form reads the term counts migration 29
keeps as chunks are written, so a schema holds it from 29 on.  The checks of 13
to 20 therefore look at what those steps left in the tables; what each step
made the function do is checked by ``keyword_chain`` on today's schema, which
the check of 22 brings the database up to first.
"""

from __future__ import annotations

from sqlalchemy import text

from ragsage.adapters.postgres import (
    Database,
)
from ragsage.core.scopes import Scope

from . import helpers

ACME, GLOBEX = Scope("acme"), Scope("globex")


# The keyword function called with every argument spelled out, so a check does
# not depend on what today's PgLexicalStore passes; a schema holds it from 22 on.
KEYWORD_SEARCH = (
    "ragsage_keyword_search({query}, false, 3, 500, 500, NULL, NULL, NULL, NULL, NULL, true, "
    "NULL, 3)"
)


async def keyword_hits(database: Database, scope: Scope, query: str) -> list[tuple[str, int]]:
    async with database.session(scope) as session:
        rows = await session.execute(
            text(f"SELECT document_id, ordinal FROM {KEYWORD_SEARCH.format(query=':q')}"),
            {"q": query},
        )
        return [(row[0], row[1]) for row in rows]


async def keyword_rank(database: Database, query: str) -> float:
    async with database.session(ACME) as session:
        rank = await session.scalar(
            text(f"SELECT rank FROM {KEYWORD_SEARCH.format(query=':q')}"), {"q": query}
        )
    return float(rank)


async def _keyword_v13(database: Database) -> None:
    # Each term counted once, in its namespace; since 29 by the write, and a search
    # reads the counts without adding any.
    counted = await helpers.term_counts(database, ACME)
    assert (counted["zirconium"], counted["ledger"]) == (1, 1)
    assert await keyword_hits(database, ACME, "zirconium ledger") == [("doc_v3", 0)]
    assert await helpers.term_counts(database, ACME) == counted
    assert await helpers.term_counts(database, GLOBEX) == {}
    assert await keyword_hits(database, GLOBEX, "zirconium") == []
    assert "zirconium" not in await helpers.term_counts(database, GLOBEX)


async def _keyword_v14(database: Database) -> None:
    # The cache still fills per namespace, and the function hands back the chunk itself.
    await _keyword_v13(database)
    async with database.session(ACME) as session:
        call = KEYWORD_SEARCH.format(query="'zirconium ledger'")
        rows = (
            await session.execute(
                text(f"SELECT document_id, ordinal, chunk_text, source, rank FROM {call}")
            )
        ).all()
    assert [tuple(row[:4]) for row in rows] == [("doc_v3", 0, "zirconium ledger", "v3.md")]
    assert rows[0][4] > 0


async def _keyword_v15(database: Database) -> None:
    # The app role may ask; a table of a few rows is left to autovacuum.
    assert await database.refresh_statistics() is False
    await _keyword_v14(database)


async def _keyword_v16(database: Database) -> None:
    await _keyword_v15(database)
    # The same chunk, the same words: in the text's order they count twice.
    assert await keyword_rank(database, "zirconium ledger") == 2 * await keyword_rank(
        database, "ledger zirconium"
    )


async def _pending_list_bounded(database: Database) -> None:
    # The keyword index of the day: over the column until 31, keyed by namespace after.
    async with database.owner_connection() as connection:
        options = await connection.scalar(
            text(
                "SELECT reloptions FROM pg_class WHERE relname IN "
                "('ragsage_chunks_lexical', 'ragsage_chunks_keyword') AND relkind = 'i'"
            )
        )
    assert options == ["gin_pending_list_limit=256"]


async def _forgotten_per_namespace(database: Database) -> None:
    """A namespace deletes its own term counts, and cannot touch another's."""
    for scope in (GLOBEX, ACME):
        async with database.session(scope) as session:
            await session.execute(text("DELETE FROM ragsage_term_stats"))
            if await session.scalar(text("SELECT to_regclass('ragsage_term_changes')")):
                await session.execute(text("DELETE FROM ragsage_term_changes"))
        assert bool(await helpers.term_counts(database, ACME)) is (scope == GLOBEX)


async def _keyword_v17(database: Database) -> None:
    await _keyword_v16(database)
    await _pending_list_bounded(database)


async def _keyword_v18(database: Database) -> None:
    await _keyword_v17(database)
    assert await helpers.term_counts(database, ACME)  # the v13 check found them counted
    await _forgotten_per_namespace(database)


async def _keyword_v19(database: Database) -> None:
    await _keyword_v18(database)
    async with database.session(ACME) as session:
        call = KEYWORD_SEARCH.format(query="'zirconium ledger'").replace("NULL, 3)", "NULL, 1)")
        rows = (
            await session.execute(
                text(f"SELECT document_id, ordinal, chunk_text, rank FROM {call}")
            )
        ).all()
    assert [tuple(row[:3]) for row in rows] == [("doc_v3", 0, "zirconium ledger")]
    assert rows[0][3] > 0
    assert await keyword_hits(database, GLOBEX, "zirconium") == []


async def _keyword_v20(database: Database) -> None:
    await _keyword_v19(database)
    # The old function answers servers from before 19 with the new one's rows and ranks.
    async with database.session(ACME) as session:
        old = (
            await session.execute(
                text(
                    "SELECT document_id, ordinal, chunk_text, rank FROM ragsage_lexical_search("
                    "'zirconium ledger', false, 3, 500, 500, NULL, NULL, NULL, NULL, NULL)"
                )
            )
        ).all()
        call = KEYWORD_SEARCH.format(query="'zirconium ledger'")
        new = (
            await session.execute(
                text(f"SELECT document_id, ordinal, chunk_text, rank FROM {call}")
            )
        ).all()
    assert old == new and [tuple(row[:3]) for row in old] == [("doc_v3", 0, "zirconium ledger")]
    async with database.owner_connection() as connection:
        languages = set(
            await connection.scalars(
                text(
                    "SELECT l.lanname FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang "
                    "WHERE p.proname = 'ragsage_lexical_search'"
                )
            )
        )
    assert languages == {"sql"}  # a call of the new function, no ranking of its own


async def keyword_chain(database: Database) -> None:
    """What migrations 13 to 20 made keyword search do, on a schema that holds its function."""
    await _keyword_v20(database)


async def _seeded_chunk_survives(database: Database) -> None:
    async with database.session(ACME) as session:
        texts = list(await session.scalars(text("SELECT text FROM ragsage_chunks")))
    assert "zirconium ledger" in texts
    async with database.session(GLOBEX) as session:
        assert list(await session.scalars(text("SELECT text FROM ragsage_chunks"))) == []


async def _keyword_function_absent(database: Database) -> None:
    async with database.owner_connection() as connection:
        present = await connection.scalar(
            text(
                "SELECT to_regprocedure('ragsage_keyword_search(text, boolean, integer, "
                "integer, integer, text[], text[], jsonb, timestamptz, timestamptz, boolean, "
                "integer, integer)') IS NOT NULL"
            )
        )
    assert present is False  # its current form needs migration 22's columns


async def check_v13(database: Database) -> None:
    # The counts table starts empty and each namespace sees only its own rows.
    await _seeded_chunk_survives(database)
    await _keyword_function_absent(database)
    assert await helpers.term_counts(database, ACME) == {}
    async with database.owner_connection() as connection:
        await connection.execute(
            text(
                "INSERT INTO ragsage_term_stats (namespace, generation, term, chunks, cap) "
                "VALUES ('acme', 1, 'zirconium', 1, 501)"
            )
        )
    assert await helpers.term_counts(database, ACME) == {"zirconium": 1}
    assert await helpers.term_counts(database, GLOBEX) == {}


async def check_v14(database: Database) -> None:
    await check_v13(database)


async def check_v15(database: Database) -> None:
    # The app role may ask; a table of a few rows is left to autovacuum.
    assert await database.refresh_statistics() is False
    await check_v14(database)


async def check_v16(database: Database) -> None:
    await check_v15(database)


async def check_v17(database: Database) -> None:
    await check_v16(database)
    await _pending_list_bounded(database)


async def check_v18(database: Database) -> None:
    await check_v17(database)
    await _forgotten_per_namespace(database)


async def check_v19(database: Database) -> None:
    await check_v18(database)


async def check_v20(database: Database) -> None:
    await check_v19(database)
