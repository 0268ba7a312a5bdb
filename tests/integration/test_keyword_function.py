"""The keyword search function on real documents, for every kind of query.

A search must return the same chunks with the same ranks, best first, whether
the namespace's term counts were folded into their totals or are still changes
pending from writers that found the fold lock taken.  (Migration 19 proved the
planned function ranked as migration 16's did, comparing the two while both
were installed; migration 20 retired the old one, and the schema comparison of
``test_storage`` holds today's body to that one.)
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from sqlalchemy import text

from ragsage.adapters.postgres import Database
from ragsage.core.scopes import Scope

from . import helpers

ACME = Scope("acme")
FIXTURES = Path(__file__).parents[1]
DOCUMENTS = sorted((FIXTURES / "fixtures/eval/qa-tiny/documents").rglob("*.*"))
SOURCES = sorted(
    path
    for path in (FIXTURES / "unit/parsing/source_fixtures").iterdir()
    if path.suffix in {".go", ".py", ".ts", ".rs", ".java"}
)
_ARGUMENTS = (
    ":query, :syntax, 40, :common, 250, CAST(:ids AS text[]), NULL, NULL, NULL, NULL, :weighted"
)
_SYNTAX = re.compile(r'"|(^|\s)-\w|\sOR\s')


def _queries() -> list[str]:
    questions = FIXTURES / "fixtures/eval/qa-tiny/questions.jsonl"
    asked = [json.loads(line)["question"] for line in questions.read_text().splitlines()]
    # Sentences copied from the pages, as people paste them into a search box.
    copied = [
        sentence.strip()
        for path in DOCUMENTS
        for sentence in re.split(r"(?<=[.!?])\s+", path.read_text())[:3]
        if len(sentence.split()) > 3
    ]
    return [
        *asked,
        *copied,
        "ErrOverdrawn balance ledger",
        "os.path.join getLogger retry_failed_upload",
        '"reimbursed up to" -paris',
        "refund OR deploy",
        "the and of",
        "euros",
    ]


async def _rows(db: Database, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    call = f"ragsage_keyword_search({_ARGUMENTS}, NULL, 10)"
    async with db.session(ACME) as session:
        found = await session.execute(
            text(f"SELECT document_id, ordinal, rank FROM {call}"), params
        )
        return [tuple(row) for row in found]


async def test_folded_and_pending_term_counts_rank_alike(db: Database) -> None:
    kit = helpers.kit()
    for path in [*DOCUMENTS, *SOURCES]:
        await helpers.ingest(db, kit, ACME, path.read_text(), path.name, chunk_size=60)
    cases = [
        {
            "query": query,
            "syntax": bool(_SYNTAX.search(query)),
            "common": common,
            "weighted": weighted,
            "ids": None,
        }
        # 3 makes most terms common, so the all-common path runs as often as the rare one.
        for common in (500, 3)
        for query in _queries()
        for weighted in (True, False)
    ]
    folded = [await _rows(db, params) for params in cases]
    async with db.owner_connection() as connection:
        # As if every write had found the lock taken: the totals become changes,
        # split over two transactions' keys, and nothing is folded.
        await connection.execute(
            text(
                "INSERT INTO ragsage_term_changes (namespace, generation, term, batch, chunks) "
                "SELECT namespace, generation, term, b, CASE WHEN b = 1 THEN chunks - chunks / 2 "
                "ELSE chunks / 2 END FROM ragsage_term_stats, (VALUES (1), (2)) v(b)"
            )
        )
        await connection.execute(text("DELETE FROM ragsage_term_stats"))
    pending = [await _rows(db, params) for params in cases]
    assert folded == pending
    unordered = [
        params["query"]
        for params, rows in zip(cases, folded, strict=True)
        if [row[2] for row in rows] != sorted((row[2] for row in rows), reverse=True)
    ]
    assert unordered == []
    assert sum(bool(rows) for rows in folded) > 60  # most queries found something


async def test_rows_past_carried_come_back_without_their_chunk(db: Database) -> None:
    kit = helpers.kit()
    for path in DOCUMENTS:
        await helpers.ingest(db, kit, ACME, path.read_text(), path.name, chunk_size=60)
    async with db.session(ACME) as session:
        rows = (
            await session.execute(
                text(
                    "SELECT document_id, chunk_text, source, rank FROM ragsage_keyword_search("
                    "'refund deploy hotel euros', false, 10, 500, 250, NULL, NULL, NULL, NULL, "
                    "NULL, true, NULL, 2)"
                )
            )
        ).all()
    assert len(rows) > 2
    assert all(row[1] and row[2] for row in rows[:2])
    assert all(row[1] is None and row[2] is None for row in rows[2:])
    assert [row[3] for row in rows] == sorted((row[3] for row in rows), reverse=True)
