"""What each migration must leave behind: a seed of the version before it, and a check.

``UPGRADES[v]`` is (seed, check): the seed writes rows at version ``v - 1``, the
check runs at ``v``.  Checks chain: each runs its predecessor's too.
"""

from __future__ import annotations

import dataclasses

import pytest
from sqlalchemy import text

from ragsage.adapters.postgres import (
    Database,
    PgVectorStore,
)
from ragsage.adapters.postgres.graphs import maintain_graphs
from ragsage.adapters.postgres.jobs import page_store
from ragsage.core.errors import ConfigurationError
from ragsage.core.geometry import PagePositions
from ragsage.core.pages import Page

from . import helpers
from .upgrade_checks_keyword import (
    ACME,
    GLOBEX,
    check_v13,
    check_v14,
    check_v15,
    check_v16,
    check_v17,
    check_v18,
    check_v19,
    check_v20,
    keyword_chain,
    keyword_hits,
)

# The vector every raw seed row carries, at the width version 1 stored.
_SEED_VECTOR = "[" + ",".join(["0.0625"] * 256) + "]"


async def _write_old_chunk(database: Database, ordinal: int, text_: str, embedded: str) -> None:
    """A chunk of doc_v3 as a writer of an earlier version sends it: no keyword column."""
    async with database.session(ACME) as session:
        await session.execute(
            text(
                "INSERT INTO ragsage_chunks (namespace, generation, document_id, ordinal, text, "
                "embed_text, source, embedding_model, embedding_dim, embedding) VALUES "
                "('acme', 1, 'doc_v3', :ordinal, :text, :embedded, 'v3.md', "
                "'ragsage-hashing-256', 256, CAST(:v AS vector))"
            ),
            {"ordinal": ordinal, "text": text_, "embedded": embedded, "v": _SEED_VECTOR},
        )


async def _seed_v1(database: Database) -> None:
    """Rows as a version-1 install wrote them, by raw SQL (today's code writes v2 rows)."""
    vector = "[" + ",".join(["0.0625"] * 256) + "]"
    async with database.session(ACME) as session:
        await session.execute(
            text(
                "INSERT INTO ragsage_generations VALUES "
                "('acme', 1, 'ragsage-hashing-256', 256, 'active', now(), now())"
            )
        )
        await session.execute(
            text(
                "INSERT INTO ragsage_documents (namespace, id, content_hash, title, source) "
                "VALUES ('acme', 'doc_old', 'hash-old', 'Old', 'old.md')"
            )
        )
        await session.execute(
            text(
                "INSERT INTO ragsage_chunks (namespace, generation, document_id, ordinal, text, "
                "embed_text, source, embedding_model, embedding_dim, embedding) VALUES "
                "('acme', 1, 'doc_old', 0, 'legacy anvils', 'legacy anvils', 'old.md', "
                "'ragsage-hashing-256', 256, CAST(:v AS vector))"
            ),
            {"v": vector},
        )


async def _check_v2(database: Database) -> None:
    kit = helpers.kit()
    pg = helpers.stores(database, kit)
    document = await pg.documents.get(ACME, "doc_old")
    assert document is not None and document.source == "old.md"
    async with database.session(ACME) as session:
        matched = await session.scalar(
            text("SELECT count(*) FROM ragsage_chunks WHERE lexical @@ 'anvil'::tsquery")
        )
        assert matched == 1
        row = (
            await session.execute(
                text("SELECT external_id, filename, status FROM ragsage_documents")
            )
        ).one()
    assert tuple(row) == ("old.md", "old.md", "ready")


async def _seed_v2(database: Database) -> None:
    """A version-2 install with an upload and its job, written as that version wrote them."""
    from ragsage.core.identity import legacy_document_id_for

    # Ids then hashed the name alone; uploads must keep finding such documents.
    legacy_id = legacy_document_id_for("v2.md")
    async with database.session(ACME) as session:
        for statement in (
            "INSERT INTO ragsage_blobs (namespace, content_hash, data, size_bytes) "
            "VALUES ('acme', 'hash-v2', '# Version two', 13)",
            "INSERT INTO ragsage_documents (namespace, id, external_id, content_hash, title, "
            "source, filename, status) VALUES ('acme', :id, 'v2.md', 'hash-v2', 'v2.md', "
            "'v2.md', 'v2.md', 'queued')",
            "INSERT INTO ragsage_jobs (namespace, id, document_id, kind, state, content_hash, "
            "filename) VALUES ('acme', gen_random_uuid(), :id, 'ingest', 'queued', "
            "'hash-v2', 'v2.md')",
        ):
            await session.execute(text(statement), {"id": legacy_id})


async def _check_v3(database: Database) -> None:
    from ragsage.adapters.postgres.jobs import store
    from ragsage.adapters.postgres.keys import authenticate, create_key
    from ragsage.core.keys import Role

    await database.migrate()  # today's job and key code reads the latest schema
    async with database.session(ACME) as session:
        (job,) = await store.list_jobs(session)
        assert job.filename == "v2.md" and job.state.value == "queued"
        key = (await create_key(session, ACME, Role.READ)).key
    async with database.system_session() as session:
        principal = await authenticate(session, key)
    assert principal is not None and principal.scope == ACME


async def _seed_v3(database: Database) -> None:
    vector = "[" + ",".join(["0.0625"] * 256) + "]"
    async with database.session(ACME) as session:
        for statement in (
            "INSERT INTO ragsage_generations VALUES "
            "('acme', 1, 'ragsage-hashing-256', 256, 'active', now(), now())",
            "INSERT INTO ragsage_documents (namespace, id, content_hash, title, source, "
            "external_id) VALUES ('acme', 'doc_v3', 'hash-v3', 'V3', 'v3.md', 'v3.md')",
            "INSERT INTO ragsage_chunks (namespace, generation, document_id, ordinal, text, "
            "embed_text, source, embedding_model, embedding_dim, embedding) VALUES "
            "('acme', 1, 'doc_v3', 0, 'zirconium ledger', 'zirconium ledger', 'v3.md', "
            "'ragsage-hashing-256', 256, CAST(:v AS vector))",
        ):
            await session.execute(text(statement), {"v": vector})


async def _check_v4(database: Database) -> None:
    # What 4 leaves of its day: the system role reads chunks and generations.
    async with database.owner_connection() as connection:
        policies = set(
            await connection.scalars(
                text("SELECT policyname FROM pg_policies WHERE roles @> '{ragsage_system}'")
            )
        )
    assert {"ragsage_chunks_system", "ragsage_generations_system"} <= policies
    # The keyword search those reads are for, once the schema is today's.
    await database.migrate()
    assert await keyword_hits(database, ACME, "zirconium") == [("doc_v3", 0)]
    assert await keyword_hits(database, GLOBEX, "zirconium") == []


async def _check_v5(database: Database) -> None:
    # Plain SQL: today's reindex_status.status reads columns later versions added.
    async with database.session(ACME) as session:
        row = (
            await session.execute(
                text(
                    "SELECT g.embedder, g.embedding_model, g.state, "
                    "(SELECT count(*) FROM ragsage_chunks c WHERE c.generation = g.id) "
                    "FROM ragsage_generations g"
                )
            )
        ).one()
    assert tuple(row) == ("hashing", "ragsage-hashing-256", "active", 1)
    await _check_v4(database)


async def _check_v6(database: Database) -> None:
    async with database.owner_connection() as connection:
        storage = dict(
            (
                await connection.execute(
                    text(
                        "SELECT attname, attstorage FROM pg_attribute "
                        "WHERE attrelid = 'ragsage_chunks'::regclass "
                        "AND attname IN ('embedding', 'lexical')"
                    )
                )
            ).all()
        )
        options = await connection.scalar(
            text("SELECT reloptions FROM pg_class WHERE oid = 'ragsage_chunks'::regclass")
        )
    assert storage == {"embedding": "m", "lexical": "m"}  # kept in the row
    assert "toast_tuple_target=8160" in options
    await _check_v5(database)


async def _check_v7(database: Database) -> None:
    # Today's stores read columns later versions add: the rows go up to the latest first.
    await database.migrate()
    async with database.session(ACME) as session:
        await session.execute(
            text(
                "UPDATE ragsage_chunks SET text = 'zirconium ledger via "
                "concurrent.futures.ThreadPoolExecutor' WHERE document_id = 'doc_v3'"
            )
        )
    lexical = helpers.stores(database, helpers.kit()).lexical
    for query in ("zirconium", "ThreadPoolExecutor", "thread pool executor", "futures"):
        (hit,) = await lexical.search(ACME, query, k=3)
        assert hit.chunk.id == "doc_v3:0" and hit.keyword_score and hit.keyword_score > 0
    assert await lexical.search(GLOBEX, "zirconium", k=3) == []
    await _check_v6(database)


async def _check_v8(database: Database) -> None:
    from ragsage.adapters.postgres import PgLexicalStore, PgVectorStore
    from ragsage.core.generations import EmbeddingModelMismatch

    vector = "[" + ",".join(["0.125"] * 128) + "]"
    async with database.session(ACME) as session:
        held = await session.scalar(text("SELECT held FROM ragsage_generations WHERE id = 1"))
    await database.migrate()  # as in _check_v7: today's stores need today's columns
    async with database.session(ACME) as session:
        for statement in (
            "INSERT INTO ragsage_generations (namespace, id, embedding_model, embedding_dim, "
            "state, embedder) VALUES ('acme', 2, 'ragsage-hashing-128', 128, 'building', "
            "'hashing')",
            "INSERT INTO ragsage_chunks (namespace, generation, document_id, ordinal, text, "
            "embed_text, source, embedding_model, embedding_dim, embedding) VALUES "
            "('acme', 2, 'doc_v3', 0, 'zirconium ledger cobalt', 'zirconium ledger cobalt', "
            "'v3.md', 'ragsage-hashing-128', 128, CAST(:v AS vector))",
        ):
            await session.execute(text(statement), {"v": vector})
    assert held is False

    def lexical(generation: int | None) -> PgLexicalStore:
        return PgLexicalStore(database, text_search_config="english", generation=generation)

    (hit,) = await lexical(2).search(ACME, "cobalt", k=3)
    assert hit.chunk.id == "doc_v3:0" and "cobalt" in hit.chunk.text
    assert await lexical(None).search(ACME, "cobalt", k=3) == []  # the active one has none
    assert [h.chunk.text for h in await lexical(1).search(ACME, "zirconium", k=3)] == [
        "zirconium ledger"
    ]
    assert await lexical(2).search(GLOBEX, "cobalt", k=3) == []
    assert await lexical(99).search(ACME, "zirconium", k=3) == []

    building = PgVectorStore(
        database, embedding_model="ragsage-hashing-128", embedding_dim=128, generation=2
    )
    (dense,) = await building.search(ACME, (0.125,) * 128, k=3)
    assert dense.chunk.text == "zirconium ledger cobalt"
    wrong = PgVectorStore(
        database, embedding_model="ragsage-hashing-256", embedding_dim=256, generation=2
    )
    with pytest.raises(EmbeddingModelMismatch):
        await wrong.search(ACME, (0.0625,) * 256, k=3)
    async with database.session(ACME) as session:
        await session.execute(text("DELETE FROM ragsage_chunks WHERE generation = 2"))
        await session.execute(text("DELETE FROM ragsage_generations WHERE id = 2"))
    await _check_v7(database)


async def _check_v9(database: Database) -> None:
    pg = helpers.stores(database, helpers.kit())
    (old,) = await pg.documents.chunks(ACME, "doc_v3")
    # A row written before spans existed reads back as the unknown span.
    assert (old.text, old.start_char, old.end_char) == ("zirconium ledger", 0, 0)
    await database.migrate()  # today's lexical store reads the chunks its function returns
    (hit,) = await pg.lexical.search(ACME, "zirconium", k=3)
    assert (hit.chunk.start_char, hit.chunk.end_char) == (0, 0)


async def _check_v10(database: Database) -> None:
    from types import SimpleNamespace

    from ragsage.adapters.postgres.jobs import store
    from ragsage.jobs.watchdog import reclaim
    from ragsage.settings import Settings

    await database.migrate()  # today's job code reads the latest schema
    async with database.session(ACME) as session:
        (job,) = await store.list_jobs(session)
        # A job from before the count starts with no lost deliveries ...
        assert (job.filename, job.lost_deliveries, job.deliveries) == ("v2.md", 0, 0)
        claimed = await store.claim(session, job.id, 0.0)  # a lease that is over at once
        assert claimed is not None and claimed.lost_deliveries == 0
    # ... and one whose lease ran out while running counts as lost once, however found.
    # The watchdog needs only these two parts of a runtime.
    runtime = SimpleNamespace(database=database, settings=Settings())
    reclaimed = await reclaim(runtime, ACME.namespace, job.id)  # type: ignore[arg-type]
    assert reclaimed is not None and reclaimed.kind == "ingest"
    async with database.session(ACME) as session:
        again = await store.claim(session, job.id, 60.0)
        assert again is not None
        assert (again.attempts, again.deliveries, again.lost_deliveries) == (2, 2, 1)


async def _check_v11(database: Database) -> None:
    from ragsage.adapters.postgres.jobs import document_rows, store
    from ragsage.adapters.postgres.jobs.uploads import create_upload
    from ragsage.core.jobs import JobState, Upload

    await database.migrate()  # today's job code reads the latest schema
    async with database.session(ACME) as session:
        (old,) = await store.list_jobs(session)
        # A job from before versions were numbered is never superseded ...
        assert old.version is None
        assert not store.is_superseded(
            old, await document_rows.stored_version(session, old.document_id)
        )
        # ... and the document's next upload is its version 1.
        outcome = await create_upload(
            session, ACME, Upload("v2.md", b"# Version three"), max_bytes=10**6
        )
        assert outcome.job_id is not None and not outcome.duplicate
        new = await store.get_job(session, outcome.job_id)
        assert new is not None and (new.document_id, new.version) == (old.document_id, 1)
        await store.supersede(session, new, 2)
        after = await store.get_job(session, outcome.job_id)
        assert after is not None and after.state is JobState.SUPERSEDED


async def _check_v12(database: Database) -> None:
    from ragsage.adapters.postgres.jobs import reindex, reindex_status

    async with database.session(ACME) as session:
        await session.execute(
            text(
                "INSERT INTO ragsage_generations (namespace, id, embedding_model, embedding_dim, "
                "state, embedder) VALUES ('acme', 7, 'ragsage-hashing-128', 128, 'building', "
                "'hashing')"
            )
        )
        assert all(g.gate is None for g in await reindex_status.status(session))  # none was judged
        await reindex.record_gate(session, 7, {"passed": False, "drop": 0.1})
        (judged,) = [g for g in await reindex_status.status(session) if g.id == 7]
        assert judged.gate == {"passed": False, "drop": 0.1}


async def _seed_v20(database: Database) -> None:
    """The version-2 upload, and a re-index job of a building generation, both queued."""
    await _seed_v2(database)
    async with database.session(ACME) as session:
        await session.execute(
            text(
                "INSERT INTO ragsage_jobs (namespace, id, document_id, kind, state, content_hash, "
                "filename, generation) VALUES ('acme', gen_random_uuid(), 'doc-r', 'reindex', "
                "'queued', 'hash-v2', 'v2.md', 2)"
            )
        )


async def _check_v21(database: Database) -> None:
    from ragsage.adapters.postgres.jobs import store, turns
    from ragsage.adapters.postgres.namespaces import own_overrides

    await database.migrate()  # today's job code reads the latest schema
    async with database.session(ACME) as session:
        jobs = {job.kind: job for job in await store.list_jobs(session)}
    # Jobs queued before the classes keep their place: uploads bulk, re-index work below.
    assert {kind: job.job_class for kind, job in jobs.items()} == {
        "ingest": "bulk",
        "reindex": "reindex",
    }
    order = []
    for _ in range(2):
        async with database.system_session() as system:
            chosen = await turns.next_job(system, 0)
        assert chosen is not None
        async with database.session(ACME) as session:
            claimed = await store.claim(session, chosen[1], 60.0)
            assert claimed is not None and claimed.job_class in ("bulk", "reindex")
            assert (await own_overrides(session))["job_slots"] is None  # until the operator sets it
        order.append(chosen[1])
    assert order == [jobs["ingest"].id, jobs["reindex"].id]


async def _check_v22(database: Database) -> None:
    from ragsage.adapters.postgres.jobs.documents import set_access
    from ragsage.core.scopes import Scope

    sales = Scope("acme", frozenset({"group:sales"}))
    await database.migrate()  # the keyword function reads the counts of migration 29
    await keyword_chain(database)  # first: it expects the counts as the write left them
    # Rows from before access lists are open to the whole namespace, as they were.
    async with database.session(sales) as session:
        assert list(await session.scalars(text("SELECT access FROM ragsage_chunks"))) == [[]]
    assert await keyword_hits(database, sales, "zirconium") == [("doc_v3", 0)]
    async with database.session(ACME) as session:
        assert await set_access(session, "doc_v3", ["group:hr"])
    assert await keyword_hits(database, sales, "zirconium") == []
    async with database.session(sales) as session:
        assert list(await session.scalars(text("SELECT id FROM ragsage_documents"))) == []
    assert await keyword_hits(database, ACME, "zirconium") == [("doc_v3", 0)]


# Keys written at version 22, by role, for the version-23 check.
_KEYS_V22: dict[str, str] = {}


async def _seed_v22(database: Database) -> None:
    from ragsage.core.keys import hash_key, new_key

    async with database.session(ACME) as session:
        for role in ("read", "write", "admin"):
            key_id, key = new_key()
            _KEYS_V22[role] = key
            await session.execute(
                text(
                    "INSERT INTO ragsage_api_keys (namespace, id, key_hash, role) "
                    "VALUES ('acme', :id, :hash, :role)"
                ),
                {"id": key_id, "hash": hash_key(key), "role": role},
            )


async def _check_v23(database: Database) -> None:
    from sqlalchemy.exc import IntegrityError

    from ragsage.adapters.postgres.keys import authenticate_on

    # Every key of before still acts as it did.
    for role, key in _KEYS_V22.items():
        principal = await authenticate_on(database, key)
        assert principal is not None and principal.role.value == role
    # A delegate key as version 23 wrote one: its secret in plaintext (sealed from 36 on).
    await _write_plaintext_delegate(database, "dlg0000001", "rss_" + "s" * 43)
    # A delegate key always has a secret, and no other key ever has one.
    for role, secret in (("delegate", None), ("read", "rss_x")):
        with pytest.raises(IntegrityError, match="ragsage_api_keys_delegate_signs"):
            async with database.session(ACME) as session:
                await session.execute(
                    text(
                        "INSERT INTO ragsage_api_keys (namespace, id, key_hash, role, "
                        "signing_secret) VALUES ('acme', 'k0', 'h0', :role, :secret)"
                    ),
                    {"role": role, "secret": secret},
                )


async def _check_v24(database: Database) -> None:
    import uuid

    from ragsage.adapters.postgres import webhooks
    from ragsage.adapters.postgres.jobs import store

    await database.migrate()  # today's job code reads the latest schema
    # A job queued before webhooks existed reports its end to an endpoint made after.
    async with database.session(ACME) as session:
        hook = await webhooks.create_webhook(
            session,
            "acme",
            url="https://hooks.test/",
            events=["job.succeeded"],
            sealed_secret="sealed",
            principals=None,
            description="",
            enabled=True,
        )
        (job,) = await store.list_jobs(session)
        await store.succeed(session, job.id, timings={}, result={"chunks": 0})
    async with database.session(ACME) as session:
        listed = await webhooks.list_deliveries(session, uuid.UUID(hook.id))
    assert [(d.event_type, d.state) for d in listed] == [("job.succeeded", "pending")]
    async with database.system_session() as system:
        (claimed,) = await webhooks.claim_deliveries(
            system,
            10,
            per_endpoint=4,
            per_namespace=8,
            busy_hooks={},
            busy_namespaces={},
            lease=30.0,
        )
    assert claimed.data["id"] == str(job.id) and claimed.data["filename"] == "v2.md"


async def _check_v25(database: Database) -> None:
    await database.migrate()  # the keyword function reads the counts of migration 29
    # The row written while the column was generated keeps what it computed.
    assert await keyword_hits(database, ACME, "zirconium") == [("doc_v3", 0)]
    # A writer of the previous version leaves the column out: the trigger fills it.
    await _write_old_chunk(database, 1, "hafnium via getLogger", "hafnium")
    async with database.session(ACME) as session:
        # A changed text with the old column left as it was is recomputed too.
        await session.execute(
            text("UPDATE ragsage_chunks SET text = 'tantalum ledger' WHERE ordinal = 0")
        )
        stale = await session.scalar(
            text(
                "SELECT count(*) FROM ragsage_chunks WHERE lexical IS DISTINCT FROM "
                "ragsage_chunk_lexical(headings, ragsage_identifier_words(headings), text, "
                "ragsage_identifier_words(text))"
            )
        )
    assert stale == 0
    assert await keyword_hits(database, ACME, "logger") == [("doc_v3", 1)]
    assert await keyword_hits(database, ACME, "tantalum") == [("doc_v3", 0)]
    assert await keyword_hits(database, ACME, "zirconium") == []


async def _check_v26(database: Database) -> None:
    from ragsage.adapters.postgres.jobs import reindex

    async with database.session(ACME) as session:
        # A row written before the fingerprint was recorded is never reused by a
        # re-index: it is cut again, whatever settings the worker has.
        recorded = await session.scalar(text("SELECT chunking FROM ragsage_chunks"))
        kept = await reindex.kept_chunks(session, 1, "doc_v3", "0123456789abcdef")
        await session.execute(text("UPDATE ragsage_chunks SET chunking = '0123456789abcdef'"))
        again = await reindex.kept_chunks(session, 1, "doc_v3", "0123456789abcdef")
    assert recorded is None and kept is None
    assert again == [(0, "zirconium ledger")]


async def _seed_v26(database: Database) -> None:
    await _seed_v3(database)
    async with database.owner_connection() as connection:
        # As versions before 27 built it.
        await connection.execute(
            text("ALTER INDEX ragsage_chunks_embedding_256 SET (m = 16, ef_construction = 64)")
        )


async def _check_v27(database: Database) -> None:
    async with database.owner_connection() as connection:
        options = await connection.scalar(
            text("SELECT reloptions FROM pg_class WHERE relname = 'ragsage_chunks_embedding_256'")
        )
    config = database.config
    assert sorted(options) == sorted(
        [f"m={config.hnsw_m}", f"ef_construction={config.hnsw_ef_construction}"]
    )


async def _check_v28(database: Database) -> None:
    from ragsage.adapters.postgres.jobs import store

    # A job queued before progress was recorded reads as having none, and its
    # next attempt's heartbeat records how far the stage has got.
    async with database.session(ACME) as session:
        (job,) = await store.list_jobs(session)
        claimed = await store.claim(session, job.id, 60)
    assert job.progress is None and claimed is not None and claimed.progress is None
    alive = await store.renew_lease(
        database, ACME, job.id, claimed.attempts, 60, "embed", (64, 150)
    )
    async with database.session(ACME) as session:
        running = await store.get_job(session, job.id)
    assert alive and running is not None
    assert (running.stage, running.progress) == ("embed", (64, 150))
    assert running.to_dict()["progress"] == {"done": 64, "total": 150}


async def _seed_v28(database: Database) -> None:
    await _seed_v3(database)
    async with database.owner_connection() as connection:
        # Counts as searches of version 28 cached them: capped, timed, and one
        # for a term no chunk holds any longer.
        await connection.execute(
            text(
                "INSERT INTO ragsage_term_stats (namespace, generation, term, chunks, cap) "
                "VALUES ('acme', 1, 'zirconium', 1, 501), ('acme', 1, 'hafnium', 4, 501)"
            )
        )


async def _check_v29(database: Database) -> None:
    # The counts were taken again from the stored chunks, exactly.
    assert await helpers.term_counts(database, ACME) == {"": 1, "zirconium": 1, "ledger": 1}
    assert await helpers.term_counts(database, GLOBEX) == {}
    async with database.session(ACME) as session:
        # A server of version 28, still running, reads every row as fresh and
        # its counting function as it did (it counts nothing now).
        fresh = await session.scalar(
            text(
                "SELECT chunks FROM ragsage_term_stats WHERE generation = 1 AND term = '' "
                "AND (chunks < cap OR cap >= 20000) "
                "AND counted_at > now() - make_interval(secs => 600)"
            )
        )
        asked = await session.execute(
            text("SELECT * FROM ragsage_term_counts(1, ARRAY['ledger', 'osmium'], 501)")
        )
        assert (fresh, sorted(asked.all())) == (1, [("ledger", 1), ("osmium", 0)])
    # A writer of the previous version inserts without counting: the trigger counts.
    await _write_old_chunk(database, 1, "osmium ledger", "osmium")
    counted = await helpers.term_counts(database, ACME)
    assert counted == {"": 2, "zirconium": 1, "ledger": 2, "osmium": 1}
    await database.migrate()  # the keyword function of today needs migration 31's index
    assert await keyword_hits(database, ACME, "osmium") == [("doc_v3", 1)]
    assert await helpers.term_counts(database, ACME) == counted  # the search wrote nothing


async def _check_v30(database: Database) -> None:
    # The functions that now name the namespace answer as before, and only for
    # the session's own: the keyword search carries its ranked chunk's text (read
    # back by row address), the upload room counts the namespace's rows, each
    # width's dense search finds its chunks.
    await database.migrate()  # and each width's dense search function
    vector = "[" + ",".join(["0.0625"] * 256) + "]"
    keyword = (
        "SELECT document_id, ordinal, chunk_text FROM ragsage_keyword_search('zirconium', "
        "false, 3, 500, 500, NULL, NULL, NULL, NULL, NULL, true, NULL, 3)"
    )
    room = "SELECT * FROM ragsage_upload_room('doc_v3', 'v3.md')"
    dense = (
        "SELECT DISTINCT ranked_document, text FROM ragsage_nearest_256(CAST(:v AS vector), "
        "3, 3, :exact, NULL)"
    )
    found = {}
    for scope in (ACME, GLOBEX):
        async with database.session(scope) as session:
            found[scope.namespace] = [
                [tuple(row) for row in await session.execute(text(statement), params)]
                for statement, params in (
                    (keyword, {}),
                    (room, {}),
                    (dense, {"v": vector, "exact": False}),
                    (dense, {"v": vector, "exact": True}),
                )
            ]
    assert found["acme"] == [
        [("doc_v3", 0, "zirconium ledger")],
        [(0, 1, 0, True)],
        [("doc_v3", "zirconium ledger")],
        [("doc_v3", "zirconium ledger")],
    ]
    assert found["globex"] == [[], [(0, 0, 0, False)], [], []]
    async with database.system_session() as system:
        assert (await system.execute(text(room))).all() == []


async def _check_v31(database: Database) -> None:
    # The keyword index is the one keyed by namespace, and search still finds the
    # seeded chunk through it, in its own namespace only.
    async with database.owner_connection() as connection:
        indexes = set(
            await connection.scalars(
                text("SELECT indexname FROM pg_indexes WHERE tablename = 'ragsage_chunks'")
            )
        )
        keyed = await connection.scalar(
            text(
                "SELECT count(*) FROM ragsage_chunks WHERE ragsage_keyword_key(namespace, "
                "lexical) @@ (CAST('zirconium' AS tsquery) && quote_literal(:key)::tsquery)"
            ),
            {"key": " acme"},
        )
    assert "ragsage_chunks_keyword" in indexes and "ragsage_chunks_lexical" not in indexes
    assert keyed == 1
    assert await keyword_hits(database, ACME, "zirconium") == [("doc_v3", 0)]
    assert await keyword_hits(database, GLOBEX, "zirconium") == []


async def _check_v32(database: Database) -> None:
    # A namespace stored before 32 gets a graph of its own once it is large
    # enough (here: one chunk), and its dense search walks it.
    await database.migrate()
    small_threshold = Database(dataclasses.replace(database.config, graph_rows=1))
    try:
        done = await maintain_graphs(small_threshold)
    finally:
        await small_threshold.dispose()
    assert done is not None
    assert [(c.action, c.namespace, c.width, c.chunks) for c in done.changes] == [
        ("built", "acme", 256, 1)
    ]
    store = PgVectorStore(database, embedding_model="ragsage-hashing-256", embedding_dim=256)
    found = await store.search(ACME, (0.0625,) * 256, k=3)
    assert [c.chunk.document_id for c in found] == ["doc_v3"]
    assert store.paths.path(ACME.namespace, None) == "own"


async def _seed_v32(database: Database) -> None:
    await _seed_v3(database)
    async with database.session(ACME) as session:
        await session.execute(
            text(
                "INSERT INTO ragsage_pages (namespace, content_hash, number, text, route) "
                "VALUES ('acme', 'hash-v3', 1, 'zirconium ledger', 'text')"
            )
        )


async def _check_v33(database: Database) -> None:
    # A page stored before 33 reads back without positions; a new one keeps them.
    await database.migrate()
    positions = PagePositions(595.0, 842.0, (0, 9, 72.0, 60.0, 140.0, 72.0))
    async with database.session(ACME) as session:
        [old] = await page_store.load_pages(session, "hash-v3")
        assert old.text == "zirconium ledger" and old.positions is None
        await page_store.save_pages(
            session, "acme", "hash-new", [Page(1, "zirconium", positions=positions)]
        )
        [new] = await page_store.load_pages(session, "hash-new")
    assert new.positions == positions


async def _check_v34(database: Database) -> None:
    # A chunk written before 34 is still found by its words; one written after
    # holds a snake_case name as a word of its own, so a question naming it
    # finds it before a chunk that only says the name's parts.
    await database.migrate()
    for ordinal, body in (
        (1, "Every run of the loop keeps connecting peers again and again."),
        (2, "def run_connecting(peer): dial the peer until it answers"),
    ):
        await _write_old_chunk(database, ordinal, body, body)
    assert await keyword_hits(database, ACME, "zirconium") == [("doc_v3", 0)]
    named = await keyword_hits(database, ACME, "what does run_connecting do for a peer?")
    assert named[0] == ("doc_v3", 2)


async def _seed_v34(database: Database) -> None:
    await _seed_v3(database)
    async with database.owner_connection() as connection:
        # As versions 27 to 34 left the shared graph, beside a namespace's own graph.
        await connection.execute(
            text("ALTER INDEX ragsage_chunks_embedding_256 SET (m = 12, ef_construction = 40)")
        )
        own = await connection.scalar(text("SELECT ragsage_graph_name('acme', 256)"))
        await connection.execute(
            text(
                f"CREATE INDEX {own} ON ragsage_chunks USING hnsw "
                "((embedding::vector(256)) vector_cosine_ops) "
                "WITH (m = 24, ef_construction = 200) WHERE namespace = 'acme'"
            )
        )


async def _check_v35(database: Database) -> None:
    # The shared graph links new rows through the configured list; a namespace's
    # own graph keeps the parameters it was built with.
    async with database.owner_connection() as connection:
        shared = await connection.scalar(
            text("SELECT reloptions FROM pg_class WHERE relname = 'ragsage_chunks_embedding_256'")
        )
        own = await connection.scalar(
            text("SELECT reloptions FROM pg_class WHERE relname = ragsage_graph_name('acme', 256)")
        )
    assert f"ef_construction={database.config.hnsw_ef_construction}" in shared
    assert database.config.hnsw_ef_construction != 40
    assert sorted(own) == ["ef_construction=200", "m=24"]


async def _write_plaintext_delegate(database: Database, key_id: str, secret: str) -> None:
    async with database.session(ACME) as session:
        await session.execute(
            text(
                "INSERT INTO ragsage_api_keys (namespace, id, key_hash, role, signing_secret) "
                "VALUES ('acme', :id, :hash, 'delegate', :secret)"
            ),
            {"id": key_id, "hash": f"hash-of-{key_id}", "secret": secret},
        )


_PLAINTEXT_SECRET = "rss_" + "p" * 43


async def _seed_v35(database: Database) -> None:
    await _write_plaintext_delegate(database, "dlg0000035", _PLAINTEXT_SECRET)


async def _check_v36(database: Database) -> None:
    from sqlalchemy.exc import IntegrityError, ProgrammingError

    from ragsage.adapters.postgres.keys import create_key, find_signer_on, seal_signing_secrets
    from ragsage.adapters.sealing import Sealer, new_operator_key
    from ragsage.core.keys import Role

    sealer = Sealer(new_operator_key())
    # Until the application seals it, a plaintext secret is handed to no one.
    assert await find_signer_on(database, "acme", "dlg0000035", sealer) is None
    assert await seal_signing_secrets(database, sealer) == 1
    assert await seal_signing_secrets(database, sealer) == 0
    signer = await find_signer_on(database, "acme", "dlg0000035", sealer)
    assert signer is not None and signer.secret == _PLAINTEXT_SECRET
    # Another operator key opens nothing; the app role reads neither column.
    with pytest.raises(ConfigurationError, match="RAGSAGE_SEALING_KEYS"):
        await find_signer_on(database, "acme", "dlg0000035", Sealer(new_operator_key()))
    async with database.session(ACME) as session:
        made = await create_key(session, ACME, Role.DELEGATE, sealer=sealer)
    found = await find_signer_on(database, "acme", made.id, sealer)
    assert found is not None and found.secret == made.signing_secret
    for column in ("signing_secret", "sealed_signing_secret"):
        with pytest.raises(ProgrammingError, match="permission denied"):
            async with database.session(ACME) as session:
                await session.execute(text(f"SELECT {column} FROM ragsage_api_keys"))
    with pytest.raises(IntegrityError, match="ragsage_api_keys_one_secret"):
        async with database.session(ACME) as session:
            await session.execute(
                text("UPDATE ragsage_api_keys SET signing_secret = 'rss_x' WHERE id = :id"),
                {"id": made.id},
            )


UPGRADES = {
    2: (_seed_v1, _check_v2),
    3: (_seed_v2, _check_v3),
    4: (_seed_v3, _check_v4),
    5: (_seed_v3, _check_v5),  # a version-4 install holds the same rows as version 3
    6: (_seed_v3, _check_v6),
    7: (_seed_v3, _check_v7),
    8: (_seed_v3, _check_v8),
    9: (_seed_v3, _check_v9),
    10: (_seed_v2, _check_v10),
    11: (_seed_v2, _check_v11),
    12: (_seed_v2, _check_v12),
    13: (_seed_v3, check_v13),
    14: (_seed_v3, check_v14),
    15: (_seed_v3, check_v15),
    16: (_seed_v3, check_v16),
    17: (_seed_v3, check_v17),
    18: (_seed_v3, check_v18),
    19: (_seed_v3, check_v19),
    20: (_seed_v3, check_v20),
    21: (_seed_v20, _check_v21),
    22: (_seed_v3, _check_v22),
    23: (_seed_v22, _check_v23),
    24: (_seed_v2, _check_v24),
    25: (_seed_v3, _check_v25),
    26: (_seed_v3, _check_v26),
    27: (_seed_v26, _check_v27),
    28: (_seed_v2, _check_v28),
    29: (_seed_v28, _check_v29),
    30: (_seed_v3, _check_v30),
    31: (_seed_v3, _check_v31),
    32: (_seed_v3, _check_v32),
    33: (_seed_v32, _check_v33),
    34: (_seed_v3, _check_v34),
    35: (_seed_v34, _check_v35),
    36: (_seed_v35, _check_v36),
}
