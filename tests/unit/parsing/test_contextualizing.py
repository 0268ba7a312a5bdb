from ragsage.contextualizing import HeadingWindowContextualizer
from ragsage.parsing import make_token_counter
from ragsage.ports import Contextualizer
from ragsage.types import make_chunk
from tests.unit.parsing.conftest import make_document

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
