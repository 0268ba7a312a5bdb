"""The stores in Postgres: what they write and read back, and what a delete or purge removes."""

from __future__ import annotations

from sqlalchemy import text

from ragsage.adapters.parsing import HeuristicBackend
from ragsage.adapters.postgres import (
    Database,
    purge_namespace,
)
from ragsage.core.documents import RawSource
from ragsage.core.scopes import Scope
from ragsage.testing import FakeEngineKit

from ..unit.engine.conftest import HANDBOOK
from . import helpers

ACME, GLOBEX = Scope("acme"), Scope("globex")


async def test_ingest_then_dense_and_lexical_search(db: Database) -> None:
    kit = helpers.kit()
    result = await helpers.ingest(db, kit, ACME, HANDBOOK, "handbook.md")
    pg = helpers.stores(db, kit)

    vector = (await kit.embedder.embed(["paid holiday days per year"], input_type="query"))[0]
    dense = await pg.vectors.search(ACME, tuple(vector), k=3)
    lexical = await pg.lexical.search(ACME, "How much holiday do employees get?", k=3)

    assert "28 days of paid holiday" in dense[0].chunk.text
    assert dense[0].vector_score is not None and 0 < dense[0].vector_score <= 1
    assert "28 days of paid holiday" in lexical[0].chunk.text
    assert lexical[0].keyword_score is not None and lexical[0].keyword_score > 0
    assert lexical[0].chunk.heading_path == ("Employee handbook", "Holidays")
    assert await pg.documents.count_chunks(ACME) == result.chunks

    answer = await helpers.engine(db, kit).answer(ACME, "How many days of paid holiday?")
    assert "28 days" in answer.text and answer.citations[0].source == "handbook.md"


async def test_chunk_spans_survive_the_round_trip_through_postgres(db: Database) -> None:
    backend = HeuristicBackend()
    kit = FakeEngineKit(dimension=helpers.TEST_DIM, parser=backend, chunker=backend)
    result = await helpers.ingest(db, kit, ACME, HANDBOOK, "spans.md", chunk_size=24)
    pg = helpers.stores(db, kit)
    stored = await pg.documents.chunks(ACME, result.document.id)
    page = backend.parse(RawSource(HANDBOOK.encode(), "spans.md")).pages[0].text
    assert len(stored) > 2 and stored[-1].start_char > 0
    for chunk in stored:
        assert page[chunk.start_char : chunk.end_char] == chunk.text
    vector = (await kit.embedder.embed(["paid holiday"], input_type="query"))[0]
    (dense, *_) = await pg.vectors.search(ACME, tuple(vector), k=3)
    (lexical, *_) = await pg.lexical.search(ACME, "paid holiday", k=3)
    for hit in (dense, lexical):
        assert page[hit.chunk.start_char : hit.chunk.end_char] == hit.chunk.text


async def test_reingesting_at_a_larger_chunk_size_leaves_no_stale_tail(db: Database) -> None:
    kit = helpers.kit()
    small = await helpers.ingest(db, kit, ACME, HANDBOOK, "handbook.md", chunk_size=16)
    large = await helpers.ingest(
        db, kit, ACME, HANDBOOK.replace("28", "30"), "handbook.md", chunk_size=400
    )
    assert large.chunks < small.chunks
    pg = helpers.stores(db, kit)
    chunks = await pg.documents.chunks(ACME, large.document.id)
    assert [c.ordinal for c in chunks] == list(range(large.chunks))
    async with db.session(ACME) as session:
        rows = await session.scalar(text("SELECT count(*) FROM ragsage_chunks"))
    assert rows == large.chunks
    document = await pg.documents.get(ACME, large.document.id)
    assert document is not None and document.content_hash == large.document.content_hash


async def test_purge_deletes_exactly_one_namespace(db: Database) -> None:
    kit = helpers.kit()
    await helpers.ingest(db, kit, ACME, HANDBOOK, "handbook.md")
    kept = await helpers.ingest(db, kit, GLOBEX, HANDBOOK, "handbook.md")
    lexical = helpers.stores(db, kit).lexical
    for scope in (ACME, GLOBEX):  # the writes counted each namespace's terms
        assert await lexical.search(scope, "holiday allowance", k=5)
        assert (await helpers.term_counts(db, scope))["holiday"] > 0
    async with db.session(ACME) as session:
        await purge_namespace(session)
    engine = helpers.engine(db, kit)
    assert await engine.count(ACME) == 0 and await engine.list_sources(ACME) == []
    assert await engine.count(GLOBEX) == kept.chunks
    # Nothing of the purged namespace is left, its keyword counts included.
    assert await helpers.term_counts(db, ACME) == {}
    assert set(await helpers.term_counts(db, GLOBEX)) >= {"holiday", ""}


async def test_delete_removes_the_document_and_its_chunks(db: Database) -> None:
    kit = helpers.kit()
    result = await helpers.ingest(db, kit, ACME, HANDBOOK, "handbook.md")
    pg = helpers.stores(db, kit)
    await pg.documents.delete(ACME, result.document.id)
    assert await pg.documents.get(ACME, result.document.id) is None
    assert await pg.documents.count_chunks(ACME) == 0
    assert await pg.lexical.search(ACME, "holiday", k=5) == []


GO_SOURCE = (
    "package fetch\n\n// Get asks until the server answers.\nfunc Get(c *http.Client) error {\n"
    + "\n".join(
        f'\tresp{n}, err := c.Get("/items/{n}")\n\tif err == nil && resp{n}.StatusCode == 429 {{\n'
        f'\t\tlog.Printf("attempt {n} throttled: %s", resp{n}.Header.Get("Retry-After"))\n\t}}'
        for n in range(30)
    )
    + "\n\treturn nil\n}\n"
)


async def test_a_long_definitions_windows_are_found_by_vector_alone(db: Database) -> None:
    backend = HeuristicBackend(code_window=96)
    kit = FakeEngineKit(dimension=helpers.TEST_DIM, parser=backend, chunker=backend)
    result = await helpers.ingest(db, kit, ACME, GO_SOURCE, "fetch/get.go")
    pg = helpers.stores(db, kit)
    stored = await pg.documents.chunks(ACME, result.document.id)
    windows = [c for c in stored if "window" in c.metadata]
    assert len(windows) > 1 and len(stored) > len(windows)
    # Keyword search finds the whole definition, never one of its windows.
    found = await pg.lexical.search(ACME, "attempt 17 throttled Retry-After", k=20)
    assert found and all("window" not in hit.chunk.metadata for hit in found)
    assert any("attempt 17 throttled" in hit.chunk.text for hit in found)
    # Each window is still found by its vector.
    vector = (await kit.embedder.embed([windows[1].embed_text], input_type="query"))[0]
    dense = await pg.vectors.search(ACME, tuple(vector), k=len(stored))
    assert windows[1].id in {hit.chunk.id for hit in dense}
