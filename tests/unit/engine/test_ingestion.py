from __future__ import annotations

import pytest

from ragsage.core.documents import RawSource
from ragsage.core.errors import EmptyDocument, ParseError, UnsupportedFormat
from ragsage.core.identity import content_hash
from ragsage.core.scopes import Scope
from ragsage.ingestion import IngestionConfig
from ragsage.ingestion.parse_cache import parse_cache_key
from ragsage.query import RetrievalOptions
from ragsage.testing import FakeEngineKit

from .conftest import HANDBOOK, Ingest


async def test_every_stage_runs_and_the_document_becomes_searchable(
    kit: FakeEngineKit, scope: Scope, ingest: Ingest
) -> None:
    result = await ingest(HANDBOOK)

    assert not result.duplicate
    assert result.pages == 1 and result.chunks >= 3
    root = kit.tracer.spans[-1]
    assert [child.name for child in root.children] == [
        "parse",
        "classify",
        "chunk",
        "contextualize",
        "embed",
        "store",
    ]
    chunks = await kit.document_store.chunks(scope, result.document.id)
    assert [c.ordinal for c in chunks] == list(range(result.chunks))
    assert all(c.embed_text.startswith("Document: Employee handbook") for c in chunks)
    holiday = [c for c in chunks if "28 days" in c.text]
    assert holiday and holiday[0].heading_path == ("Employee handbook", "Holidays")

    hits = await kit.query_engine().search(scope, "how many days of paid holiday")
    assert hits.hits[0].chunk.id == holiday[0].id


async def test_contextualize_off_embeds_the_plain_text(
    kit: FakeEngineKit, scope: Scope, ingest: Ingest
) -> None:
    result = await ingest(
        HANDBOOK, config=IngestionConfig(chunk_size=40, chunk_overlap=5, contextualize=False)
    )
    chunks = await kit.document_store.chunks(scope, result.document.id)
    assert all(chunk.embed_text == chunk.text for chunk in chunks)
    assert kit.tracer.find_span("contextualize") is None


async def test_reingesting_changed_content_replaces_every_chunk(
    kit: FakeEngineKit, scope: Scope, ingest: Ingest
) -> None:
    small = await ingest(HANDBOOK, config=IngestionConfig(chunk_size=16, chunk_overlap=0))
    changed = HANDBOOK.replace("28 days", "30 days")
    large = await ingest(changed, config=IngestionConfig(chunk_size=200, chunk_overlap=0))

    assert large.document.id == small.document.id
    assert large.chunks < small.chunks
    assert await kit.query_engine().count(scope) == large.chunks
    # The old, finer chunking's tail must be gone from both retrievers.
    dense = await kit.vector_store.search(scope, (1.0,) * kit.embedder.dimension, k=100)
    lexical = await kit.lexical_store.search(scope, "holiday expenses security days", k=100)
    assert {c.chunk.ordinal for c in dense} == set(range(large.chunks))
    assert {c.chunk.ordinal for c in lexical} <= set(range(large.chunks))
    answer = await kit.query_engine().answer(scope, "how many days of paid holiday?")
    assert "30 days" in answer.text and "28 days" not in answer.text


async def test_identical_bytes_are_not_ingested_twice(
    kit: FakeEngineKit, scope: Scope, ingest: Ingest
) -> None:
    first = await ingest(HANDBOOK)
    embed_calls = len(kit.embedder.calls)
    again = await ingest(HANDBOOK, "copy-of-handbook.md")

    assert again.duplicate and again.document.id == first.document.id
    assert again.chunks == first.chunks
    assert len(kit.embedder.calls) == embed_calls
    assert len(await kit.document_store.list(scope)) == 1


async def test_same_bytes_in_another_namespace_never_hit_the_first_ones_cache_entry(
    kit: FakeEngineKit, scope: Scope, ingest: Ingest
) -> None:
    first = await ingest(HANDBOOK)
    other = Scope("globex")
    result = await ingest(HANDBOOK, into=other)

    # A hit would tell globex that acme holds this file.
    assert not result.duplicate and not result.parse_cache_hit
    assert await kit.query_engine().count(other) == result.chunks
    assert result.document.id != first.document.id
    # Within one namespace the cache still serves: the bytes again, once deleted.
    await kit.document_store.delete(scope, first.document.id)
    assert (await ingest(HANDBOOK)).parse_cache_hit


async def test_a_garbage_parse_cache_entry_is_a_miss_not_an_error(
    kit: FakeEngineKit, scope: Scope, ingest: Ingest
) -> None:
    key = parse_cache_key(scope.namespace, content_hash(HANDBOOK.encode()), kit.parser)
    await kit.cache.set(key, '{"v": 1, "pages": [{"number": "x"}]}')
    result = await ingest(HANDBOOK)
    assert not result.parse_cache_hit and result.chunks >= 3


async def test_a_scanned_page_is_transcribed_and_retrievable(
    kit: FakeEngineKit, scope: Scope, ingest: Ingest
) -> None:
    scan = b"Warranty claims must be filed within two years of delivery."
    result = await ingest(scan, "warranty-scan.png")

    assert result.vision_pages == 1
    assert kit.llm.transcribed[0].data == scan
    assert kit.tracer.find_span("vision") is not None
    answer = await kit.query_engine().answer(scope, "when must warranty claims be filed?")
    assert "two years" in answer.text
    assert answer.citations[0].source == "warranty-scan.png"


async def test_form_feeds_become_pages_with_page_numbers(
    kit: FakeEngineKit, scope: Scope, ingest: Ingest
) -> None:
    result = await ingest("Alpha apples grow here.\fBravo bananas ripen there.", "two.txt")
    hits = await kit.query_engine().search(scope, "bananas", RetrievalOptions(top_k=1))
    assert result.pages == 2
    assert hits.hits[0].chunk.page_numbers == (2,)


@pytest.mark.parametrize(
    ("content", "filename", "error", "message"),
    [
        (b"", "empty.md", EmptyDocument, "empty.md: the file is empty"),
        (b"   \n\n  ", "blank.txt", EmptyDocument, "blank.txt: the file contains only"),
        (b"\xff\xfe\x00garbage\x81", "notes.txt", ParseError, "notes.txt: not valid UTF-8"),
        (b"PK\x03\x04\xff\x00\x81binary", "deck.key", UnsupportedFormat, "deck.key: unsupported"),
    ],
)
async def test_bad_input_fails_with_the_file_named_and_stores_nothing(
    kit: FakeEngineKit,
    scope: Scope,
    ingest: Ingest,
    content: bytes,
    filename: str,
    error: type[Exception],
    message: str,
) -> None:
    with pytest.raises(error, match=message):
        await ingest(content, filename)
    assert await kit.query_engine().count(scope) == 0
    assert kit.tracer.spans[-1].error is not None


def test_ingestion_config_rejects_impossible_budgets() -> None:
    with pytest.raises(ValueError, match="chunk_overlap"):
        IngestionConfig(chunk_size=100, chunk_overlap=60)
    with pytest.raises(ValueError, match="chunk_size"):
        IngestionConfig(chunk_size=4)


async def test_prepare_writes_nothing_until_store_is_called(
    kit: FakeEngineKit, scope: Scope
) -> None:
    pipeline = kit.ingestion(IngestionConfig(chunk_size=40, chunk_overlap=5))
    prepared = await pipeline.prepare(scope, RawSource(HANDBOOK.encode(), "handbook.md"))

    assert len(prepared.records) >= 3
    assert all(len(r.vector) == kit.embedder.dimension for r in prepared.records)
    assert await kit.query_engine().count(scope) == 0

    result = await pipeline.store(scope, prepared)
    assert result.chunks == len(prepared.records)
    assert await kit.query_engine().count(scope) == result.chunks
    assert "store_ms" in result.timing_ms
    # Each stage reports the CPU it spent beside its duration.
    for stage in ("parse", "chunk", "contextualize", "embed", "store"):
        assert result.timing_ms[f"{stage}_cpu_ms"] >= 0, stage
