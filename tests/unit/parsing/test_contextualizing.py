import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragsage.adapters.parsing import HeuristicBackend, make_token_counter
from ragsage.adapters.parsing.contextualizing import HeadingWindowContextualizer, _Budget
from ragsage.adapters.parsing.markdown import fenced
from ragsage.adapters.parsing.tokens import load_encoding
from ragsage.core.chunks import Chunk, make_chunk
from ragsage.core.documents import Document, RawSource
from ragsage.core.pages import Page
from ragsage.core.ports import Contextualizer, PageContextualizer
from tests.unit.parsing.conftest import encoded_tokens, make_document
from tests.unit.parsing.test_chunk_properties import giant_block

count = make_token_counter()
FULL_TEXT = (
    "# Leave\n\nEveryone gets twenty-five days. Carry-over is capped at five days.\n\n"
    "Book leave in the portal.\n\nSick leave needs a note after three days.\n\n"
    "Parental leave follows the statutory rules.\n\n# Expenses\n\nHotels up to 150 EUR."
)
DOCUMENT = make_document("Employee handbook")


def _chunk(text, path=("Leave",)):
    return make_chunk(DOCUMENT, 0, text, heading_path=path)


async def test_header_names_document_section_and_neighbours_then_the_chunk_verbatim():
    chunk = _chunk("Book leave in the portal.")
    out = await HeadingWindowContextualizer(window=1).contextualize(
        DOCUMENT, chunk, full_text=FULL_TEXT
    )
    assert out == (
        "Document: Employee handbook\n"
        "Section: Leave\n"
        "Preceded by: Everyone gets twenty-five days. Carry-over is capped at five days.\n"
        "Followed by: Sick leave needs a note after three days.\n\n"
        "Book leave in the portal."
    )


async def test_window_zero_gives_heading_context_only():
    contextualizer = HeadingWindowContextualizer(window=0)
    assert isinstance(contextualizer, Contextualizer)
    out = await contextualizer.contextualize(
        DOCUMENT, _chunk("Book leave in the portal."), full_text=FULL_TEXT
    )
    assert out == "Document: Employee handbook\nSection: Leave\n\nBook leave in the portal."


async def test_the_budget_bounds_the_prefix_and_trims_whole_sentences():
    chunk = _chunk("Book leave in the portal.")
    for budget in (0, 5, 12, 20, 30, 45, 128):
        contextualizer = HeadingWindowContextualizer(window=2, max_context_tokens=budget)
        out = await contextualizer.contextualize(DOCUMENT, chunk, full_text=FULL_TEXT)
        assert out.endswith(chunk.text)
        prefix = out[: -len(chunk.text)]
        assert count(prefix) <= budget
        source_words = set(FULL_TEXT.split()) | {"Document:", "Section:", "Preceded", "by:"}
        source_words |= {"Followed", "Employee", "handbook"}
        assert set(prefix.split()) <= source_words  # nothing cut mid-word
    trimmed = (
        "Document: Employee handbook\nSection: Leave\n"
        "Preceded by: Carry-over is capped at five days.\n\n"
    )
    tight = HeadingWindowContextualizer(window=2, max_context_tokens=count(trimmed))
    out = await tight.contextualize(DOCUMENT, chunk, full_text=FULL_TEXT)
    assert out == trimmed + chunk.text  # the sentence nearest the chunk is the one kept


async def test_same_input_same_output_and_unknown_position_degrades_to_headings():
    contextualizer = HeadingWindowContextualizer()
    chunk = _chunk("Text that is not in the document.", path=())
    first = await contextualizer.contextualize(DOCUMENT, chunk, full_text=FULL_TEXT)
    second = await contextualizer.contextualize(DOCUMENT, chunk, full_text=FULL_TEXT)
    assert first == second == "Document: Employee handbook\n\nText that is not in the document."


async def test_all_chunks_at_once_from_their_spans_match_one_at_a_time():
    backend = HeuristicBackend()
    pages = [
        Page(1, FULL_TEXT),
        Page(2, ""),
        Page(3, "# Travel\n\nTrains are booked by the office."),
    ]
    chunks = backend.chunk(DOCUMENT, pages, size=12, overlap=0)
    assert len(chunks) > 4 and all(c.end_char > c.start_char for c in chunks)
    contextualizer = HeadingWindowContextualizer(window=2, max_context_tokens=60)
    assert isinstance(contextualizer, PageContextualizer)
    together = await contextualizer.contextualize_pages(DOCUMENT, chunks, pages)
    full_text = FULL_TEXT + "\n\n" + pages[2].text
    alone = [
        await contextualizer.contextualize(DOCUMENT, chunk, full_text=full_text) for chunk in chunks
    ]
    assert together == alone
    # Neighbours cross the page break, as they do in the joined text.
    assert "Followed by: Trains are booked" in together[-2] or "Trains" in together[-1]


async def test_a_huge_neighbour_is_cut_near_the_chunk_and_never_mid_word():
    sentences = " ".join(f"Clause {n} binds tenant {n}." for n in range(20_000))
    pages = [Page(1, f"{sentences}\n\nThe short chunk.\n\n{sentences}")]
    start = len(sentences) + 2
    chunk = make_chunk(
        DOCUMENT, 0, "The short chunk.", page_numbers=(1,), start_char=start, end_char=start + 16
    )
    contextualizer = HeadingWindowContextualizer(window=1, max_context_tokens=40)
    (text,) = await contextualizer.contextualize_pages(DOCUMENT, [chunk], pages)
    prefix = text[: -len(chunk.text)]
    assert count(prefix) <= 40
    # The sentences nearest the chunk are the ones kept.
    assert re.search(r"Preceded by: (Clause \d+ binds tenant \d+\. )*Clause 19999 binds", prefix)
    assert set(prefix.split()) <= set(pages[0].text.split()) | {
        "Document:",
        "Employee",
        "handbook",
        "Section:",
        "Preceded",
        "Followed",
        "by:",
    }


@pytest.mark.parametrize("shape", ["sentences", "no sentence end", "list", "table"])
def test_a_giant_block_costs_encoding_work_bounded_by_the_budget_per_chunk(shape, monkeypatch):
    # Neighbours inside a long block are long; a candidate with more words than
    # the whole ceiling is refused unread, and a long one is encoded only until
    # it is over, so no chunk costs more than a few budgets' worth of tokens.
    encoded = encoded_tokens(monkeypatch)
    contextualizer = HeadingWindowContextualizer(window=2, max_context_tokens=128)
    per_chunk = {}
    for times in (1, 10):
        pages = [Page(1, "# Notes\n\n" + giant_block(shape, times))]
        chunks = HeuristicBackend().chunk(DOCUMENT, pages, size=512, overlap=64)
        encoded[0] = 0
        texts = contextualizer.texts(DOCUMENT, chunks, pages)
        if shape == "sentences":  # whole sentences of the neighbours still fit
            assert any("Preceded by:" in text for text in texts)
        per_chunk[times] = encoded[0] / len(chunks)
    assert max(per_chunk.values()) <= 4 * 128
    assert per_chunk[10] <= 1.15 * per_chunk[1]


def test_bounded_counting_gives_the_texts_whole_counts_give():
    pages = [Page(1, FULL_TEXT), Page(2, "# Notes\n\n" + giant_block("sentences", 1))]
    chunks = HeuristicBackend().chunk(DOCUMENT, pages, size=40, overlap=8)
    for budget in (0, 7, 30, 128, 400):
        bounded = HeadingWindowContextualizer(window=3, max_context_tokens=budget)
        whole = HeadingWindowContextualizer(window=3, max_context_tokens=budget)
        whole._count = lambda text: count(text)  # a plain function: no shortcuts
        assert bounded.texts(DOCUMENT, chunks, pages) == whole.texts(DOCUMENT, chunks, pages)


SOURCE_FIXTURES = Path(__file__).parent / "source_fixtures"


def _read_code(filename: str, size: int) -> tuple[Document, list[Page], list[Chunk]]:
    backend = HeuristicBackend()
    parsed = backend.parse(RawSource((SOURCE_FIXTURES / filename).read_bytes(), filename))
    document = make_document(parsed.title, source="repo", metadata=parsed.metadata)
    return document, parsed.pages, list(backend.chunk(document, parsed.pages, size=size, overlap=0))


async def _code_texts(filename: str, size: int = 160) -> list[tuple[Chunk, str]]:
    document, pages, chunks = _read_code(filename, size)
    texts = await HeadingWindowContextualizer(window=2).contextualize_pages(document, chunks, pages)
    return list(zip(chunks, texts, strict=True))


async def test_a_code_chunk_is_situated_by_its_own_names_not_by_its_neighbours_code():
    situated = await _code_texts("ledger.go")
    chunk, text = next((c, t) for c, t in situated if "func (l *Ledger) Withdraw" in c.text)
    prefix = text[: -len(chunk.text)]
    assert text.endswith(chunk.text)
    assert "Preceded by" not in prefix and "Followed by" not in prefix
    # Withdraw returns ErrOverdrawn: its parts, as a question would word them.
    assert "Names: err overdrawn" in prefix
    # The definitions around it (Accounts, the Ledger type) stay out of its vector.
    assert "Accounts" not in prefix and "map[string]int64" not in prefix
    assert prefix.startswith("Document: ")
    for other, other_text in situated:
        assert count(other_text[: -len(other.text)]) <= 128


async def test_a_prose_page_whose_metadata_names_a_language_keeps_its_neighbours():
    document = make_document("Employee handbook", metadata={"language": "python"})
    chunk = make_chunk(document, 0, "Book leave in the portal.", heading_path=("Leave",))
    out = await HeadingWindowContextualizer(window=1).contextualize(
        document, chunk, full_text=FULL_TEXT
    )
    assert "Preceded by: Everyone gets twenty-five days." in out
    assert "Names:" not in out


async def test_names_are_cut_to_the_budget_never_past_it():
    document, _, chunks = _read_code("InvoiceService.cs", size=512)
    chunk = chunks[-1]
    for budget in (16, 24, 40):
        contextualizer = HeadingWindowContextualizer(max_context_tokens=budget)
        out = contextualizer.texts(document, [chunk], [Page(1, chunk.text)])[0]
        assert count(out[: -len(chunk.text)]) <= budget
        assert out.endswith(chunk.text)


async def test_code_holding_backticks_is_still_code_under_its_longer_fence():
    document = make_document("notes.py", metadata={"language": "python"})
    text = fenced('HELP = "use ```retry_upload``` to resend"\n', "python")
    assert text.startswith("````python")
    chunk = make_chunk(document, 0, text, heading_path=("notes.py",))
    out = await HeadingWindowContextualizer().contextualize(document, chunk, full_text=text)
    assert "Names: retry upload" in out


_PIECES = ["word", "Word", " ", "  ", "\n", "\n\n", "/", "//", ".", "é", "日本", "x86_64", "\t"]


@settings(max_examples=300, deadline=None)
@given(
    header=st.lists(st.lists(st.sampled_from(_PIECES), max_size=8).map("".join), max_size=3),
    before=st.lists(st.lists(st.sampled_from(_PIECES), max_size=8).map("".join), max_size=3),
    after=st.lists(st.lists(st.sampled_from(_PIECES), max_size=8).map("".join), max_size=3),
)
def test_the_budget_counts_its_prefix_exactly_from_its_parts(
    header: list[str], before: list[str], after: list[str]
) -> None:
    # The prefix is counted part by part, each part once per document; the sum
    # must be the encoder's count of the whole prefix, whatever the parts hold.
    budget = _Budget(count, 10_000, {})
    budget.header, budget.before, budget.after = header, before, after
    assert budget.tokens() == len(load_encoding().encode_ordinary(budget.render()))
    assert budget.tokens() == budget.tokens()  # from the memo the second time
