from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ragsage.core.conversations import Turn
from ragsage.core.errors import InvalidRequest
from ragsage.core.filters import SearchFilters
from ragsage.core.scopes import Scope
from ragsage.query import CitationsEvent, DoneEvent, RetrievalOptions, TokenEvent
from ragsage.testing import FakeEngineKit, FakeLLMClient

from .conftest import HANDBOOK, Ingest

PRICING = """# Pricing

The Pro plan costs 49 euros per month and includes priority support.
The Team plan costs 199 euros per month for up to twenty seats.
"""


async def test_answer_streams_tokens_then_the_citations_actually_used(
    kit: FakeEngineKit, scope: Scope, ingest: Ingest
) -> None:
    await ingest(HANDBOOK)
    await ingest(PRICING, "pricing.md")
    events = [
        e async for e in kit.query_engine().stream_answer(scope, "How much does the Pro plan cost?")
    ]

    tokens = [e for e in events if isinstance(e, TokenEvent)]
    assert isinstance(events[-2], CitationsEvent) and isinstance(events[-1], DoneEvent)
    assert all(isinstance(e, TokenEvent) for e in events[: len(tokens)])
    answer = "".join(t.text for t in tokens)
    assert "49 euros" in answer and "[1]" in answer
    citations = events[-2].citations
    assert [c.source for c in citations] == ["pricing.md"]
    assert citations[0].number == 1 and "49 euros" in citations[0].text
    assert not events[-1].not_found


async def test_a_question_the_documents_cannot_answer_is_not_found(
    kit: FakeEngineKit, scope: Scope, ingest: Ingest
) -> None:
    await ingest(HANDBOOK)
    engine = kit.query_engine()
    prompts_before = len(kit.llm.prompts)

    for options in (RetrievalOptions(), RetrievalOptions(rerank=False)):
        answer = await engine.answer(
            scope, "What is the boiling point of mercury?", options=options
        )
        assert answer.not_found
        assert answer.text == engine.config.not_found_message
        assert answer.citations == ()
    # The model is never asked to answer from nothing.
    assert len(kit.llm.prompts) == prompts_before


async def test_an_empty_namespace_is_not_found(kit: FakeEngineKit, scope: Scope) -> None:
    answer = await kit.query_engine().answer(scope, "What is the holiday allowance?")
    assert answer.not_found


async def test_small_talk_gets_a_reply_without_retrieval(
    kit: FakeEngineKit, scope: Scope, ingest: Ingest
) -> None:
    await ingest(HANDBOOK)
    answer = await kit.query_engine().answer(scope, "Hello there, thanks!")

    assert answer.small_talk and not answer.not_found
    assert answer.text == FakeLLMClient.SMALL_TALK_REPLY
    assert answer.citations == ()
    assert kit.tracer.find_span("dense") is None and kit.tracer.find_span("lexical") is None


async def test_a_greeting_with_a_question_still_retrieves(
    kit: FakeEngineKit, scope: Scope, ingest: Ingest
) -> None:
    await ingest(HANDBOOK)
    answer = await kit.query_engine().answer(scope, "Hi! How many days of paid holiday do I get?")
    assert not answer.small_talk and "28 days" in answer.text


async def test_a_follow_up_is_rewritten_against_the_conversation(
    kit: FakeEngineKit, scope: Scope, ingest: Ingest
) -> None:
    await ingest(HANDBOOK)
    await ingest(PRICING, "pricing.md")
    history = [
        Turn("user", "Tell me about the Team plan"),
        Turn("assistant", "The Team plan is for larger groups [1]."),
    ]
    engine = kit.query_engine()

    alone = await engine.answer(scope, "How many seats does it include?")
    followed = await engine.answer(scope, "How many seats does it include?", history=history)

    assert "team" in followed.query.lower()
    assert "twenty seats" in followed.text
    assert followed.citations[0].source == "pricing.md"
    assert alone.query == "How many seats does it include?"


async def test_filters_restrict_candidates_before_ranking(
    kit: FakeEngineKit, scope: Scope, ingest: Ingest
) -> None:
    handbook = await ingest(HANDBOOK)
    pricing = await ingest(PRICING, "pricing.md")
    engine = kit.query_engine()
    question = "euros per month per day"

    everything = await engine.search(scope, question, RetrievalOptions(top_k=10))
    by_id = await engine.search(
        scope,
        question,
        RetrievalOptions(
            top_k=10, filters=SearchFilters(document_ids=frozenset({handbook.document.id}))
        ),
    )
    by_source = await engine.search(
        scope, question, RetrievalOptions(filters=SearchFilters(sources=frozenset({"pricing.md"})))
    )
    by_title = await engine.search(
        scope, question, RetrievalOptions(filters=SearchFilters(metadata={"title": "Pricing"}))
    )

    assert {h.chunk.source for h in everything.hits} == {"handbook.md", "pricing.md"}
    assert {h.chunk.document_id for h in by_id.hits} == {handbook.document.id}
    assert {h.chunk.document_id for h in by_source.hits} == {pricing.document.id}
    assert {h.chunk.document_id for h in by_title.hits} == {pricing.document.id}


async def test_time_range_filter_and_recency_bias(
    kit: FakeEngineKit, scope: Scope, ingest: Ingest
) -> None:
    now = datetime.now(UTC)
    await ingest(
        "Backup policy: nightly backups are kept for 7 days. Backup policy applies.",
        "old.md",
        created_at=now - timedelta(days=400),
    )
    await ingest(
        "Backup policy: nightly backups are kept for 90 days.",
        "new.md",
        created_at=now - timedelta(days=1),
    )
    engine = kit.query_engine()
    recent_only = SearchFilters(created_after=now - timedelta(days=30))

    filtered = await engine.search(scope, "backup policy", RetrievalOptions(filters=recent_only))
    biased = await engine.search(
        scope, "backup policy", RetrievalOptions(rerank=False, recency_bias=True)
    )
    unbiased = await engine.search(scope, "backup policy", RetrievalOptions(rerank=False))

    assert [h.chunk.source for h in filtered.hits] == ["new.md"]
    assert unbiased.hits[0].chunk.source == "old.md"
    assert biased.hits[0].chunk.source == "new.md"
    new_biased = next(h.score for h in biased.hits if h.chunk.source == "new.md")
    old_biased = next(h.score for h in biased.hits if h.chunk.source == "old.md")
    old_plain = next(h.score for h in unbiased.hits if h.chunk.source == "old.md")
    assert new_biased > old_biased and old_biased < old_plain


async def test_context_expansion_adds_neighbours_in_reading_order(
    kit: FakeEngineKit, scope: Scope, ingest: Ingest
) -> None:
    await ingest(HANDBOOK)
    engine = kit.query_engine()
    plain = await engine.search(
        scope, "reimbursed receipt finance portal", RetrievalOptions(top_k=1)
    )
    hit = plain.hits[0]
    expanded = await engine.search(
        scope,
        "reimbursed receipt finance portal",
        RetrievalOptions(top_k=1, chunks_above=1, chunks_below=1),
    )
    wide = expanded.hits[0]

    assert wide.chunk.id == hit.chunk.id
    assert [c.ordinal for c in wide.above] == [hit.chunk.ordinal - 1]
    assert [c.ordinal for c in wide.below] == [hit.chunk.ordinal + 1]
    assert wide.context_text.index(hit.chunk.text) > 0

    fetched = await engine.fetch_chunk(scope, hit.chunk.id, chunks_above=5, chunks_below=0)
    assert fetched is not None and fetched.chunk == hit.chunk
    assert [c.ordinal for c in fetched.above] == list(range(0, hit.chunk.ordinal))
    assert await engine.fetch_chunk(scope, "doc_missing:0") is None


async def test_hybrid_alpha_chooses_between_retrievers(
    kit: FakeEngineKit, scope: Scope, ingest: Ingest
) -> None:
    await ingest(HANDBOOK)
    engine = kit.query_engine()
    dense_only = await engine.search(scope, "encryption", RetrievalOptions(hybrid_alpha=1.0))
    lexical_only = await engine.search(scope, "encryption", RetrievalOptions(hybrid_alpha=0.0))

    assert all(h.keyword_score is None for h in dense_only.hits)
    assert "keyword_ms" not in dense_only.timing_ms
    assert all(h.vector_score is None for h in lexical_only.hits)
    assert "embed_ms" not in lexical_only.timing_ms and "vector_ms" not in lexical_only.timing_ms
    assert "encryption" in dense_only.hits[0].chunk.text
    assert "encryption" in lexical_only.hits[0].chunk.text


async def test_search_reports_scores_per_stage_and_timings(
    kit: FakeEngineKit, scope: Scope, ingest: Ingest
) -> None:
    await ingest(HANDBOOK)
    result = await kit.query_engine().search(scope, "lost laptop security desk")
    top = result.hits[0]

    assert "security desk" in top.chunk.text
    assert top.vector_score is not None and top.keyword_score is not None
    assert top.rerank_score is not None and top.rerank_score >= 0.3
    assert {"embed_ms", "vector_ms", "keyword_ms", "fusion_ms", "rerank_ms", "total_ms"} <= set(
        result.timing_ms
    )
    assert result.total_found >= len(result.hits)


async def test_namespaces_never_see_each_other(
    kit: FakeEngineKit, scope: Scope, ingest: Ingest
) -> None:
    await ingest(HANDBOOK)
    other = Scope("globex")
    engine = kit.query_engine()

    assert (await engine.answer(other, "How many days of paid holiday?")).not_found
    assert await engine.count(other) == 0 and await engine.list_sources(other) == []
    assert await engine.list_sources(scope) == ["handbook.md"]


async def test_every_span_of_a_query_carries_the_tenant(
    kit: FakeEngineKit, scope: Scope, ingest: Ingest
) -> None:
    await ingest(HANDBOOK)
    await kit.query_engine().answer(
        scope, "what about expenses?", history=[Turn("user", "travel meals abroad")]
    )
    spans = kit.tracer.all_spans()
    names = {span.name for span in spans}

    assert {
        "ingest",
        "parse",
        "embed",
        "store",
        "answer",
        "rewrite",
        "dense",
        "lexical",
        "fuse",
        "rerank",
        "expand",
        "generate",
    } <= names
    assert {span.tenant for span in spans} == {"acme"}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"top_k": 0}, "top_k"),
        ({"hybrid_alpha": 1.5}, "hybrid_alpha"),
        ({"recency_half_life_days": 0}, "recency_half_life_days"),
        ({"chunks_above": 11}, "chunks_above"),
        ({"top_k": 10, "candidates": 5}, "candidates"),
    ],
)
def test_out_of_range_options_are_rejected_by_name(options: dict[str, float], message: str) -> None:
    with pytest.raises(InvalidRequest, match=message):
        RetrievalOptions(**options)  # type: ignore[arg-type]


async def test_an_oversized_question_is_rejected_and_a_blank_one_finds_nothing(
    kit: FakeEngineKit, scope: Scope, ingest: Ingest
) -> None:
    await ingest(HANDBOOK)
    with pytest.raises(InvalidRequest, match="8,000"):
        await kit.query_engine().answer(scope, "x" * 8001)
    blank = await kit.query_engine().answer(scope, " \t\x1c ")
    assert blank.not_found and blank.citations == ()


async def test_a_passage_sharing_one_word_of_four_is_not_an_answer(
    kit: FakeEngineKit, scope: Scope, ingest: Ingest
) -> None:
    # "year" is in the handbook; the question is about something it never says.
    await ingest(HANDBOOK)
    answer = await kit.query_engine().answer(scope, "Which submarine sank that stormy year?")
    assert answer.not_found and not answer.citations
    # Sharing most of the question's words still answers.
    found = await kit.query_engine().answer(scope, "How many days of paid holiday per year?")
    assert not found.not_found and "28 days" in found.text


def _pool_source() -> str:
    # A source file shaped like a real one: a short helper that answers the
    # question, and a long function that repeats its words while doing much else.
    notes = "\n".join(
        "    # The pool keeps one slot per host and hands it back when the caller closes it."
        for _ in range(3)
    )
    steps = "\n".join(
        f"        log.warning('connection to %s failed; wait before retrying', host)\n"
        f"        stats.failures[{i}] += 1\n"
        f"        if stats.failures[{i}] > limit:\n"
        f"            raise PoolExhausted(host, stats.failures[{i}])"
        for i in range(8)
    )
    return (
        "import logging\n\nlog = logging.getLogger(__name__)\n\n\n"
        "def retry_delay(attempt: int) -> float:\n"
        '    """Wait before retrying a failed connection: doubling, at most 30 s."""\n'
        "    return min(30.0, 0.5 * 2**attempt)\n\n\n"
        "def open_connection(host, stats, limit):\n"
        '    """Open a pooled connection to host; a failed connection is retried after a wait."""\n'
        f"{notes}\n"
        "    for n in range(limit):\n"
        f"{steps}\n"
        "        time.sleep(retry_delay(n))\n"
        "    return Connection(host)\n"
    )


async def test_long_code_passages_are_scaled_by_their_length_unless_ranks_were_fused() -> None:
    from ragsage.core.documents import RawSource
    from ragsage.ingestion import IngestionConfig
    from ragsage.query import QueryConfig
    from ragsage.runtime.composition import offline_ports
    from ragsage.runtime.memory_kit import MemoryKit

    # The real readers and chunker: the file is cut along its definitions.
    ports = offline_ports()
    kit = MemoryKit(
        parser=ports.parser,
        classifier=ports.classifier,
        chunker=ports.chunker,
        contextualizer=ports.contextualizer,
    )
    scope = Scope("acme")
    await kit.ingestion(IngestionConfig()).ingest(
        scope, RawSource(_pool_source().encode(), "pool.py")
    )
    question = "how long to wait before retrying a failed connection"
    options = RetrievalOptions(rerank=False, top_k=5)

    async def search(config: QueryConfig, chosen: RetrievalOptions = options) -> dict[str, float]:
        found = await kit.query_engine(config).search(scope, question, chosen)
        scores = [hit.score for hit in found.hits]
        assert scores == sorted(scores, reverse=True)  # the order follows the scores shown
        return {hit.chunk.text: hit.score for hit in found.hits}

    plain = await search(QueryConfig(code_length_exponent=0.0))
    concise = await search(QueryConfig())
    assert concise.keys() == plain.keys()
    long = [text for text in plain if len(text.split()) > 100]
    assert long and any("def open_connection" in text for text in long)
    for text, score in plain.items():
        words = len(text.split())
        factor = (100 / words) ** 0.3 if words > 100 else 1.0
        assert concise[text] == pytest.approx(score * factor)
    # min_score is checked on the fused score: the long function clears it though
    # its scaled score is lower.
    (top,) = [text for text in long if "def open_connection" in text]
    kept = await search(QueryConfig(), RetrievalOptions(rerank=False, min_score=plain[top]))
    assert top in kept and kept[top] < plain[top]
    # Fused by ranks, whose scores sit too close together to scale, nothing is.
    assert await search(QueryConfig(fusion="rrf")) == await search(
        QueryConfig(fusion="rrf", code_length_exponent=0.0)
    )
