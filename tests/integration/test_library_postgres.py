"""The library facade on Postgres, built from settings as the service builds itself."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragsage import RAG, Forbidden, InvalidRequest
from ragsage.adapters.postgres import PostgresConfig
from ragsage.settings import Settings

from .conftest import TEST_DIM

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "docs"

HANDBOOK = """# Employee handbook

## Holidays

Every employee receives 28 days of paid holiday per year. Holidays are requested in the
people portal at least two weeks ahead, and a manager answers within three working days.
Up to five unused days carry over into the first months of the next year; the rest lapse
on the last day of March. Public holidays of the office's country come on top and are not
counted against the allowance. Part-time staff receive the allowance in proportion to their
contracted hours, rounded up to the next half day. Parental leave, sick leave and
compassionate leave are separate from holidays and described in their own chapters.
Whoever leaves the company is paid for holiday earned and not taken, pro rata to the
leaving date, with the final salary.

## Security

Laptops must use full-disk encryption. Report a lost device to the security desk
within one hour, day or night.
"""


@pytest.fixture
def settings(pg_config: PostgresConfig) -> Settings:
    return Settings.from_env(
        {},
        database_url=pg_config.dsn,
        app_database_url=pg_config.app_dsn,
        embedding_dim=TEST_DIM,
    )


@pytest.fixture
def rag(settings: Settings) -> Iterator[RAG]:
    with RAG.from_settings(settings, namespace="acme", migrate=True) as built:
        yield built


def test_index_search_and_delete_in_postgres(rag: RAG) -> None:
    chunks = rag.index_text(
        HANDBOOK, document_id="handbook", source="handbook.md", metadata={"team": "hr"}
    )
    rag.index_file(EXAMPLES / "quarterly-roadmap.pptx")
    rag.index_file(EXAMPLES / "deployment-guide.pdf")
    assert rag.count() >= len(chunks) + 2
    assert rag.list_sources() == ["deployment-guide.pdf", "handbook.md", "quarterly-roadmap.pptx"]

    context = rag.search("lost laptop device", filters={"metadata": {"team": "hr"}}, chunks_above=1)
    best = context.results[0]
    assert best.chunk.document_id == "handbook" and "lost device" in best.chunk.text
    assert [c.ordinal for c in best.above] == [best.chunk.ordinal - 1]
    assert context.timing_ms["total_ms"] > 0
    assert rag.search("quarterly roadmap", filters={"sources": ["handbook.md"]}).results == ()

    again = rag.reindex("handbook")  # from the pages kept in the database
    assert [c.text for c in again] == [c.text for c in chunks]
    rag.reindex("handbook", content="Parking is free on weekends.")
    assert rag.search("paid holiday").results == ()
    assert rag.search("parking weekends").results[0].chunk.id == "handbook:0"

    assert rag.delete_document("handbook") is True
    assert rag.delete_document("handbook") is False
    assert rag.search("parking weekends").results == ()
    assert "handbook.md" not in rag.list_sources()
    with pytest.raises(InvalidRequest, match="no document 'handbook'"):
        rag.reindex("handbook")


def test_a_second_namespace_sees_nothing_of_the_first(rag: RAG, settings: Settings) -> None:
    rag.index_text(HANDBOOK, document_id="handbook", source="handbook.md")
    with RAG.from_settings(settings, namespace="globex") as other:
        assert other.count() == 0
        assert other.list_sources() == []
        assert other.search("paid holiday").results == ()
        assert other.fetch_chunk("handbook:0") is None
        assert other.delete_document("handbook") is False
        other.index_text("Globex keeps its own notes.", document_id="notes")
    assert rag.list_sources() == ["handbook.md"]
    assert rag.search("globex notes").results == ()


def test_tracking_and_tools_over_postgres(rag: RAG) -> None:
    rag.index_text(HANDBOOK, document_id="handbook", source="handbook.md")
    rag.begin_run()
    payload = rag.tool_search("lost laptop", top_k=3, rerank=True)
    sources = rag.end_run()
    assert payload["results"][0]["citation"] == 1
    assert sources[0].chunk_id == payload["results"][0]["chunk_id"]


def test_a_document_written_during_a_reindex_is_queued_for_the_new_generation(
    rag: RAG, settings: Settings
) -> None:
    import asyncio

    from sqlalchemy import text

    from ragsage.adapters.postgres.jobs import reindex
    from ragsage.core.scopes import Scope
    from ragsage.runtime import build_database

    rag.index_text(HANDBOOK, document_id="handbook", source="handbook.md")

    async def start_and_read(document_id: str | None = None) -> list[tuple[str, int]]:
        database = build_database(settings)
        try:
            async with database.session(Scope("acme")) as session:
                if document_id is None:
                    await reindex.start(
                        session,
                        Scope("acme"),
                        embedder="hashing",
                        model="ragsage-hashing-64",
                        dim=64,
                    )
                rows = await session.execute(
                    text(
                        "SELECT document_id, generation FROM ragsage_jobs "
                        "WHERE kind = 'reindex' ORDER BY document_id"
                    )
                )
                return [(str(row[0]), int(row[1])) for row in rows]
        finally:
            await database.dispose()

    before = asyncio.run(start_and_read())
    rag.index_text("Visitors sign in at the front desk.", document_id="visitors", source="v.md")
    after = asyncio.run(start_and_read("visitors"))
    # Without that job the re-index would wait for "visitors" forever.
    (generation,) = {g for _, g in before}
    assert [d for d, _ in before] == ["handbook"]
    assert after == [("handbook", generation), ("visitors", generation)]


def test_a_file_indexed_under_a_pre_namespace_id_is_replaced_not_duplicated(
    rag: RAG, tmp_path: Path
) -> None:
    from ragsage.core.identity import legacy_document_id_for

    note = tmp_path / "runbook.md"
    note.write_text("# Runbook\n\nRestart the gateway with the blue switch.\n")
    legacy = legacy_document_id_for(str(note.resolve()))
    # What earlier releases stored: the id hashed from the path alone.
    rag.index_file(note, document_id=legacy)
    note.write_text("# Runbook\n\nRestart the gateway with the red switch.\n")
    chunks = rag.index_file(note)  # a new release, no id given
    assert {chunk.document_id for chunk in chunks} == {legacy}
    assert rag.count() == 1
    assert "red switch" in rag.search("gateway switch").results[0].chunk.text


def test_a_rag_bound_to_principals_reads_and_writes_as_a_bound_key(
    rag: RAG, settings: Settings
) -> None:
    rag.index_text(HANDBOOK, document_id="handbook", source="handbook.md")
    rag.index_text(
        "# Pricing\n\nThe list price of the quokka plan is 40 euros.", document_id="price"
    )
    assert rag.set_access("handbook", ["group:hr"]) is True
    assert rag.set_access("absent", ["group:hr"]) is False

    def sources(found: RAG, query: str) -> set[str]:
        return {hit.chunk.document_id for hit in found.search(query, top_k=10).results}

    with RAG.from_settings(settings, namespace="acme", principals=["group:sales"]) as sales:
        assert sources(sales, "holiday allowance laptops") <= {"price"}
        assert "price" in sources(sales, "quokka plan price")
        sales.index_text("# Forecast\n\nThe wombat forecast grows.", document_id="forecast")
        # The hidden handbook's very bytes, whose stored pages it can neither see nor replace.
        assert sales.index_text(HANDBOOK, document_id="copy", source="copy.md")
        assert sources(sales, "wombat forecast") == {"forecast", "price"}  # never the handbook
        with pytest.raises(Forbidden):
            sales.set_access("forecast", ["group:hr"])  # beyond its principals
        assert sales.set_access("handbook", ["group:sales"]) is False  # absent to it
    with RAG.from_settings(settings, namespace="acme", principals=["group:hr"]) as hr:
        assert "handbook" in sources(hr, "holiday allowance laptops")
        assert "forecast" not in sources(hr, "wombat forecast")  # the sales RAG's own
    assert "forecast" in sources(rag, "wombat forecast")  # unbound: everything
    with pytest.raises(InvalidRequest, match="Postgres"):
        RAG.default().set_access("x", [])
