"""Source tracking: numbering within a run, and isolation across threads and tasks."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest

from ragsage import RAG
from ragsage.library import SourceTrackingError

TOPICS = 12


@pytest.fixture(scope="module")
def corpus() -> Iterator[RAG]:
    with RAG.default() as rag:
        rag.index_documents(
            {
                "id": f"d{n}",
                "content": f"# Topic {n}\n\nWord{n} appears here. Word{n} is the subject of d{n}.",
                "source": f"d{n}.md",
            }
            for n in range(TOPICS)
        )
        yield rag


def test_sources_are_numbered_in_first_seen_order(corpus: RAG) -> None:
    corpus.begin_run()
    first = corpus.search("word3", filters={"document_ids": ["d3"]})
    second = corpus.search("word5 word3", filters={"document_ids": ["d3", "d5"]})
    corpus.fetch_chunk("d7:0")
    peek = corpus.current_sources()
    sources = corpus.end_run()

    assert [s.chunk_id for s in sources] == ["d3:0", "d5:0", "d7:0"]
    assert [s.index for s in sources] == [1, 2, 3]
    assert peek == sources
    assert first.citations == (1,)
    # d3:0 keeps number 1 when it comes back; d5:0 is new and gets 2.
    assert dict(zip((h.chunk.id for h in second.results), second.citations, strict=True)) == {
        "d3:0": 1,
        "d5:0": 2,
    }
    source = sources[0]
    assert source.document_id == "d3" and source.source == "d3.md"
    assert source.title == "Topic 3" and "Word3 appears" in source.text
    assert source.to_dict()["index"] == 1 and source.score > 0


def test_runs_must_be_opened_and_closed_in_order(corpus: RAG) -> None:
    with pytest.raises(SourceTrackingError, match="begin_run"):
        corpus.end_run()
    corpus.begin_run()
    with pytest.raises(SourceTrackingError, match="already open"):
        corpus.begin_run()
    assert corpus.end_run() == []
    assert corpus.current_sources() == []


def test_searches_outside_a_run_are_not_recorded(corpus: RAG) -> None:
    corpus.search("word1")
    corpus.begin_run()
    assert corpus.current_sources() == []
    corpus.end_run()


def test_tool_search_cites_with_the_run_numbers(corpus: RAG) -> None:
    corpus.begin_run()
    corpus.search("word2", filters={"document_ids": ["d2"]})
    payload = corpus.tool_search("word9 word2", top_k=5, rerank=True)
    sources = corpus.end_run()
    citations = {r["chunk_id"]: r["citation"] for r in payload["results"]}
    assert citations["d2:0"] == 1 and citations["d9:0"] == 2
    assert [s.chunk_id for s in sources][:2] == ["d2:0", "d9:0"]


def _expected(n: int) -> set[str]:
    return {f"d{n}:0", f"d{(n + 1) % TOPICS}:0"}


def test_concurrent_threads_each_see_only_their_own_run(corpus: RAG) -> None:
    rounds, workers = 5, 8
    barrier = threading.Barrier(workers)
    seen: dict[int, list[set[str]]] = {n: [] for n in range(workers)}
    errors: list[BaseException] = []

    def agent(n: int) -> None:
        try:
            for _ in range(rounds):
                barrier.wait(timeout=30)
                corpus.begin_run()
                other = (n + 1) % TOPICS
                corpus.search(f"word{n}", filters={"document_ids": [f"d{n}"]})
                barrier.wait(timeout=30)  # every thread is now mid-run
                corpus.fetch_chunk(f"d{other}:0")
                seen[n].append({s.chunk_id for s in corpus.end_run()})
        except BaseException as exc:  # pragma: no cover - surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=agent, args=(n,)) for n in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors
    for n in range(workers):
        assert seen[n] == [_expected(n)] * rounds


async def test_concurrent_tasks_each_see_only_their_own_run(corpus: RAG) -> None:
    async def agent(n: int) -> list[set[str]]:
        runs = []
        for _ in range(4):
            corpus.begin_run()
            await corpus.asearch(f"word{n}", filters={"document_ids": [f"d{n}"]})
            await asyncio.sleep(0)  # let the other tasks' runs interleave with this one
            await corpus.afetch_chunk(f"d{(n + 1) % TOPICS}:0")
            runs.append({s.chunk_id for s in corpus.end_run()})
        return runs

    results = await asyncio.gather(*(agent(n) for n in range(TOPICS)))
    for n, runs in enumerate(results):
        assert runs == [_expected(n)] * 4


async def test_a_run_opened_by_a_task_is_shared_by_the_subtasks_it_spawns(corpus: RAG) -> None:
    corpus.begin_run()
    # Parallel tool calls of one agent: they land in the run that spawned them.
    await asyncio.gather(*(corpus.asearch(f"word{n}") for n in (1, 2, 3)))
    sources = corpus.end_run()
    assert {s.document_id for s in sources} >= {"d1", "d2", "d3"}
    assert sorted(s.index for s in sources) == list(range(1, len(sources) + 1))
