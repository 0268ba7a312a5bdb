"""The SQL and Python identifier splitters must agree, or the two stores drift apart."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from ragsage.adapters.postgres import Database
from ragsage.core.text import identifier_words

SAMPLES = [
    "Use os.path.join and concurrent.futures.ThreadPoolExecutor",
    "see /usr/lib/python3 and getLogger() HTTPServer __init__ x86_64 utf-8",
    "xml.etree.ElementTree.XMLParser(target=None) parseString() IOError",
    "a.b c::d::e ftp://host/path/to/file.txt plain words only",
    "",
]

_pieces = st.sampled_from(["get", "Logger", "HTTP", "Server", "x", "9", "_", ".", "/", ":", " "])


async def _sql(database: Database, value: str) -> str:
    async with database.owner_connection() as connection:
        result = await connection.scalar(text("SELECT ragsage_identifier_words(:t)"), {"t": value})
    return str(result)


async def test_sql_and_python_split_the_same_identifiers(db: Database) -> None:
    for sample in SAMPLES:
        assert await _sql(db, sample) == identifier_words(sample), sample


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(value=st.lists(_pieces, max_size=12).map("".join))
async def test_sql_and_python_agree_on_generated_text(db: Database, value: str) -> None:
    assert await _sql(db, value) == identifier_words(value)
