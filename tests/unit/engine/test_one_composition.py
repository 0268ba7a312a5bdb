"""The five callers that run the engine get it from one composition, with named differences.

Each caller is built as it is in use, from the default settings where it reads
any, and described port by port.  What differs from the offline set
(:func:`ragsage.runtime.offline_ports`) must be exactly what docs/architecture.md
lists under "One engine, five callers", so a new difference is either
documented with its reason or removed.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragsage import RAG
from ragsage.cli.evaluation.backends import memory_engine
from ragsage.cli.local import local_kit
from ragsage.ingestion import IngestionPipeline
from ragsage.library.shipit import HashingEmbedder, HybridSearchPipeline, InMemoryVectorStore
from ragsage.query import QueryEngine
from ragsage.runtime import build_runtime, compose, make_embedder, offline_ports
from ragsage.settings import Settings

DOCS = Path(__file__).resolve().parents[3] / "docs" / "architecture.md"
Description = dict[str, str]


def _name(port: object | None) -> str:
    return "none" if port is None else type(port).__name__


def describe(pipeline: IngestionPipeline | None, engine: QueryEngine) -> Description:
    """Each port by its class (and the settings that shape it), and both configs."""
    llm = engine.llm
    seen = {
        "embedder": engine.embedder.model,
        "llm": _name(getattr(llm, "generator", llm)),
        "transcriber": _name(getattr(llm, "transcriber", llm)),
        "stores": ", ".join(
            _name(s) for s in (engine.vector_store, engine.lexical_store, engine.document_store)
        ),
        "reranker": _name(engine.reranker),
        "rewriter": _name(engine.rewriter),
        "tracer": _name(engine.tracer),
        "query config": repr(engine.config),
    }
    if pipeline is None:
        return seen
    # One set of ports: what the pipeline writes is what the engine reads.
    assert pipeline.embedder is engine.embedder and pipeline.llm is engine.llm
    assert type(pipeline.vector_store) is type(engine.vector_store)
    parser, contextualizer = pipeline.parser, pipeline.contextualizer
    return seen | {
        "parser": f"{_name(parser)}({getattr(parser, 'code_chunking', '')})",
        "classifier": _name(pipeline.classifier),
        "chunker": "the parser" if pipeline.chunker is parser else _name(pipeline.chunker),
        "contextualizer": f"{_name(contextualizer)}({getattr(contextualizer, 'window', '')})",
        "cache": _name(pipeline.cache),
        "ingestion config": repr(pipeline.config),
    }


def _runtime(settings: Settings) -> Iterator[Description]:
    runtime = build_runtime(settings)
    try:
        yield describe(runtime.pipeline(), runtime.query_engine())
    finally:
        asyncio.run(runtime.aclose())


def _memory_kit() -> Iterator[Description]:
    kit = local_kit()  # as `ragsage ingest` and `ragsage query` build it
    yield describe(kit.ingestion(), kit.query_engine())


def _facade() -> Iterator[Description]:
    with RAG.default() as rag:
        backend = rag._backend  # the LocalBackend RAG.__init__ composed
        yield describe(asyncio.run(backend.pipeline()), backend._engine)  # type: ignore[attr-defined]


def _evaluation(settings: Settings) -> Iterator[Description]:
    chosen = settings.replace(embedder="hashing", embedding_model="")  # as `ragsage eval` does
    embedder = make_embedder(chosen, chosen.embedder, chosen.embedding_model_name, None)
    built = memory_engine(chosen, embedder, contextualize=True)
    yield describe(built.ingestion, built.query)


def _shipit() -> Iterator[Description]:
    pipeline = HybridSearchPipeline(InMemoryVectorStore(), HashingEmbedder())
    try:
        yield describe(None, pipeline.engine)
    finally:
        pipeline.close()


def documented_differences() -> set[tuple[str, str]]:
    """(caller, port) for each row of the docs' table of differences."""
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("## One engine, five callers", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| ([a-z ]+) \| ([a-z ]+) \|", section, flags=re.MULTILINE)
    return {(caller, port) for caller, port in rows if caller != "caller"}


@pytest.fixture
def settings() -> Settings:
    # The defaults, with no keys: a database URL that is never dialled, no OCR binary,
    # and the hashing embedder (``auto`` picks the local model where it is installed).
    return Settings.from_env(
        {},
        database_url="postgresql://nobody@127.0.0.1:1/none",
        transcriber="none",
        embedder="hashing",
    )


def test_every_caller_differs_from_the_offline_set_only_where_the_docs_say(
    settings: Settings,
) -> None:
    offline = compose(offline_ports())
    baseline = describe(offline.ingestion, offline.query)
    callers = {
        "runtime": _runtime(settings),
        "memory kit": _memory_kit(),
        "facade": _facade(),
        "evaluation": _evaluation(settings),
        "shipit": _shipit(),
    }
    found: set[tuple[str, str]] = set()
    for caller, described in callers.items():
        for seen in described:
            found |= {(caller, port) for port, value in seen.items() if value != baseline[port]}
    assert sorted(found) == sorted(documented_differences())


def test_the_documents_table_is_read() -> None:
    # The comparison above is only as good as this parse of the docs' table.
    assert ("facade", "reranker") in documented_differences()
