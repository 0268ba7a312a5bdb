"""Building pipelines over the Postgres stores for tests."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from ragsage.adapters.postgres import Database, PgDocumentStore, PgLexicalStore, PgVectorStore
from ragsage.core.documents import RawSource
from ragsage.core.scopes import Scope
from ragsage.ingestion import IngestionConfig, IngestResult
from ragsage.query import QueryEngine
from ragsage.testing import FakeEngineKit

from .conftest import TEST_DIM

# The rest of a travel policy's Hotels section: long enough to be a chunk of its own
# rather than joining the next section, as a real policy's would be.
HOTEL_DETAILS = (
    b"Book through the travel desk so the negotiated rate applies, and keep the itemised "
    b"invoice: a card slip alone is not accepted. Breakfast is included in the limit when the "
    b"hotel bills it with the room; minibar, laundry and films are personal costs. A stay of "
    b"more than five nights in one city should be booked as a serviced apartment, which the "
    b"travel desk arranges at a weekly rate. Late check-out is reimbursed when a return flight"
    b" leaves after six in the evening, and a cancelled night is reimbursed if the trip itself"
    b" was cancelled by the company. Ask your manager before booking anything above the limit."
    b" Receipts in a foreign currency are converted at the rate of the day the card was charged."
)


@dataclass
class PgStores:
    vectors: PgVectorStore
    lexical: PgLexicalStore
    documents: PgDocumentStore


def stores(target: Database | AsyncSession, kit: FakeEngineKit) -> PgStores:
    return PgStores(
        PgVectorStore(
            target, embedding_model=kit.embedder.model, embedding_dim=kit.embedder.dimension
        ),
        PgLexicalStore(target, text_search_config="english"),
        PgDocumentStore(target),
    )


def kit() -> FakeEngineKit:
    return FakeEngineKit(dimension=TEST_DIM)


async def ingest(
    db: Database,
    kit: FakeEngineKit,
    scope: Scope,
    text: str,
    filename: str,
    *,
    chunk_size: int = 40,
) -> IngestResult:
    """Prepare outside any transaction, then write in one scoped transaction."""
    pipeline = kit.ingestion(IngestionConfig(chunk_size=chunk_size, chunk_overlap=0))
    prepared = await pipeline.prepare(scope, RawSource(text.encode(), filename))
    async with db.session(scope) as session:
        bound = stores(session, kit)
        return await pipeline.store(
            scope,
            prepared,
            vector_store=bound.vectors,
            lexical_store=bound.lexical,
            document_store=bound.documents,
        )


def engine(db: Database, kit: FakeEngineKit) -> QueryEngine:
    pg = stores(db, kit)
    return QueryEngine(
        embedder=kit.embedder,
        vector_store=pg.vectors,
        lexical_store=pg.lexical,
        document_store=pg.documents,
        llm=kit.llm,
        reranker=kit.reranker,
        rewriter=kit.rewriter,
        tracer=kit.tracer,
    )


async def term_counts(database: Database, scope: Scope) -> dict[str, int]:
    """The keyword term counts ``scope`` can see, term by term, folded or not (zeros left out).

    Before migration 29 there is one table of them, written by searches.
    """
    async with database.session(scope) as session:
        pending = await session.scalar(text("SELECT to_regclass('ragsage_term_changes')"))
        tables = ["ragsage_term_stats", *(["ragsage_term_changes"] if pending else [])]
        union = " UNION ALL ".join(f"SELECT term, chunks FROM {table}" for table in tables)
        rows = await session.execute(
            text(f"SELECT term, sum(chunks) FROM ({union}) x GROUP BY term HAVING sum(chunks) <> 0")
        )
        return {str(term): int(chunks) for term, chunks in rows}
