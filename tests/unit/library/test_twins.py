"""The facade's plain methods and coroutines are one definition each, and behave alike."""

from __future__ import annotations

import asyncio
import inspect
import threading

import pytest

from ragsage import RAG, InvalidRequest, RagsageError

from ..library.conftest import HANDBOOK


def _coroutine_names() -> list[str]:
    return sorted(
        name
        for name, value in vars(RAG).items()
        if name.startswith("a") and inspect.iscoroutinefunction(value) and not name.startswith("__")
    )


def test_every_coroutine_has_a_plain_twin_made_from_the_same_operation() -> None:
    names = [name for name in _coroutine_names() if name != "aclose"]
    assert {"asearch", "aindex_text", "aindex_file", "afetch_chunk", "acount"} <= set(names)
    for name in names:
        plain, coroutine = getattr(RAG, name[1:]), getattr(RAG, name)
        assert not inspect.iscoroutinefunction(plain), name
        assert plain.__wrapped__ is coroutine.__wrapped__, name
        assert inspect.signature(plain) == inspect.signature(coroutine), name
        assert plain.__doc__ and plain.__doc__ == coroutine.__doc__, name


def test_both_forms_give_the_same_results() -> None:
    with RAG.default() as rag:
        plain = rag.index_text(HANDBOOK, document_id="handbook")
        found = rag.search("paid holiday days", top_k=3)

        async def twice() -> tuple[int, list[str]]:
            again = await rag.aindex_text(HANDBOOK, document_id="handbook")
            context = await rag.asearch("paid holiday days", top_k=3)
            return len(again), [hit.chunk.id for hit in context.results]

        count, ids = asyncio.run(twice())
        assert found.results and count == len(plain)
        assert ids == [hit.chunk.id for hit in found.results]
        assert rag.count() == asyncio.run(rag.acount()) == len(plain)


def test_bad_arguments_are_refused_in_the_callers_thread_before_any_work() -> None:
    with RAG.default() as rag:
        for call in (
            lambda: rag.search(42),  # type: ignore[arg-type]
            lambda: rag.search("x", rerank=True),  # no reranker
            lambda: rag.fetch_chunk("c", chunks_above=-1),
        ):
            with pytest.raises(InvalidRequest):
                call()
        with pytest.raises(InvalidRequest):
            asyncio.run(rag.asearch("x", rerank=True))
        assert rag._loop_thread is None  # nothing was sent to the loop


def test_a_run_records_in_the_callers_context_for_either_form() -> None:
    with RAG.default() as rag:
        rag.index_text(HANDBOOK, document_id="handbook")

        def in_thread(results: list[int]) -> None:
            rag.begin_run()
            rag.search("paid holiday days", top_k=2)
            results.append(len(rag.end_run()))

        seen: list[int] = []
        worker = threading.Thread(target=in_thread, args=(seen,))
        worker.start()
        worker.join()
        assert seen and seen[0] > 0
        assert rag.current_sources() == []  # the other thread's run is not this one's

        async def in_task() -> int:
            rag.begin_run()
            await rag.asearch("paid holiday days", top_k=2)
            return len(rag.end_run())

        assert asyncio.run(in_task()) == seen[0]


def test_a_closed_rag_refuses_both_forms() -> None:
    rag = RAG.default()
    rag.close()
    with pytest.raises(RagsageError, match="closed"):
        rag.count()
    with pytest.raises(RagsageError, match="closed"):
        asyncio.run(rag.acount())
