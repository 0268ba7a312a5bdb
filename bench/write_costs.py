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

``--reindex`` instead compares two ways a re-index with unchanged chunking can
write a second generation of the same rows with new vectors (unrelated ones:
the same words hashed with another seed): copying each whole row with its new
vector into the chunk table, as ragsage does, or writing only the key and the
vector into a table of vectors kept apart from the text (the design a re-index
would favour, at the cost of a join on every search).  Each table first holds
the first generation, so the indexes are as big as in a real re-index.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import psycopg
import site_chrome
from real_corpus import ingest, own_cpu
from stack import local_stack

from ragsage.jobs.enqueue import Enqueuer

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


_KEY = "namespace, generation, document_id, ordinal"
_KEPT = (
    "document_id, ordinal, text, embed_text, heading_path, headings, page_numbers, metadata, "
    "source, created_at, embedding_model, embedding_dim, start_char, end_char, access, lexical"
)
REINDEX_DESIGNS = {
    "re-index: whole rows copied with new vectors (as shipped)": (
        "INSERT INTO bench_copy (namespace, generation, embedding, "
        + _KEPT
        + ") SELECT c.namespace, 2, n.embedding, "
        + ", ".join(f"c.{column.strip()}" for column in _KEPT.split(","))
        + " FROM bench_copy c JOIN bench_new n USING (document_id, ordinal) "
        "WHERE c.generation = 1 AND c.document_id = %s"
    ),
    "re-index: key and vector only, in a table apart": (
        f"INSERT INTO bench_vectors ({_KEY}, embedding_dim, embedding) "
        "SELECT c.namespace, 2, c.document_id, c.ordinal, c.embedding_dim, n.embedding "
        "FROM bench_vectors c JOIN bench_new n USING (document_id, ordinal) "
        "WHERE c.generation = 1 AND c.document_id = %s"
    ),
}


def prepare_reindex(connection: psycopg.Connection) -> None:
    """Both tables with the first generation in them, and the new vectors to write."""
    from pgvector.psycopg import register_vector

    from ragsage.adapters.offline.hashing import hashed_vector

    register_vector(connection)
    replay(connection, (), _FULL)
    connection.execute(
        f"INSERT INTO bench_copy ({_ROW}, lexical) SELECT {_ROW}, {_FULL} FROM bench_rows"
    )
    connection.execute("DROP TABLE IF EXISTS bench_vectors")
    connection.execute(
        f"CREATE TABLE bench_vectors AS SELECT {_KEY}, embedding_dim, embedding FROM bench_rows"
    )
    connection.execute(f"ALTER TABLE bench_vectors ADD PRIMARY KEY ({_KEY})")
    (hnsw,) = connection.execute(
        "SELECT indexdef FROM pg_indexes WHERE tablename = 'bench_copy' "
        "AND indexdef LIKE '%USING hnsw%'"
    ).fetchone() or ("",)
    connection.execute(
        hnsw.replace("ON public.bench_copy", "ON public.bench_vectors").replace(
            "INDEX ", "INDEX bench_vectors_", 1
        )
    )
    connection.execute("DROP TABLE IF EXISTS bench_new")
    connection.execute(
        "CREATE TABLE bench_new (document_id text, ordinal integer, embedding vector)"
    )
    rows = connection.execute(
        "SELECT document_id, ordinal, embed_text, embedding_dim FROM bench_rows"
    ).fetchall()
    with (
        connection.cursor() as cursor,
        cursor.copy("COPY bench_new FROM STDIN (FORMAT BINARY)") as copy,
    ):
        copy.set_types(["text", "int4", "vector"])
        for document_id, ordinal, embed_text, width in rows:
            dense = [0.0] * width
            for index, weight in hashed_vector(embed_text, width, seed="reindex").items():
                dense[index] = weight
            copy.write_row((document_id, ordinal, dense))
    connection.execute("CREATE INDEX ON bench_new (document_id, ordinal)")
    connection.execute("ANALYZE bench_copy, bench_vectors, bench_new")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--doc-root", type=Path, default=Path("/usr/share/doc"))
    parser.add_argument("--variants", help="comma-separated names (default: all)")
    parser.add_argument(
        "--reindex", action="store_true", help="compare the two re-index writes instead"
    )
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
            if args.reindex:
                prepare_reindex(connection)
                for name, statement in REINDEX_DESIGNS.items():
                    cpu, started = own_cpu(pid), time.perf_counter()
                    for document in documents:
                        connection.execute(statement, (document,))
                    wall = time.perf_counter() - started
                    print(
                        f"{name:58s} wall {wall:6.2f} s  server CPU {own_cpu(pid) - cpu:6.2f} s",
                        flush=True,
                    )
                return
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
