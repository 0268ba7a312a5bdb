import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragsage.errors import InvalidRequest
from ragsage.parsing import HeuristicBackend, make_token_counter
from ragsage.ports import Chunker, DocumentParser
from ragsage.types import Page
from tests.unit.parsing.conftest import make_document

count = make_token_counter()
BACKEND = HeuristicBackend()


def chunk(text_or_pages, size, overlap=0):
    pages = text_or_pages if isinstance(text_or_pages, list) else [Page(1, text_or_pages)]
    return list(BACKEND.chunk(make_document(), pages, size=size, overlap=overlap))


def test_backend_satisfies_both_ports():
    assert isinstance(BACKEND, DocumentParser)
    assert isinstance(BACKEND, Chunker)


def test_small_sections_become_one_chunk_each_with_their_heading_path():
    text = "# Guide\n\nIntro.\n\n## Setup\n\nInstall it.\n\nThen run it.\n\n# Appendix\n\nMore."
    chunks = chunk(text, size=100)
    assert [(c.text, c.heading_path) for c in chunks] == [
        ("Intro.", ("Guide",)),
        ("Install it.\n\nThen run it.", ("Guide", "Setup")),
        ("More.", ("Appendix",)),
    ]
    assert [c.id for c in chunks] == ["doc_1:0", "doc_1:1", "doc_1:2"]


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


def test_a_giant_word_is_its_own_flagged_chunk():
    url = "https://example.com/" + "a1b2c3" * 200
    chunks = chunk(f"See the link below.\n\n{url}\n\nThat was it.", size=30)
    assert [c.text for c in chunks] == ["See the link below.", url, "That was it."]
    assert [c.metadata.get("oversized", False) for c in chunks] == [False, True, False]


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


def _is_subsequence(needle, haystack):
    it = iter(haystack)
    return all(any(word == other for other in it) for word in needle)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pages=st.lists(page, min_size=1, max_size=3), size=st.integers(8, 80), data=st.data())
def test_chunker_properties(pages, size, data):
    overlap = data.draw(st.integers(0, size - 1))
    chunks = chunk([Page(n, text) for n, text in enumerate(pages, 1)], size, overlap)

    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    assert len({c.id for c in chunks}) == len(chunks)
    for c in chunks:
        assert c.text.strip()
        if not c.metadata.get("oversized"):
            assert count(c.text) <= size

    # Body words come out in order (overlap only repeats some); heading words live
    # in heading paths, or in the text when a heading had no body.
    body, titles = [], []
    for text in pages:
        for line in text.split("\n"):
            (titles if line.startswith("#") else body).extend(line.split())
    out = [word for c in chunks for word in c.text.split()]
    assert _is_subsequence(body, out)
    known = set(out) | {w for c in chunks for h in c.heading_path for w in h.split()}
    assert set(titles) - {"#", "##", "###", "####"} <= known
    # Never cut mid-word: every word of a chunk is a word of the input.
    assert set(out) <= set(body) | set(titles)
