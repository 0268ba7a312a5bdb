"""The database keeps documents apart by their access lists, whatever SQL a session sends.

As the app role with principals pinned, a raw ``SELECT *`` over every table the
catalogue lists, and a call of every function the app role may execute, hand
back nothing of a document the principals may not read.  A table or function
added later is covered (or fails the test until it is).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from sqlalchemy import text

from ragsage.adapters.postgres import Database
from ragsage.adapters.postgres.dense_statements import vector_literal
from ragsage.adapters.postgres.jobs import store
from ragsage.adapters.postgres.jobs.documents import set_access
from ragsage.core.filters import SearchFilters
from ragsage.core.scopes import Scope

from . import helpers

ACME = Scope("acme")
SALES = Scope("acme", frozenset({"group:sales"}))
DOCUMENTS = {
    "hr.md": (["group:hr"], "The severance zircon formula pays the zircon bonus."),
    "both.md": (["group:hr", "group:legal"], "The litigation basilisk files name the basilisk."),
    "sales.md": (["group:sales"], "The pipeline quokka forecast counts every quokka."),
    "open.md": ([], "The cafeteria narwhal menu changes when the narwhal says."),
}
HIDDEN = ("hr.md", "both.md")


@pytest.fixture
async def stored(db: Database) -> dict[str, Any]:
    """The four documents with their chunks, bytes, pages and jobs, and their lists."""
    kit = helpers.kit()
    ids: dict[str, str] = {}
    hashes: dict[str, str] = {}
    for name, (access, body) in DOCUMENTS.items():
        result = await helpers.ingest(db, kit, ACME, body, name)
        ids[name], hashes[name] = result.document.id, result.document.content_hash
        async with db.session(ACME) as session:
            await session.execute(
                text(
                    "INSERT INTO ragsage_blobs (namespace, content_hash, data, size_bytes) "
                    "VALUES ('acme', :hash, :data, 1)"
                ),
                {"hash": hashes[name], "data": body.encode()},
            )
            await session.execute(
                text(
                    "INSERT INTO ragsage_pages (namespace, content_hash, number, text, route) "
                    "VALUES ('acme', :hash, 1, :text, 'text')"
                ),
                {"hash": hashes[name], "text": body},
            )
            await store.insert_job(
                session,
                job_id=uuid.uuid4(),
                namespace="acme",
                document_id=ids[name],
                kind="ingest",
                content_hash=hashes[name],
                filename=name,
                media_type="text/markdown",
                metadata={"about": body},
            )
            assert await set_access(session, ids[name], access)
    # A webhook hears every job finish: the outbox holds an event about each document.
    async with db.session(ACME) as session:
        await session.execute(
            text(
                "INSERT INTO ragsage_webhooks (namespace, id, url, events, sealed_secret) "
                "VALUES ('acme', :id, 'https://hooks.test/', '{job.succeeded}', 'sealed')"
            ),
            {"id": uuid.uuid4()},
        )
        await session.execute(text("UPDATE ragsage_jobs SET state = 'succeeded'"))
    return {"ids": ids, "hashes": hashes}


def _hidden_marks(stored: dict[str, Any]) -> list[str]:
    marks = []
    for name in HIDDEN:
        marks += [stored["ids"][name], stored["hashes"][name], name]
        marks += [word for word in DOCUMENTS[name][1].lower().split() if len(word) > 6]
    return marks


def _assert_clean(rows: Any, marks: list[str], where: str) -> None:
    for row in rows:
        flat = repr(tuple(row)).lower()
        for mark in marks:
            assert mark.lower() not in flat, f"{where} gave a bound session {mark!r}: {flat[:200]}"


async def test_a_raw_select_over_every_table_shows_a_bound_session_no_unreadable_row(
    db: Database, stored: dict[str, Any]
) -> None:
    async with db.owner_connection() as owner:
        tables = list(
            await owner.scalars(
                text(
                    "SELECT c.relname FROM pg_class c JOIN pg_namespace n "
                    "ON n.oid = c.relnamespace WHERE n.nspname = current_schema() "
                    "AND c.relkind = 'r' AND c.relname LIKE 'ragsage\\_%' "
                    "AND has_table_privilege(:role, c.oid, 'SELECT') ORDER BY 1"
                ),
                {"role": db.config.app_role},
            )
        )
    assert {"ragsage_chunks", "ragsage_documents", "ragsage_jobs", "ragsage_blobs"} <= set(tables)
    marks = _hidden_marks(stored)
    for table in tables:
        async with db.session(SALES) as session:
            rows = (await session.execute(text(f'SELECT * FROM "{table}"'))).all()
        _assert_clean(rows, marks, table)
        async with db.session(ACME) as session:
            everything = (await session.execute(text(f'SELECT * FROM "{table}"'))).all()
        assert len(everything) >= len(rows)
    async with db.session(SALES) as session:
        documents = set(await session.scalars(text("SELECT id FROM ragsage_documents")))
        chunks = set(await session.scalars(text("SELECT DISTINCT document_id FROM ragsage_chunks")))
        shared = (await session.execute(text("SELECT count(*) FROM ragsage_blobs"))).scalar()
    readable = {stored["ids"]["sales.md"], stored["ids"]["open.md"]}
    assert documents == chunks == readable  # the bound session is not simply blind
    assert shared == 0  # bytes shared by hash are never a bound session's to read


async def test_every_function_the_app_role_may_call_gives_a_bound_session_nothing_unreadable(
    db: Database, stored: dict[str, Any]
) -> None:
    kit = helpers.kit()
    zircon = vector_literal((await kit.embedder.embed(["severance zircon formula"]))[0])
    hr_hash = stored["hashes"]["hr.md"]
    # Every function the app role may execute, each called the way a caller could.
    calls: dict[str, list[tuple[str, dict[str, Any]]]] = {
        "ragsage_keyword_search": [
            (
                "SELECT * FROM ragsage_keyword_search(:q, :syntax, 10, 500, 500, NULL, NULL, "
                "NULL, NULL, NULL, true, NULL, 10)",
                {"q": q, "syntax": syntax},
            )
            for q in ("zircon", "severance zircon formula", "basilisk", "the")
            for syntax in (False, True)
        ],
        "ragsage_lexical_search": [
            (
                "SELECT * FROM ragsage_lexical_search(:q, false, 10, 500, 500, NULL, NULL, "
                "NULL, NULL, NULL)",
                {"q": "zircon basilisk"},
            )
        ],
        f"ragsage_nearest_{kit.embedder.dimension}": [
            (
                f"SELECT * FROM ragsage_nearest_{kit.embedder.dimension}("
                "CAST(:v AS vector), 10, 10, :exact, NULL)",
                {"v": zircon, "exact": exact},
            )
            for exact in (False, True)
        ],
        # Namespace-wide counts of words (the documented side channel): no row of a document.
        "ragsage_term_counts": [
            ("SELECT * FROM ragsage_term_counts(1, ARRAY['zircon', 'severance'], 100)", {})
        ],
        "ragsage_generation_chunks": [("SELECT ragsage_generation_chunks(1)", {})],
        # The keyword index's key: pure, it reads no table.
        "ragsage_keyword_key": [("SELECT ragsage_keyword_key('acme', 'zircon')", {})],
        # A namespace's own graph: its name is a digest, and whether it is built
        # is read from the catalog alone.
        "ragsage_graph_name": [("SELECT ragsage_graph_name('acme', 16)", {})],
        "ragsage_graph_ready": [("SELECT ragsage_graph_ready('acme', 16)", {})],
        "ragsage_upload_room": [("SELECT * FROM ragsage_upload_room('x', 'hr.md')", {})],
        "ragsage_content_kept": [("SELECT ragsage_content_kept(:h)", {"h": hr_hash})],
        "ragsage_document_taken": [("SELECT ragsage_document_taken('x', 'hr.md')", {})],
        "ragsage_forget_content": [("SELECT ragsage_forget_content(:h)", {"h": hr_hash})],
        "ragsage_find_api_key": [("SELECT * FROM ragsage_find_api_key('nothing')", {})],
        # A delegate key's role, principals and signing secret: no row of a document.
        "ragsage_find_signer": [("SELECT * FROM ragsage_find_signer('acme', 'nothing')", {})],
        "ragsage_identifier_words": [("SELECT ragsage_identifier_words('zirconPlan')", {})],
        "ragsage_name_words": [("SELECT ragsage_name_words('zircon_plan')", {})],
        # Pure: a tsvector of the text it is given; it reads no table.
        "ragsage_chunk_lexical": [("SELECT ragsage_chunk_lexical('a', 'b', 'c', 'd')", {})],
        # Pure: a list as index entries; it reads no table.
        "ragsage_readers": [("SELECT ragsage_readers('acme', '{group:hr}')", {})],
        "ragsage_readable_nearest": [
            (
                "SELECT * FROM ragsage_readable_nearest(CAST(:v AS vector), 10, 10, NULL, "
                f"{below}, 20000, 400, NULL, NULL, NULL, NULL, NULL)",
                {"v": zircon},
            )
            for below in (1000, 0)  # ranked exactly, and told to walk instead
        ],
        "ragsage_refresh_chunk_statistics": [("SELECT ragsage_refresh_chunk_statistics()", {})],
        "ragsage_refresh_job_statistics": [("SELECT ragsage_refresh_job_statistics()", {})],
        # The workers' doors across namespaces: namespace names, job ids and counts only.
        "ragsage_next_job": [("SELECT * FROM ragsage_next_job(0, ARRAY[]::uuid[])", {})],
        "ragsage_stale_jobs": [("SELECT * FROM ragsage_stale_jobs(0, 0)", {})],
        "ragsage_job_counts": [("SELECT * FROM ragsage_job_counts()", {})],
        "ragsage_namespaces": [("SELECT * FROM ragsage_namespaces()", {})],
        # The webhook dispatcher's doors answer the system session only; a backlog is counts.
        "ragsage_claim_webhook_deliveries": [
            (
                "SELECT * FROM ragsage_claim_webhook_deliveries(100, 100, 100, '{}', '{}', "
                "'{}', '{}', 60)",
                {},
            )
        ],
        "ragsage_record_webhook_delivery": [
            (
                "SELECT ragsage_record_webhook_delivery('acme', :id, :id, 1, 'delivered', 200, "
                "1, NULL, 0)",
                {"id": uuid.uuid4()},
            )
        ],
        "ragsage_purge_webhook_events": [("SELECT ragsage_purge_webhook_events(0, 0, 100)", {})],
        "ragsage_webhook_backlog": [("SELECT * FROM ragsage_webhook_backlog()", {})],
        # Pure: whether an endpoint's principals admit an access list; it reads no table.
        "ragsage_webhook_admits": [("SELECT ragsage_webhook_admits('{group:hr}', '{}')", {})],
        "ragsage_rotate_webhook_secret": [
            ("SELECT ragsage_rotate_webhook_secret(:id, 'sealed', 0)", {"id": uuid.uuid4()})
        ],
    }
    async with db.owner_connection() as owner:
        callable_now = set(
            await owner.scalars(
                text(
                    "SELECT DISTINCT p.proname FROM pg_proc p JOIN pg_namespace n "
                    "ON n.oid = p.pronamespace WHERE n.nspname = current_schema() "
                    "AND p.proname LIKE 'ragsage\\_%' "
                    "AND has_function_privilege(:role, p.oid, 'EXECUTE')"
                ),
                {"role": db.config.app_role},
            )
        )
    dense = {name for name in callable_now if name.startswith("ragsage_nearest_")}
    assert callable_now - dense == set(calls) - dense, (
        "a function the app role may call is unprobed"
    )
    marks = _hidden_marks(stored)
    identities = [stored[kind][name] for kind in ("ids", "hashes") for name in HIDDEN]
    for name, statements in calls.items():
        for sql, params in statements:
            async with db.session(SALES) as session:
                rows = (await session.execute(text(sql), params)).all()
            # Term counts answer with the caller's own words, counted namespace-wide.
            _assert_clean(rows, identities if name == "ragsage_term_counts" else marks, name)
    # The dispatcher's doors left the outbox as it was: nothing claimed, nothing purged.
    async with db.session(ACME) as session:
        waiting = await session.execute(
            text("SELECT state, attempts FROM ragsage_webhook_deliveries")
        )
        assert sorted(waiting.all()) == [("pending", 0)] * 4
    # The hidden document's bytes are still held by it: a bound caller cannot remove them.
    async with db.session(ACME) as session:
        assert await session.scalar(text("SELECT ragsage_content_kept(:h)"), {"h": hr_hash})
    # And the searches do find what the bound session may read.
    async with db.session(SALES) as session:
        found = (
            await session.execute(
                text(
                    "SELECT document_id FROM ragsage_keyword_search('quokka', false, 10, 500, "
                    "500, NULL, NULL, NULL, NULL, NULL, true, NULL, 10)"
                )
            )
        ).all()
    assert {row[0] for row in found} == {stored["ids"]["sales.md"]}


async def test_a_transaction_pinned_to_a_namespace_without_principals_sees_only_open_rows(
    db: Database, stored: dict[str, Any]
) -> None:
    async with db.owner_connection() as owner:
        await owner.execute(text(f'SET LOCAL ROLE "{db.config.app_role}"'))
        await owner.execute(text("SELECT set_config('ragsage.namespace', 'acme', true)"))
        documents = set(await owner.scalars(text("SELECT id FROM ragsage_documents")))
        blobs = (await owner.execute(text("SELECT count(*) FROM ragsage_blobs"))).scalar()
    assert documents == {stored["ids"]["open.md"]}  # a forgotten preamble fails closed
    assert blobs == 0


async def test_a_bound_session_cannot_write_a_list_beyond_its_principals(
    db: Database, stored: dict[str, Any]
) -> None:
    sales_id = stored["ids"]["sales.md"]
    with pytest.raises(Exception, match="row-level security"):
        async with db.session(SALES) as session:
            await session.execute(
                text("UPDATE ragsage_documents SET access = '{group:hr}' WHERE id = :id"),
                {"id": sales_id},
            )
    async with db.session(SALES) as session:
        changed = await session.execute(
            text("UPDATE ragsage_chunks SET text = 'x' WHERE document_id = :id RETURNING ordinal"),
            {"id": stored["ids"]["hr.md"]},
        )
        assert changed.all() == []  # an unreadable row is not there to change


async def test_a_key_reading_few_chunks_gets_its_k_nearest_of_them_walked_or_ranked(
    db: Database,
) -> None:
    kit = helpers.kit()
    ids = []
    for number in range(24):
        body = " ".join(
            f"Section {number}-{i} talks of orbit {i * number} and tides." for i in range(12)
        )
        done = await helpers.ingest(db, kit, ACME, body, f"doc{number}.md", chunk_size=16)
        ids.append(done.document.id)
    readable = set(ids[:2])
    async with db.session(ACME) as session:
        for document in ids:
            access = ["group:sales"] if document in readable else ["group:hr"]
            assert await set_access(session, document, access)
    store = helpers.stores(db, kit).vectors
    query = tuple((await kit.embedder.embed(["orbit and tides of section"]))[0])
    expected = await store.search(
        ACME, query, k=8, filters=SearchFilters(document_ids=frozenset(readable))
    )
    assert len(expected) == 8
    ranked = await store.search(SALES, query, k=8)
    assert store.paths.path("acme", None, SALES.principals) == "exact"  # few: ranked exactly
    assert [c.chunk.id for c in ranked] == [c.chunk.id for c in expected]
    # Told to walk (as for a key reading most of a big namespace), it still gets them all.
    store.paths.remember("acme", None, "walk", SALES.principals)
    walked = await store.search(SALES, query, k=8)
    assert {c.chunk.document_id for c in walked} <= readable
    assert len(walked) == 8
