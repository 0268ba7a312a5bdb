"""The SQL and Python identifier splitters must agree, or the two stores drift apart."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from ragsage.adapters.postgres import Database
from ragsage.core.scopes import Scope
from ragsage.core.text import identifier_words

from . import helpers

SAMPLES = [
    "Use os.path.join and concurrent.futures.ThreadPoolExecutor",
    "see /usr/lib/python3 and getLogger() HTTPServer __init__ x86_64 utf-8",
    "xml.etree.ElementTree.XMLParser(target=None) parseString() IOError",
    "a.b c::d::e ftp://host/path/to/file.txt plain words only",
    "run_CONNECTING IndexMap::last_mut Files#method_added MAX_RETRY_COUNT _x__y_ a_ _b",
    "",
]

_pieces = st.sampled_from(["get", "Logger", "HTTP", "Server", "x", "9", "_", ".", "/", ":", " "])


async def _sql(database: Database, value: str) -> str:
    async with database.owner_connection() as connection:
        result = await connection.scalar(text("SELECT ragsage_name_words(:t)"), {"t": value})
    return str(result)


async def test_sql_and_python_split_the_same_identifiers(db: Database) -> None:
    for sample in SAMPLES:
        assert await _sql(db, sample) == identifier_words(sample), sample


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(value=st.lists(_pieces, max_size=12).map("".join))
async def test_sql_and_python_agree_on_generated_text(db: Database, value: str) -> None:
    assert await _sql(db, value) == identifier_words(value)


MARKDOWN_WITH_CODE = """# logging.handlers.RotatingFileHandler

Call `getLogger(__name__)` once per module; `os.path.join` builds the file name.

## HTTPServer and ThreadPoolExecutor

The server hands each request to a concurrent.futures.ThreadPoolExecutor and logs
through xml.etree.ElementTree when XMLParser fails (see /etc/hosts and x86_64 notes).

## Plain words

Nothing here names an identifier at all; it is only prose about rivers and hills.
"""


async def test_the_writer_stores_the_keyword_column_the_database_would_compute(
    db: Database,
) -> None:
    # Storage migration 25: the writer splits identifiers itself; the column must
    # come out exactly as the database's own split would make it.
    kit = helpers.kit()
    scope = Scope("lexical-writer")
    await helpers.ingest(db, kit, scope, MARKDOWN_WITH_CODE, "handlers.md", chunk_size=30)
    async with db.session(scope) as session:
        rows = (
            await session.execute(
                text(
                    "SELECT count(*), count(*) FILTER (WHERE lexical = ragsage_chunk_lexical("
                    "headings, ragsage_name_words(headings), text, "
                    "ragsage_name_words(text))), "
                    "count(*) FILTER (WHERE headings LIKE '%RotatingFileHandler%') "
                    "FROM ragsage_chunks"
                )
            )
        ).one()
    total, same, under_heading = rows
    assert total >= 3 and same == total and under_heading >= 1
    lexical = helpers.stores(db, kit).lexical
    (hit, *_) = await lexical.search(scope, "rotating file handler", k=3)
    assert "RotatingFileHandler" in " ".join(hit.chunk.heading_path)
