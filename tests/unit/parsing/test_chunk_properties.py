"""Chunker invariants over generated pages shaped like real ones: HTML sites and PDF text.

Whatever the page, no chunk is over budget, every word the reader kept reaches
a chunk in order, each chunk's span holds its words, and ids are unique.  For
HTML built like a documentation site, only the navigation is gone.
"""

import random
import re
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragsage.adapters.parsing import HeuristicBackend, make_token_counter
from ragsage.adapters.parsing.chunking import chunk_pages
from ragsage.core.documents import RawSource
from ragsage.core.pages import Page
from tests.unit.parsing.conftest import encoded_characters, make_document
from tests.unit.parsing.coverage import (
    assert_nothing_lost,
    assert_spans_hold,
    assert_within_budget,
)
from tests.unit.parsing.site_pages import MENU_WORDS, layout_page

BACKEND = HeuristicBackend()
count = make_token_counter()
PROPERTY = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))

word = st.from_regex(r"[a-z]{2,10}", fullmatch=True).filter(
    lambda w: w.capitalize() not in MENU_WORDS and w not in {"contents", "section", "part"}
)
sentence = st.lists(word, min_size=3, max_size=25).map(lambda ws: " ".join(ws).capitalize() + ".")
# Real pages hold paragraphs with no break for thousands of words, and tokens
# longer than any budget (hashes, data URIs, minified code).
paragraph = st.one_of(
    st.lists(sentence, min_size=1, max_size=6).map(" ".join),
    st.lists(word, min_size=200, max_size=900).map(" ".join),
    st.text("abcdef0123456789", min_size=300, max_size=1200),
)
code_line = st.lists(word, min_size=1, max_size=12).map(lambda ws: "    " + "_".join(ws) + "()")
cell = st.lists(word, min_size=1, max_size=4).map(" ".join)


def _chunks(pages: list[Page], size: int, overlap: int = 0):
    return list(BACKEND.chunk(make_document(), pages, size=size, overlap=overlap))


def _parse_html(html: str) -> list[Page]:
    return list(BACKEND.parse(RawSource(html.encode(), "page.html")).pages)


@st.composite
def html_pages(draw: st.DrawFn) -> str:
    """Body fragments nested in divs and layout tables, with data tables and huge <pre>."""
    parts: list[str] = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["p", "pre", "table", "list", "heading", "nest"]))
        if kind == "p":
            parts.append(f"<p>{draw(paragraph)}</p>")
        elif kind == "pre":
            lines = draw(st.lists(code_line, min_size=1, max_size=400))
            parts.append("<pre>" + "\n".join(lines) + "</pre>")
        elif kind == "table":
            width = draw(st.integers(2, 4))
            rows = draw(st.lists(st.lists(cell, min_size=width, max_size=width), max_size=80))
            header = "".join(f"<th>h{n}</th>" for n in range(width))
            body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
            parts.append(f"<table><tr>{header}</tr>{body}</table>")
        elif kind == "list":
            items = draw(st.lists(sentence, min_size=1, max_size=30))
            parts.append("<ul>" + "".join(f"<li>{item}</li>" for item in items) + "</ul>")
        elif kind == "heading":
            level = draw(st.integers(1, 4))
            parts.append(f"<h{level}>{draw(cell)}</h{level}>")
        else:
            depth = draw(st.integers(1, 60))
            parts.append("<div>" * depth + f"<p>{draw(sentence)}</p>" + "</div>" * depth)
    inner = "".join(parts)
    if draw(st.booleans()):  # laid out in a table, as older sites do
        inner = f"<table><tr><td><table><tr><td>{inner}</td></tr></table></td></tr></table>"
    return f"<html><body>{inner}</body></html>"


@PROPERTY
@given(html=html_pages(), size=st.integers(16, 300), overlap_share=st.floats(0, 0.5))
def test_html_pages_chunk_within_budget_and_lose_nothing(html, size, overlap_share):
    pages = _parse_html(html)
    chunks = _chunks(pages, size, int(size * overlap_share))
    assert_within_budget(chunks, size, count)
    assert_nothing_lost(pages, chunks)
    assert_spans_hold(pages, chunks)


@PROPERTY
@given(
    paragraphs=st.lists(sentence, min_size=1, max_size=5),
    items=st.lists(sentence, max_size=5),
    code=st.lists(code_line, max_size=30),
    rows=st.lists(st.tuples(cell, cell), max_size=10),
)
def test_a_site_page_loses_its_navigation_and_nothing_else(paragraphs, items, code, rows):
    page = layout_page(paragraphs, items=items, code=code, rows=rows)
    text = _parse_html(page.html)[0].text
    position = 0
    for expected in re.findall(r"\w+", " ".join(page.content)):
        found = re.search(rf"(?<!\w){re.escape(expected)}(?!\w)", text[position:])
        assert found is not None, f"{expected!r} lost or out of order"
        position += found.end()
    assert not set(re.findall(r"\w+", text)) & set(MENU_WORDS)


@st.composite
def pdf_pages(draw: st.DrawFn) -> list[Page]:
    """Text as a PDF text layer gives it: lines broken at the column, words hyphenated,
    few blank lines, a running header on each page."""
    pages = []
    for number in range(1, draw(st.integers(1, 4)) + 1):
        words = draw(st.lists(word, min_size=10, max_size=700))
        lines, line = [], ""
        for item in words:
            if len(line) + len(item) > 72:
                if draw(st.booleans()) and len(item) > 5:
                    lines.append(f"{line} {item[:3]}-")
                    line = item[3:]
                    continue
                lines.append(line)
                line = item
            else:
                line = f"{line} {item}".strip()
        lines.append(line)
        if draw(st.booleans()):
            lines.insert(draw(st.integers(0, len(lines))), "")
        header = f"Manual of things {number}"
        pages.append(Page(number, "\n".join([header, *lines])))
    return pages


@PROPERTY
@given(pages=pdf_pages(), size=st.integers(8, 200), data=st.data())
def test_pdf_text_chunks_within_budget_and_loses_nothing(pages, size, data):
    chunks = _chunks(pages, size, data.draw(st.integers(0, size - 1)))
    assert_within_budget(chunks, size, count)
    assert_nothing_lost(pages, chunks)
    assert_spans_hold(pages, chunks)
    assert {c.page_numbers for c in chunks} <= {(p.number,) for p in pages}


# --- bounded counting: the same chunks, for work linear in a block's length ------------

# Words as changelogs and code have them: URLs, hashes, paths, punctuation ending a line.
odd_word = st.sampled_from(
    ["deps:", "(#4821)", "`f00ba4`", "http://example.org/a/b", "//", "/usr/lib", "x.", "});"]
)
any_word = st.one_of(word, odd_word)
line = st.lists(any_word, min_size=1, max_size=30).map(" ".join)


@st.composite
def markdown_pages(draw: st.DrawFn) -> str:
    """Markdown whose blocks are often far over any budget, in every block kind."""
    blocks: list[str] = []
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["prose", "lines", "list", "code", "table", "heading"]))
        if kind == "prose":
            blocks.append(draw(paragraph))
        elif kind == "lines":  # a paragraph of lines and no sentence end, as in a changelog
            blocks.append("\n".join(draw(st.lists(line, min_size=1, max_size=60))))
        elif kind == "list":
            items = draw(st.lists(line, min_size=1, max_size=60))
            indent = draw(st.sampled_from(["", "  "]))
            blocks.append("\n".join(f"{indent}* {item}" for item in items))
        elif kind == "code":
            lines = draw(st.lists(st.one_of(line, st.just(""), st.just("//")), max_size=80))
            blocks.append("```\n" + "\n".join(lines) + "\n```")
        elif kind == "table":
            rows = draw(st.lists(st.tuples(line, line), max_size=40))
            blocks.append("| a | b |\n|---|---|\n" + "\n".join(f"| {a} | {b} |" for a, b in rows))
        else:
            blocks.append("#" * draw(st.integers(1, 3)) + " " + draw(cell))
    return "\n\n".join(blocks)


@PROPERTY
@given(text=markdown_pages(), size=st.integers(8, 300), overlap_share=st.floats(0, 0.5))
def test_bounded_counting_gives_the_chunks_whole_counts_give(text, size, overlap_share):
    # A plain function is not an EncodingCounter, so it gets none of the shortcuts.
    pages = [Page(1, text)]
    overlap = int(size * overlap_share)
    bounded = chunk_pages(make_document(), pages, size=size, overlap=overlap, count=count)
    whole = chunk_pages(
        make_document(), pages, size=size, overlap=overlap, count=lambda text: count(text)
    )
    assert bounded == whole


def giant_block(shape: str, times: int) -> str:
    """One block of ``shape``, ``times`` as long as the shortest: the same text drawn further."""
    rng = random.Random(11)
    vocabulary = "release stream socket deps fix http://example.org/a/b (#4821) `f00ba4` the of"

    def words(n: int) -> str:
        return " ".join(rng.choice(vocabulary.split()) for _ in range(n))

    n = 120 * times
    if shape == "sentences":
        return " ".join(words(14) + "." for _ in range(n))
    if shape == "no sentence end":
        return words(14 * n)
    if shape == "list":
        return "\n".join(f"* {words(14)}" for _ in range(n))
    if shape == "code":
        return "```\n" + "\n".join(f"    {words(7)}" for _ in range(2 * n)) + "\n```"
    rows = "\n".join(f"| {words(7)} | {words(7)} |" for _ in range(n))
    return f"| a | b |\n|---|---|\n{rows}"


@pytest.mark.parametrize("shape", ["sentences", "no sentence end", "list", "code", "table"])
def test_one_giant_block_costs_encoding_work_linear_in_its_length(shape, monkeypatch):
    encoded = encoded_characters(monkeypatch)
    per_character = {}
    for times in (1, 10):
        text = giant_block(shape, times)
        encoded[0] = 0
        chunks = BACKEND.chunk(make_document(), [Page(1, text)], size=512, overlap=64)
        assert len(chunks) >= 6 * times
        per_character[times] = encoded[0] / len(text)
    # Each character is encoded a bounded number of times, however long its block.
    assert per_character[10] <= 1.15 * per_character[1]
    assert max(per_character.values()) <= 10


def test_one_giant_block_is_chunked_in_memory_a_few_times_its_size():
    """A file with no blank line (a CSV, a one-line dump) is one block of a million words."""
    text = giant_block("no sentence end", 60)  # about 0.4 MB in one block
    BACKEND.chunk(make_document(), [Page(1, text[:5000])], size=512, overlap=64)  # warm
    tracemalloc.start()
    try:
        chunks = BACKEND.chunk(make_document(), [Page(1, text)], size=512, overlap=64)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(chunks) >= 100
    # The chunks' own text is about one byte a character; word spans held as
    # Python tuples made this about thirty.
    assert peak <= 8 * len(text), peak / len(text)
