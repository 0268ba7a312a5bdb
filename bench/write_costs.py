"""What each part of a chunk row costs Postgres to write, on real chunks.

    python bench/write_costs.py [--doc-root /usr/share/doc] [--variants NAME,...]

Ingests the real HTML pages under ``--doc-root`` through the queue, as
``bench/real_corpus.py`` does (2 worker processes, hashing embedder,
contextualizer on), into an embedded Postgres started for the run.  Then it
replays the same chunk rows, one document per statement and transaction as the
workers write them, into copies of ``ragsage_chunks`` with one part of the
write taken away at a time: the HNSW index, the keyword column and its GIN
index, the identifier split, the other indexes.  For each copy it prints the
wall time and the server backend's CPU seconds of the replay; the difference
from the full copy is what that part costs.  One backend does all the work on
an otherwise idle server, so its CPU is the write's whole cost.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import psycopg
import site_chrome
from real_corpus import ingest, own_cpu
from stack import local_stack

from ragsage.library.enqueue import Enqueuer

_ROW = (
    "namespace, generation, document_id, ordinal, text, embed_text, heading_path, headings, "
    "page_numbers, metadata, source, created_at, embedding_model, embedding_dim, embedding, "
    "start_char, end_char, access"
)
_FULL = "ragsage_chunk_lexical(headings, heading_words, text, text_words)"
_IN_DATABASE = (
    "ragsage_chunk_lexical(headings, ragsage_identifier_words(headings), text, "
    "ragsage_identifier_words(text))"
)
_PLAIN = (
    "setweight(to_tsvector('english', headings), 'A') || "
    "setweight(to_tsvector('english', text), 'D')"
)
# name: (indexes dropped from the copy, keyword column expression or None)
VARIANTS: dict[str, tuple[tuple[str, ...], str | None]] = {
    "as written (words split by the writer)": ((), _FULL),
    "words split by the database (before migration 25)": ((), _IN_DATABASE),
    "no HNSW index": (("hnsw",), _FULL),
    "no keyword GIN index": (("lexical",), _FULL),
    "keyword column without identifier words": ((), _PLAIN),
    "no keyword column, no GIN": (("lexical",), None),
    "no access-list GIN": (("ragsage_readers",), _FULL),
    "no (namespace, document) btree": (("document_id, generation",), _FULL),
    "no index but the primary key and no keyword column": (
        ("hnsw", "lexical", "ragsage_readers", "document_id, generation"),
        None,
    ),
}


def replay(connection: psycopg.Connection, dropped: tuple[str, ...], lexical: str | None) -> None:
    connection.execute("DROP TABLE IF EXISTS bench_copy")
    connection.execute(
        "CREATE TABLE bench_copy (LIKE ragsage_chunks INCLUDING DEFAULTS INCLUDING "
        "CONSTRAINTS INCLUDING INDEXES INCLUDING STORAGE)"
    )
    indexes = connection.execute(
        "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'bench_copy'"
    ).fetchall()
    for name, definition in indexes:
        if not name.endswith("_pkey") and any(part in definition for part in dropped):
            connection.execute(f'DROP INDEX "{name}"')
    if lexical is None:
        connection.execute("ALTER TABLE bench_copy DROP COLUMN lexical")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--doc-root", type=Path, default=Path("/usr/share/doc"))
    parser.add_argument("--variants", help="comma-separated names (default: all)")
    args = parser.parse_args()
    chosen = args.variants.split(",") if args.variants else list(VARIANTS)
    pages = site_chrome.html_pages(args.doc_root)
    with local_stack("writes") as stack:
        migrator = Enqueuer(stack.settings)
        migrator.run(migrator.database.migrate())
        migrator.close()
        ingest(stack.settings, pages, args.doc_root, 2, stack.directory / "worker.log")
        with psycopg.connect(stack.owner_url, autocommit=True) as connection:
            connection.execute(
                f"CREATE TABLE bench_rows AS SELECT {_ROW}, "
                "ragsage_identifier_words(headings) AS heading_words, "
                "ragsage_identifier_words(text) AS text_words FROM ragsage_chunks"
            )
            documents = [
                row[0]
                for row in connection.execute(
                    "SELECT DISTINCT document_id FROM bench_rows ORDER BY 1"
                )
            ]
            rows = connection.execute("SELECT count(*) FROM bench_rows").fetchone()
            print(f"{rows[0] if rows else 0} chunk rows of {len(documents)} documents")
            pid = int(connection.execute("SELECT pg_backend_pid()").fetchone()[0])  # type: ignore[index]
            for name in chosen:
                dropped, lexical = VARIANTS[name]
                replay(connection, dropped, lexical)
                into = f"{_ROW}, lexical" if lexical else _ROW
                select = f"{_ROW}, {lexical}" if lexical else _ROW
                cpu, started = own_cpu(pid), time.perf_counter()
                for document in documents:
                    connection.execute(
                        f"INSERT INTO bench_copy ({into}) SELECT {select} FROM bench_rows "
                        "WHERE document_id = %s",
                        (document,),
                    )
                wall = time.perf_counter() - started
                print(
                    f"{name:52s} wall {wall:6.2f} s  server CPU {own_cpu(pid) - cpu:6.2f} s",
                    flush=True,
                )


if __name__ == "__main__":
    main()
