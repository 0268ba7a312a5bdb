"""Hostile and awkward search input, and filters pushed into SQL."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from ragsage.adapters.postgres import Database, PgLexicalStore, PgVectorStore
from ragsage.core.chunks import Chunk, EmbeddedChunk
from ragsage.core.errors import InvalidRequest
from ragsage.core.filters import SearchFilters
from ragsage.core.generations import EmbeddingModelMismatch
from ragsage.core.identity import document_id_for
from ragsage.core.scopes import Scope
from ragsage.query import RetrievalOptions

from ..unit.engine.conftest import HANDBOOK
from . import helpers

ACME, GLOBEX = Scope("acme"), Scope("globex")


async def test_bad_vectors_are_refused_with_a_clear_message(db: Database) -> None:
    kit = helpers.kit()
    await helpers.ingest(db, kit, ACME, HANDBOOK, "handbook.md")
    store = helpers.stores(db, kit).vectors
    with pytest.raises(InvalidRequest, match="vector has 3 dimensions; this store holds 256"):
        await store.search(ACME, (0.1, 0.2, 0.3), k=5)
    bad = [0.0] * 256
    bad[7] = math.nan
    with pytest.raises(InvalidRequest, match="NaN or infinite"):
        await store.search(ACME, tuple(bad), k=5)
    bad[7] = math.inf
    with pytest.raises(InvalidRequest, match="NaN or infinite"):
        await store.search(ACME, tuple(bad), k=5)


@pytest.mark.parametrize("query", ["& | ! <->", "!!!", "the and of", "()", "''", "-", '"'])
async def test_operator_or_stopword_only_queries_match_nothing(db: Database, query: str) -> None:
    kit = helpers.kit()
    await helpers.ingest(db, kit, ACME, HANDBOOK, "handbook.md")
    assert await helpers.stores(db, kit).lexical.search(ACME, query, k=5) == []


async def test_search_syntax_is_honoured(db: Database) -> None:
    kit = helpers.kit()
    await helpers.ingest(db, kit, ACME, HANDBOOK, "handbook.md")
    lexical = helpers.stores(db, kit).lexical
    phrase = await lexical.search(ACME, '"full-disk encryption"', k=5)
    excluded = await lexical.search(ACME, "days -holiday", k=5)
    assert phrase and all("encryption" in hit.chunk.text for hit in phrase)
    assert excluded and all("holiday" not in hit.chunk.text.lower() for hit in excluded)


async def test_a_megabyte_query_is_a_clear_error_not_a_crash(db: Database) -> None:
    kit = helpers.kit()
    await helpers.ingest(db, kit, ACME, HANDBOOK, "handbook.md")
    huge = "holiday " * 131_072
    with pytest.raises(InvalidRequest, match="the limit is 10,000"):
        await helpers.stores(db, kit).lexical.search(ACME, huge, k=5)
    with pytest.raises(InvalidRequest, match="the limit is 8,000"):
        await helpers.engine(db, kit).search(ACME, huge)


async def test_a_different_embedding_model_is_refused_naming_both(db: Database) -> None:
    kit = helpers.kit()
    await helpers.ingest(db, kit, ACME, HANDBOOK, "handbook.md")
    other = PgVectorStore(db, embedding_model="voyage-3-large", embedding_dim=256)
    with pytest.raises(EmbeddingModelMismatch, match="ragsage-hashing-256.*voyage-3-large"):
        await other.search(ACME, tuple([0.1] * 256), k=3)


async def test_filters_run_in_sql(db: Database) -> None:
    kit = helpers.kit()
    now = datetime.now(UTC)
    handbook = await helpers.ingest(db, kit, ACME, HANDBOOK, "handbook.md")
    await helpers.ingest(db, kit, ACME, "# Pricing\n\nThe Pro plan costs 49 euros.", "pricing.md")
    engine = helpers.engine(db, kit)
    question = "euros days"

    only_handbook = RetrievalOptions(
        top_k=10, filters=SearchFilters(document_ids=frozenset({handbook.document.id}))
    )
    by_source = RetrievalOptions(filters=SearchFilters(sources=frozenset({"pricing.md"})))
    by_metadata = RetrievalOptions(filters=SearchFilters(metadata={"title": "Pricing"}))
    future = RetrievalOptions(filters=SearchFilters(created_after=now + timedelta(days=1)))

    hits = (await engine.search(ACME, question, only_handbook)).hits
    assert hits and {h.chunk.source for h in hits} == {"handbook.md"}
    assert {h.chunk.source for h in (await engine.search(ACME, question, by_source)).hits} == {
        "pricing.md"
    }
    assert {h.chunk.source for h in (await engine.search(ACME, question, by_metadata)).hits} == {
        "pricing.md"
    }
    assert (await engine.search(ACME, question, future)).hits == ()


async def test_filtered_hnsw_search_still_returns_k_results(db: Database) -> None:
    """Iterative index scans keep going until k rows pass the filter."""
    kit = helpers.kit()
    dim = kit.embedder.dimension
    rows = []
    for document in range(20):
        for ordinal in range(20):
            words = f"topic{document} item{ordinal} shared words here"
            chunk = Chunk(
                id=f"d{document}:{ordinal}",
                document_id=f"d{document}",
                ordinal=ordinal,
                text=words,
                embed_text=words,
                source=f"s{document}.md",
            )
            vector = tuple((await kit.embedder.embed([words]))[0])
            rows.append(EmbeddedChunk(chunk=chunk, vector=vector))
    async with db.session(ACME) as session:
        pg = helpers.stores(session, kit)
        for document in range(20):
            await pg.documents.save(ACME, _doc(document), [])
        await pg.vectors.upsert(ACME, rows)
    query = tuple((await kit.embedder.embed(["shared words topic3"]))[0])
    assert len(query) == dim

    async with db.session(ACME) as session:
        # Force the index even on this small table, as the planner would on a big one.
        await session.execute(
            text(
                "SELECT set_config('enable_seqscan', 'off', true), "
                "set_config('enable_sort', 'off', true)"
            )
        )
        plan = "\n".join(
            await session.scalars(
                text(
                    f"EXPLAIN SELECT 1 FROM ragsage_chunks c WHERE c.embedding_dim = {dim} "
                    f"ORDER BY c.embedding::vector({dim}) <=> CAST(:q AS vector({dim})) LIMIT 10"
                ),
                {"q": "[" + ",".join(str(v) for v in query) + "]"},
            )
        )
        assert "ragsage_chunks_embedding_256" in plan
        store = PgVectorStore(
            session, embedding_model=kit.embedder.model, embedding_dim=dim, ef_search=10
        )
        found = await store.search(
            ACME, query, k=15, filters=SearchFilters(document_ids=frozenset({"d7"}))
        )
    assert len(found) == 15
    assert {c.chunk.document_id for c in found} == {"d7"}


def _doc(number: int):  # type: ignore[no-untyped-def]
    from ragsage.core.documents import Document

    return Document(
        id=f"d{number}", content_hash=f"h{number}", title=f"D{number}", source=f"s{number}.md"
    )


async def test_common_terms_rank_but_do_not_pick_candidates(db: Database) -> None:
    kit = helpers.kit()
    for number in range(6):
        body = f"# Note {number}\n\nThe project status is green for milestone{number}."
        await helpers.ingest(db, kit, ACME, body, f"note{number}.md")
    await helpers.ingest(
        db, kit, ACME, "# Escalation\n\nProject status red: the zeppelin contract slipped.", "z.md"
    )
    lexical = PgLexicalStore(db, text_search_config="english", common_term_rows=3)

    # "project" and "status" are in every chunk: only "zeppelin" picks candidates,
    # yet the shared terms still add to the rank of what it found.
    found = await lexical.search(ACME, "project status zeppelin", k=10)
    assert [hit.chunk.source for hit in found] == ["z.md"]

    # Only common terms: chunks holding all of them are ranked, none are lost.
    common = await lexical.search(ACME, "project status", k=10)
    assert len(common) == 7

    unlimited = PgLexicalStore(db, text_search_config="english")
    assert len(await unlimited.search(ACME, "project status zeppelin", k=10)) == 7


async def test_one_namespace_never_moves_another_namespaces_keyword_scores(
    db: Database,
) -> None:
    kit = helpers.kit()
    for number in range(12):
        body = f"# Note {number}\n\nThe project status is green for milestone{number}."
        await helpers.ingest(db, kit, ACME, body, f"note{number}.md")
    await helpers.ingest(
        db, kit, ACME, "# Escalation\n\nProject status red: the zeppelin contract slipped.", "z.md"
    )
    lexical = PgLexicalStore(db, text_search_config="english", common_term_rows=3)

    async def scores() -> list[tuple[str, float | None]]:
        hits = await lexical.search(ACME, "project status zeppelin", k=20)
        return [(hit.chunk.id, hit.keyword_score) for hit in hits]

    alone = await scores()
    # Another tenant floods the table with the word ACME searches by.
    for number in range(40):
        body = f"Zeppelin flight {number}: the zeppelin project status is on time."
        await helpers.ingest(db, kit, GLOBEX, body, f"flight{number}.md")
    async with db.owner_connection() as connection:
        await connection.execute(text("ANALYZE ragsage_chunks"))
        await connection.commit()

    assert alone[0][0].startswith(document_id_for(ACME.namespace, "z.md"))
    assert await scores() == alone


async def test_the_chunk_holding_the_query_words_in_order_comes_first(db: Database) -> None:
    kit = helpers.kit()
    orders = [
        "Late again: the status of every report on the project.",
        "The report is late; project status unknown.",
        "Status: late. Report the project to the board.",
        "Project late, report pending, status amber.",
        "A report about status changes is late for the project.",
        "The late project needs a status report soon.",
    ]
    for number, sentence in enumerate(orders):
        await helpers.ingest(db, kit, ACME, f"# Note {number}\n\n{sentence}", f"n{number}.md")
    await helpers.ingest(
        db, kit, ACME, "# Weekly\n\nThe project status report is late this week.", "weekly.md"
    )
    await helpers.ingest(
        db, kit, ACME, "# Monthly\n\nThe project status report is late, milestone slips.", "m.md"
    )
    # Every word is in every chunk, and the sample of common-word chunks holds two:
    # the copied words in their order must still find their chunks, first.
    lexical = PgLexicalStore(
        db, text_search_config="english", common_term_rows=3, common_sample_rows=2
    )
    found = await lexical.search(ACME, "project status report is late", k=3)
    assert {hit.chunk.source for hit in found[:2]} == {"weekly.md", "m.md"}
    # Under search syntax the phrase still ranks, but brings back nothing excluded.
    syntax = await lexical.search(ACME, "project status report is late -milestone", k=10)
    assert syntax[0].chunk.source == "weekly.md"
    assert all(hit.chunk.source != "m.md" for hit in syntax)


async def test_a_lowercase_or_is_prose_and_a_capital_or_is_syntax(db: Database) -> None:
    kit = helpers.kit()
    await helpers.ingest(db, kit, ACME, "# Crew\n\nThe zeppelin needs a pilot.", "z.md")
    await helpers.ingest(db, kit, ACME, "# Sky\n\nWeather reports arrive hourly.", "w.md")
    await helpers.ingest(db, kit, ACME, "# Stove\n\nThe pilot light is on.", "s.md")
    lexical = helpers.stores(db, kit).lexical
    # Read as a question, any word may match: the stove's pilot light too.
    prose = await lexical.search(ACME, "zeppelin pilot or weather report", k=5)
    assert {hit.chunk.source for hit in prose} == {"z.md", "w.md", "s.md"}
    # As syntax, the words on each side of OR are all required.
    syntax = await lexical.search(ACME, "zeppelin pilot OR weather report", k=5)
    assert {hit.chunk.source for hit in syntax} == {"z.md", "w.md"}
