"""Keyword term counts kept by the writers (storage migration 29), on a real Postgres.

Every write of a document's chunks keeps the namespace's counts exact, two
writers of one namespace never wait for each other over them, and a search only
reads: it runs whole in a read-only database.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from sqlalchemy import text

from ragsage.adapters.postgres import Database, PostgresConfig
from ragsage.core.scopes import Scope
from ragsage.query.options import RetrievalOptions

from . import helpers

ACME, GLOBEX = Scope("acme"), Scope("globex")
DOCUMENTS = sorted((Path(__file__).parents[1] / "fixtures/eval/qa-tiny/documents").rglob("*.*"))

_KEPT = (
    "SELECT generation, term, sum(chunks) FROM (SELECT namespace, generation, term, chunks "
    "FROM ragsage_term_stats UNION ALL SELECT namespace, generation, term, chunks "
    "FROM ragsage_term_changes) x WHERE namespace = :ns GROUP BY 1, 2 HAVING sum(chunks) <> 0"
)
_RECOUNTED = (
    "SELECT c.generation, w.term, count(*) FROM ragsage_chunks c, "
    "unnest(tsvector_to_array(c.lexical) || ARRAY['']) AS w(term) "
    "WHERE c.namespace = :ns GROUP BY 1, 2"
)


async def _counts(db: Database, scope: Scope) -> tuple[dict[tuple[int, str], int], ...]:
    """The namespace's kept counts, and the same counted afresh from its chunks."""
    async with db.owner_connection() as connection:
        found = []
        for sql in (_KEPT, _RECOUNTED):
            rows = await connection.execute(text(sql), {"ns": scope.namespace})
            found.append({(int(g), str(t)): int(n) for g, t, n in rows})
    return tuple(found)


async def _pending(db: Database) -> int:
    async with db.owner_connection() as connection:
        return int(await connection.scalar(text("SELECT count(*) FROM ragsage_term_changes")))


async def test_the_kept_counts_match_the_chunks_after_writes_rewrites_and_deletes(
    db: Database,
) -> None:
    kit = helpers.kit()
    for path in DOCUMENTS:
        await helpers.ingest(db, kit, ACME, path.read_text(), path.name, chunk_size=60)
    await helpers.ingest(db, kit, GLOBEX, DOCUMENTS[0].read_text(), "other.md")
    await helpers.ingest(db, kit, ACME, "# Zoo\n\nThe wombat sleeps. " * 40, "zoo.md")
    # The same file again, changed and cut otherwise: its old rows' terms go.
    changed = "# Zoo\n\nThe quokka smiles. " * 30
    replaced = await helpers.ingest(db, kit, ACME, changed, "zoo.md", chunk_size=30)
    kept, recounted = await _counts(db, ACME)
    assert kept == recounted
    assert kept[(1, "quokka")] > 1 and (1, "wombat") not in kept
    assert kept[(1, "")] == await helpers.engine(db, kit).count(ACME)
    # Deleting a document takes its counts with it, in its namespace only.
    before_globex = await _counts(db, GLOBEX)
    await helpers.stores(db, kit).documents.delete(ACME, replaced.document.id)
    kept, recounted = await _counts(db, ACME)
    assert kept == recounted and (1, "quokka") not in kept
    assert await _counts(db, GLOBEX) == before_globex
    assert before_globex[0] == before_globex[1]


async def test_a_retired_generation_stays_counted_and_a_discarded_one_goes_whole(
    db: Database,
) -> None:
    from ragsage.adapters.postgres.jobs import reindex

    kit = helpers.kit()
    written = [
        await helpers.ingest(db, kit, ACME, path.read_text(), path.name) for path in DOCUMENTS[:3]
    ]
    async with db.session(ACME) as session:
        await session.execute(
            text(
                "INSERT INTO ragsage_generations (namespace, id, embedding_model, "
                "embedding_dim, state) SELECT namespace, 2, embedding_model, embedding_dim, "
                "'building' FROM ragsage_generations WHERE id = 1"
            )
        )
        columns = "document_id, ordinal, text, embed_text, source, embedding_model, "
        columns += "embedding_dim, embedding, lexical"
        await session.execute(
            text(
                f"INSERT INTO ragsage_chunks (namespace, generation, {columns}) "
                f"SELECT namespace, 2, {columns} FROM ragsage_chunks WHERE generation = 1"
            )
        )
        # The first generation retires; a rollback could make it active again.
        await session.execute(text("UPDATE ragsage_generations SET state = 'retired' WHERE id = 1"))
    # A deleted document leaves both generations, and both counts.
    await helpers.stores(db, kit).documents.delete(ACME, written[0].document.id)
    kept, recounted = await _counts(db, ACME)
    assert kept == recounted and {g for g, _ in kept} == {1, 2}
    async with db.session(ACME) as session:
        await reindex._discard(session, 2)
    kept, recounted = await _counts(db, ACME)
    assert kept == recounted and {g for g, _ in kept} == {1}


async def test_a_writer_never_waits_for_another_over_the_counts(db: Database) -> None:
    kit = helpers.kit()
    await helpers.ingest(db, kit, ACME, DOCUMENTS[0].read_text(), DOCUMENTS[0].name)
    async with db.session(ACME) as holder:
        # An open write of the namespace that took the fold lock and keeps it.
        await holder.execute(
            text(
                "SELECT pg_try_advisory_xact_lock(hashtext('ragsage_term_stats'), hashtext('acme'))"
            )
        )
        for path in DOCUMENTS[1:3]:
            text_ = path.read_text()
            await asyncio.wait_for(helpers.ingest(db, kit, ACME, text_, path.name), 30)
        # Those writers left their counts pending, and searches count them already.
        assert await _pending(db) > 0
        kept, recounted = await _counts(db, ACME)
        assert kept == recounted
    # The next writer to hold the lock folds everything pending.
    await helpers.ingest(db, kit, ACME, DOCUMENTS[3].read_text(), DOCUMENTS[3].name)
    assert await _pending(db) == 0
    kept, recounted = await _counts(db, ACME)
    assert kept == recounted


async def test_searches_run_whole_in_a_read_only_database(
    db: Database, pg_config: PostgresConfig
) -> None:
    kit = helpers.kit()
    for path in DOCUMENTS:
        await helpers.ingest(db, kit, ACME, path.read_text(), path.name, chunk_size=60)
    before = await _counts(db, ACME)
    async with db.owner_connection() as connection:
        name = await connection.scalar(text("SELECT current_database()"))
        await connection.execute(
            text(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
        )
    # A new pool: every connection from here on starts its transactions read-only,
    # as a hot standby's do.  A search that wrote anything would fail.
    reader = Database(pg_config)
    try:
        engine = helpers.engine(reader, kit)
        answered = 0
        for query in ("refund policy", "the of and", "deploy hotel euros", "zzxq unknownterm"):
            for alpha in (0.0, 0.3, 1.0):  # keyword only, hybrid, dense only
                found = await engine.search(ACME, query, RetrievalOptions(hybrid_alpha=alpha))
                answered += bool(found.hits)
        assert answered >= 6
        async with reader.session(ACME) as session:
            readonly = await session.scalar(text("SHOW transaction_read_only"))
        assert readonly == "on"
    finally:
        await reader.dispose()
    assert await _counts(db, ACME) == before
