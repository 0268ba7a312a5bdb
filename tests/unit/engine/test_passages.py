"""Passages handed over: adjacent windows joined, and a budget of words filled.

The candidates are real chunks of a long Go function, cut into windows by the
chunker, scored as a search would hand them over.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from ragsage.adapters.parsing import HeuristicBackend
from ragsage.core.chunks import Chunk, ScoredChunk
from ragsage.core.documents import Document, RawSource
from ragsage.query.passages import (
    MIN_CUT_WORDS,
    cited_lines,
    fill_budget,
    handed_words,
    join_windows,
    without_repeated_lines,
)
from tests.unit.parsing.fenced import code_lines

STEP = """\tresp{n}, err := fn()
\tif err == nil && resp{n}.StatusCode == {status} {{
\t\twait{n} := resp{n}.Header.Get("Retry-After")
\t\tlog.Printf("attempt {n}: status {status}, waiting %s", wait{n})
\t}}"""
SOURCE = (
    "package retry\n\n// Do calls fn until it succeeds.\n"
    "func Do(fn func() (*http.Response, error)) error {\n"
    + "\n".join(STEP.format(n=n, status=500 + n) for n in range(24))
    + "\n\treturn nil\n}\n\nfunc Short() int {\n\treturn 1\n}\n"
)
FILE_LINES = SOURCE.split("\n")


def _windows() -> list[Chunk]:
    backend = HeuristicBackend(code_window=96)
    parsed = backend.parse(RawSource(SOURCE.encode(), "retry/do.go"))
    document = Document("doc", "h", "retry/do.go", "retry/do.go", metadata=parsed.metadata)
    return list(backend.chunk(document, parsed.pages, size=512, overlap=64))


CHUNKS = _windows()
WINDOWS = [c for c in CHUNKS if "window" in c.metadata]
SHORT = next(c for c in CHUNKS if c.heading_path[-1].startswith("func Short"))


def _scored(chunks: list[Chunk]) -> list[ScoredChunk]:
    return [ScoredChunk(c, 1.0 - i / 100) for i, c in enumerate(chunks)]


def _file_lines(chunk: Chunk) -> list[str]:
    first, last = chunk.metadata["lines"]
    return FILE_LINES[first - 1 : last]


def test_the_fixture_is_cut_into_several_windows() -> None:
    assert len(WINDOWS) >= 4


def test_adjacent_windows_found_together_come_back_as_one_passage_in_file_order() -> None:
    second, third = WINDOWS[1], WINDOWS[2]
    found = join_windows(_scored([third, SHORT, second]))
    assert [hit.chunk.heading_path[-1][:10] for hit in found] == ["func Do(fn", "func Short"]
    passage = found[0].chunk
    assert passage.text.count("```") == 2, "one fence around both windows"
    assert passage.metadata["lines"] == [second.metadata["lines"][0], third.metadata["lines"][1]]
    assert passage.metadata["chunk_ids"] == [second.id, third.id]
    assert code_lines(passage.text) == _file_lines(passage)
    assert found[0].score == 1.0, "the passage ranks as its best window did"


def test_windows_that_are_not_neighbours_stay_apart() -> None:
    found = join_windows(_scored([WINDOWS[0], WINDOWS[2]]))
    assert [hit.chunk.id for hit in found] == [WINDOWS[0].id, WINDOWS[2].id]


def test_a_budget_is_never_passed_and_no_line_is_handed_over_twice() -> None:
    candidates = join_windows(_scored([WINDOWS[1], WINDOWS[2], SHORT, WINDOWS[0]]))
    for budget in (30, 60, 120, 400, 5000):
        chosen = fill_budget(candidates, budget, "status 503 Retry-After")
        assert sum(handed_words(hit.chunk) for hit in chosen) <= budget
        lines = Counter(
            n
            for hit in chosen
            for n in range(hit.chunk.metadata["lines"][0], 1 + hit.chunk.metadata["lines"][1])
        )
        assert all(times == 1 for times in lines.values())
        for hit in chosen:
            assert code_lines(hit.chunk.text) == _file_lines(hit.chunk)


def test_a_passage_too_long_gives_way_to_its_part_that_answers() -> None:
    joined = join_windows(_scored(WINDOWS))
    assert len(joined) == 1
    chosen = fill_budget(joined, 60, "which attempt waits after status 517")
    (hit,) = chosen
    assert "resp17.StatusCode == 517" in hit.chunk.text
    assert handed_words(hit.chunk) <= 60


def test_top_k_caps_the_count_under_a_budget() -> None:
    chosen = fill_budget(_scored([WINDOWS[0], SHORT, WINDOWS[3]]), 5000, "retry", top_k=2)
    assert len(chosen) == 2


def test_a_repeat_of_lines_already_handed_over_is_dropped() -> None:
    whole = join_windows(_scored(WINDOWS[:2]))[0]
    chosen = fill_budget([whole, ScoredChunk(WINDOWS[1], 0.5)], 5000, "retry")
    assert [hit.chunk.id for hit in chosen] == [whole.chunk.id]


def test_the_whole_definition_after_one_of_its_windows_keeps_only_its_other_lines() -> None:
    whole = next(
        c
        for c in CHUNKS
        if c.heading_path == WINDOWS[0].heading_path and "window" not in c.metadata
    )
    window = WINDOWS[1]
    passages = without_repeated_lines(_scored([window, whole, SHORT, window]))
    # The repeated window is gone; the definition comes back without the window's lines.
    assert [p.chunk.id for p in passages] == [window.id, whole.id, SHORT.id]
    first, last = window.metadata["lines"]
    kept = passages[1].chunk.metadata["lines"]
    assert kept[1] < first or kept[0] > last
    assert code_lines(passages[1].chunk.text) == _file_lines(passages[1].chunk)
    # Nothing is cut when the whole comes first: a window after it repeats it all.
    assert [p.chunk.id for p in without_repeated_lines(_scored([whole, window]))] == [whole.id]


def test_a_citation_names_the_lines_of_its_quote() -> None:
    window = WINDOWS[1]
    text = window.text
    target = next(line for line in text.split("\n") if "Retry-After" in line)
    start = text.index(target)
    line = FILE_LINES.index(target) + 1
    assert cited_lines(window, start, start + len(target)) == (line, line)
    assert cited_lines(window, 0, 0) == tuple(window.metadata["lines"])
    prose = replace(SHORT, metadata={k: v for k, v in SHORT.metadata.items() if k != "lines"})
    assert cited_lines(prose, 0, 0) is None


@settings(max_examples=60, deadline=None)
@given(
    order=st.permutations(list(range(len(CHUNKS)))),
    budget=st.integers(min_value=MIN_CUT_WORDS, max_value=600),
)
def test_any_ranking_fills_any_budget_without_passing_it(order: list[int], budget: int) -> None:
    candidates = join_windows(_scored([CHUNKS[i] for i in order]))
    chosen = fill_budget(candidates, budget, "status 509 waiting")
    assert sum(handed_words(hit.chunk) for hit in chosen) <= budget
    seen: set[int] = set()
    for hit in chosen:
        first, last = hit.chunk.metadata["lines"]
        span = set(range(first, last + 1))
        assert not span & seen
        seen |= span
