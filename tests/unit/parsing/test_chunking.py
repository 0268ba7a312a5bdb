import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragsage.adapters.parsing import HeuristicBackend, make_token_counter
from ragsage.core.errors import InvalidRequest
from ragsage.core.pages import Page
from ragsage.core.ports import Chunker, DocumentParser
from tests.unit.parsing.conftest import make_document
from tests.unit.parsing.coverage import (
    assert_nothing_lost,
    assert_spans_hold,
    assert_within_budget,
)

count = make_token_counter()
BACKEND = HeuristicBackend(join_sections=0.0)


JOINING = HeuristicBackend()  # joins small sections, as the service does


def chunk(text_or_pages, size, overlap=0, backend=BACKEND):
    pages = text_or_pages if isinstance(text_or_pages, list) else [Page(1, text_or_pages)]
    return list(backend.chunk(make_document(), pages, size=size, overlap=overlap))


def test_backend_satisfies_both_ports():
    assert isinstance(BACKEND, DocumentParser)
    assert isinstance(BACKEND, Chunker)


def test_sections_of_a_fair_size_become_one_chunk_each_with_their_heading_path():
    text = (
        "# Guide\n\nThis guide explains the setup.\n\n## Setup\n\nInstall the package."
        "\n\nThen run the command.\n\n# Appendix\n\nMore notes follow here."
    )
    chunks = chunk(text, size=16)
    assert [(c.text, c.heading_path) for c in chunks] == [
        ("This guide explains the setup.", ("Guide",)),
        ("Install the package.\n\nThen run the command.", ("Guide", "Setup")),
        ("More notes follow here.", ("Appendix",)),
    ]
    assert [c.id for c in chunks] == ["doc_1:0", "doc_1:1", "doc_1:2"]
    assert [text[c.start_char : c.end_char] for c in chunks] == [c.text for c in chunks]


def test_small_sections_stay_apart_when_joining_is_off():
    sections = "".join(f"## Option {n}\n\nSets flag {n}.\n\n" for n in range(40))
    chunks = chunk("# Flags\n\n" + sections, size=100)
    assert [c.heading_path for c in chunks] == [("Flags", f"Option {n}") for n in range(40)]


def test_small_sections_join_by_default_with_their_headings_in_the_text():
    sections = "".join(f"## Option {n}\n\nSets flag {n}.\n\n" for n in range(40))
    chunks = chunk("# Flags\n\n" + sections, size=100, backend=JOINING)
    # Forty one-line sections, a few chunks (each grows while under a quarter of the budget).
    assert 5 <= len(chunks) <= 15, [c.text for c in chunks]
    first = chunks[0]
    assert first.heading_path == ("Flags", "Option 0")
    assert first.text.startswith("Sets flag 0.\n\n## Option 1\n\nSets flag 1.")
    assert all(count(c.text) <= 100 for c in chunks)


def test_a_deeper_section_joins_under_the_first_sections_path():
    chunks = chunk("# A\n\nintro.\n\n## A1\n\nshort.", size=100, backend=JOINING)
    assert [(c.text, c.heading_path) for c in chunks] == [("intro.\n\n## A1\n\nshort.", ("A",))]


def test_a_section_does_not_join_a_deeper_one_it_climbed_out_of():
    text = "# A\n\n## A1\n\nshort.\n\n# B\n\nother."
    chunks = chunk(text, size=100, backend=JOINING)
    assert [(c.text, c.heading_path) for c in chunks] == [
        ("short.", ("A", "A1")),
        ("other.", ("B",)),
    ]


def test_a_heading_with_no_body_is_kept_as_text():
    chunks = chunk("# Empty section\n\n# Full\n\nbody", size=50)
    assert [(c.text, c.heading_path) for c in chunks] == [
        ("# Empty section", ("Empty section",)),
        ("body", ("Full",)),
    ]


def test_a_table_that_fits_stays_whole():
    table = "| k | v |\n| --- | --- |\n" + "\n".join(f"| key{i} | value{i} |" for i in range(5))
    (only,) = chunk(f"Before.\n\n{table}", size=200)
    assert only.text == f"Before.\n\n{table}"


def test_an_oversized_table_splits_by_rows_repeating_its_header():
    header = "| name | value |\n| --- | --- |"
    rows = [f"| row{i} | {i * 7} |" for i in range(40)]
    chunks = chunk(header + "\n" + "\n".join(rows), size=60)
    assert len(chunks) > 1
    seen = []
    for part in chunks:
        assert part.text.startswith(header + "\n")
        assert count(part.text) <= 60
        seen.extend(part.text.split("\n")[2:])
    assert seen == rows


def test_oversized_prose_splits_at_sentences_with_overlap():
    sentences = [f"Sentence number {i} talks about topic {i}." for i in range(30)]
    chunks = chunk(" ".join(sentences), size=40, overlap=10)
    assert len(chunks) > 2
    for first, second in zip(chunks, chunks[1:], strict=False):
        assert first.text.endswith(".")
        before, after = first.text.split(), second.text.split()
        carried = [k for k in range(1, len(before)) if before[-k:] == after[:k]]
        assert carried, "the next part starts with the last words of the previous one"
        assert count(" ".join(before[-max(carried) :])) <= 10
        assert count(second.text) <= 40


def test_a_giant_word_is_cut_into_parts_that_fit():
    url = "https://example.com/" + "a1b2c3" * 200
    text = f"See the link below.\n\n{url}\n\nThat was it."
    chunks = chunk(text, size=30)
    assert chunks[0].text == "See the link below." and chunks[-1].text == "That was it."
    middle = chunks[1:-1]
    assert len(middle) > 1 and "".join(c.text for c in middle) == url
    assert all(count(c.text) <= 30 for c in chunks)
    assert [text[c.start_char : c.end_char] for c in chunks] == [c.text for c in chunks]


def test_a_table_row_too_big_splits_by_cells_then_sentences():
    long_cell = " ".join(f"Clause {n} applies to every tenant." for n in range(40))
    table = f"| Term | Meaning |\n| --- | --- |\n| short | fine |\n| lease | {long_cell} |"
    chunks = chunk(table, size=40)
    assert chunks[0].text == "| Term | Meaning |\n| --- | --- |\n| short | fine |"
    assert chunks[1].text.startswith("Term: lease")
    assert chunks[2].text.startswith("Meaning: Clause 0 applies") or "Meaning:" in chunks[1].text
    assert all(count(c.text) <= 40 for c in chunks)
    assert_nothing_lost([Page(1, table)], chunks)


def test_a_huge_code_block_splits_at_lines_and_is_refenced():
    lines = [f"    total += values[{n}]  # step {n}" for n in range(300)]
    text = "```python\n" + "\n".join(lines) + "\n```"
    chunks = chunk(text, size=64)
    assert len(chunks) > 5
    for part in chunks:
        assert part.text.startswith("```python\n") and part.text.endswith("\n```")
        assert count(part.text) <= 64
    assert [line for c in chunks for line in c.text.split("\n")[1:-1]] == lines


def test_headings_without_bodies_keep_their_words_and_honest_spans():
    text = "# aa\n\n### bb\n\n## cc\n\n# dd\n\n## ee"
    for backend in (BACKEND, JOINING):
        chunks = chunk(text, size=50, backend=backend)
        assert_nothing_lost([Page(1, text)], chunks)
        assert_spans_hold([Page(1, text)], chunks)


def test_chunks_never_span_pages_and_cite_their_page():
    pages = [Page(1, "# Intro\n\nFirst page text."), Page(2, "Second page text."), Page(3, "")]
    chunks = chunk(pages, size=100)
    assert [(c.text, c.heading_path, c.page_numbers) for c in chunks] == [
        ("First page text.", ("Intro",), (1,)),
        ("Second page text.", ("Intro",), (2,)),
    ]


def test_document_fields_are_copied_onto_chunks():
    (only,) = chunk("text", size=10)
    assert only.document_id == "doc_1" and only.source == "handbook"
    assert only.embed_text == only.text


@pytest.mark.parametrize(("size", "overlap"), [(0, 0), (10, 10), (10, -1)])
def test_nonsense_budgets_are_refused(size, overlap):
    with pytest.raises(InvalidRequest):
        chunk("text", size=size, overlap=overlap)


# --- properties -------------------------------------------------------------------------

words = st.one_of(
    st.from_regex(r"[a-z]{1,9}", fullmatch=True),
    st.from_regex(r"[A-Z][a-z]{0,6}[.!?]", fullmatch=True),
    st.text("abcdefghij0123456789", min_size=40, max_size=160),  # URL-like: oversized alone
)
phrase = st.lists(words, min_size=1, max_size=40).map(" ".join)
short = st.lists(st.from_regex(r"[a-z]{1,8}", fullmatch=True), min_size=1, max_size=4).map(" ".join)
heading = st.tuples(st.integers(1, 4), short).map(lambda h: "#" * h[0] + " " + h[1])
bullets = st.lists(phrase, min_size=1, max_size=6).map(lambda xs: "\n".join(f"- {x}" for x in xs))
table = st.lists(st.tuples(short, short), min_size=1, max_size=12).map(
    lambda rows: "| a | b |\n| --- | --- |\n" + "\n".join(f"| {x} | {y} |" for x, y in rows)
)
code = st.lists(phrase, min_size=1, max_size=8).map(lambda ls: "```\n" + "\n".join(ls) + "\n```")
block = st.one_of(phrase, phrase, heading, bullets, table, code)
page = st.lists(block, min_size=1, max_size=10).map("\n\n".join)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pages=st.lists(page, min_size=1, max_size=3), size=st.integers(8, 80), data=st.data())
def test_chunker_properties(pages, size, data):
    overlap = data.draw(st.integers(0, size - 1))
    page_list = [Page(n, text) for n, text in enumerate(pages, 1)]
    for backend in (BACKEND, JOINING):
        chunks = chunk(page_list, size, overlap, backend=backend)
        assert_within_budget(chunks, size, count)
        assert_nothing_lost(page_list, chunks)
        assert_spans_hold(page_list, chunks)
