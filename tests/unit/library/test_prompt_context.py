"""to_prompt_context never exceeds its budget, whatever the hits look like."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragsage import RAGContext
from ragsage.core.chunks import Chunk
from ragsage.query import SearchHit


def hit(n: int, text: str, title: str, source: str) -> SearchHit:
    chunk = Chunk(
        id=f"d:{n}",
        document_id="d",
        ordinal=n,
        text=text,
        embed_text=text,
        metadata={"title": title},
        source=source,
    )
    return SearchHit(chunk=chunk, score=1.0)


texts = st.text(min_size=1, max_size=3000)
names = st.text(min_size=0, max_size=80)


@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(st.tuples(texts, names, names), min_size=0, max_size=12),
    max_chars=st.integers(min_value=1, max_value=20_000),
)
def test_the_budget_always_holds(parts: list[tuple[str, str, str]], max_chars: int) -> None:
    context = RAGContext(query="q", results=tuple(hit(n, *part) for n, part in enumerate(parts)))
    rendered = context.to_prompt_context(max_chars=max_chars)
    assert len(rendered) <= max_chars
    if parts and max_chars >= 200:
        assert rendered.startswith("[1] ")  # the best hit always gets in when there is room


@pytest.mark.parametrize("max_chars", [150, 400, 1000, 5000])
def test_blocks_are_whole_until_the_last_one_is_cut(max_chars: int) -> None:
    results = tuple(
        hit(n, f"Passage {n}. " + "word " * 120, f"Doc {n}", f"{n}.md") for n in range(8)
    )
    rendered = RAGContext(query="q", results=results).to_prompt_context(max_chars=max_chars)
    assert len(rendered) <= max_chars
    blocks = rendered.split("\n\n")
    assert [block.split(" ", 1)[0] for block in blocks] == [
        f"[{n}]" for n in range(1, len(blocks) + 1)
    ]
    assert all(block.endswith("word") for block in blocks[:-1])


def test_everything_fits_under_a_large_budget() -> None:
    results = (hit(0, "Alpha.", "Guide", "guide.md"), hit(1, "Beta.", "Notes", "notes.md"))
    assert RAGContext(query="q", results=results).to_prompt_context() == (
        "[1] Guide (guide.md)\nAlpha.\n\n[2] Notes (notes.md)\nBeta."
    )


def test_a_nonpositive_budget_is_refused() -> None:
    with pytest.raises(ValueError, match="max_chars must be positive"):
        RAGContext(query="q").to_prompt_context(max_chars=0)
