"""Citations name the section and sentence an answer used, in passages that joined sections.

The oracle is independent of the chunker's bookkeeping: a quoted sentence is
found in its page's text as the parser produced it, and its section is the
path of headings above it there.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ragsage.adapters.offline.reading import quotable
from ragsage.cli.local import local_kit
from ragsage.core.chunks import Chunk, ChunkSection
from ragsage.core.documents import Document, RawSource
from ragsage.core.pages import Page
from ragsage.core.prompts import attributed_text, parse_grounded_prompt
from ragsage.core.scopes import Scope
from ragsage.core.serialization import chunk_from_dict, chunk_to_dict
from ragsage.query import Answer
from ragsage.query.citing import content_words, locate, sentence_spans
from ragsage.runtime.memory_kit import MemoryKit

SAMPLES = Path(__file__).resolve().parents[3] / "examples" / "docs"
SCOPE = Scope("citations")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$", re.MULTILINE)


def ingested(kit: MemoryKit, name: str) -> list[Chunk]:
    path = SAMPLES / name
    source = RawSource(content=path.read_bytes(), filename=path.name)

    async def run() -> list[Chunk]:
        result = await kit.ingestion().ingest(SCOPE, source, document_id=None)
        return list(await kit.document_store.chunks(SCOPE, result.document.id))

    return asyncio.run(run())


def pages_of(kit: MemoryKit, name: str) -> dict[int, str]:
    path = SAMPLES / name
    parsed = kit.parser.parse(RawSource(content=path.read_bytes(), filename=path.name))
    return {page.number: page.text for page in parsed.pages}


def section_above(page_text: str, offset: int) -> tuple[str, ...]:
    """The headings above ``offset`` in a page's Markdown text, outermost first."""
    path: list[tuple[int, str]] = []
    for match in _HEADING.finditer(page_text[:offset]):
        level = len(match.group(1))
        path = [(lvl, name) for lvl, name in path if lvl < level] + [(level, match.group(2))]
    return tuple(name for _, name in path)


def answer(kit: MemoryKit, question: str) -> Answer:
    return asyncio.run(kit.query_engine().answer(SCOPE, question))


def test_the_sample_question_is_answered_in_prose_and_cites_its_section() -> None:
    kit = local_kit()
    chunks = ingested(kit, "ragsage-overview.md")
    joined = [c for c in chunks if c.sections]
    assert joined, "the overview's small sections are joined into chunks"
    found = answer(kit, "How does row-level security isolate namespaces?")
    assert "#" not in found.text
    assert "Every row carries the namespace it belongs to" in found.text
    first = found.citations[0]
    assert first.title == "ragsage overview > Tenancy"
    assert first.heading_path == ("ragsage overview", "Tenancy")
    assert first.located == "sentence"
    assert first.quote.startswith("Every row carries the namespace")
    assert first.text[first.start : first.end] == first.quote
    # The whole quote is marked: every sentence the answer used, wraps and all.
    assert " ".join(first.quote.split()) in found.text
    assert first.quote.endswith("never from the request body.")


def test_a_pdf_quote_leaves_out_its_unmarked_titles_and_keeps_version_numbers_whole() -> None:
    kit = local_kit()
    chunks = ingested(kit, "deployment-guide.pdf")
    quoted = [" ".join(c.text[a:b].split()) for c in chunks for a, b in sentence_spans(c.text)]
    # PDF text has no heading marks: the page titles are lines of their own.
    assert all(not q.startswith(("Deployment guide", "Scaling workers")) for q in quoted), quoted
    assert "Postgres 15 or newer with pgvector 0.8 or newer is required." in quoted
    assert any(q.startswith("Workers take one document at a time") for q in quoted)
    [sentence] = [q for q in quoted if q.startswith("Workers take")]
    kit.llm = WritesAKnownAnswer(sentence)  # type: ignore[assignment]
    found = answer(kit, "When does a worker acknowledge a job?")
    [cited] = [c for c in found.citations if c.source == "deployment-guide.pdf"]
    assert cited.located == "sentence" and cited.page_numbers == (2,)
    assert cited.quote.startswith("Workers take one document")
    # The offline reader quotes the page without its title too.
    kit = local_kit()
    ingested(kit, "deployment-guide.pdf")
    read = answer(kit, "Which pgvector version is required?")
    assert "Postgres 15 or newer with pgvector 0.8 or newer is required." in read.text
    assert "Deployment guide" not in read.text


def test_sentences_are_found_in_linear_time_on_runs_of_stops_and_titles() -> None:
    text = (
        "." * 40_000
        + " A "
        + "?!" * 20_000
        + "\n"
        + "Title\nA longer line of prose follows.\n" * 3_000
    )
    spans = sentence_spans(text)
    assert spans and all(a < b for a, b in spans)
    assert all(end <= start for (_, end), (start, _) in zip(spans, spans[1:], strict=False))
    assert sum(text[a:b] == "A longer line of prose follows." for a, b in spans) == 3_000


@pytest.mark.parametrize(
    "name", ["ragsage-overview.md", "glossary.html", "onboarding-checklist.docx"]
)
def test_each_citation_names_the_section_of_the_quoted_sentence(name: str) -> None:
    """Extractive answers: ask with a sentence of each joined section; check where it is cited."""
    kit = local_kit()
    chunks = [c for c in ingested(kit, name) if c.sections]
    assert chunks, f"{name} yields joined chunks"
    pages = pages_of(kit, name)
    checked = 0
    for chunk in chunks:
        for section in chunk.sections:
            sentence = _a_sentence(chunk, section)
            if sentence is None:
                continue
            found = answer(kit, sentence)
            cited = [c for c in found.citations if c.chunk_id == chunk.id]
            if not cited or sentence not in found.text:
                continue  # the reader preferred another passage: nothing to check here
            citation = cited[0]
            page_text = pages[citation.page_numbers[0]]
            where = _find(page_text, sentence)
            assert citation.heading_path == section_above(page_text, where), sentence
            assert citation.located == "sentence"
            assert sentence in " ".join(citation.quote.split())
            checked += 1
    assert checked >= 2, f"{name}: too few sections were checked ({checked})"


class WritesAKnownAnswer:
    """A model double: restates one sentence in its own order, citing the source that holds it."""

    def __init__(self, sentence: str) -> None:
        self.sentence = sentence

    async def generate(self, prompt: str) -> AsyncIterator[str]:
        parsed = parse_grounded_prompt(prompt)
        assert parsed is not None
        _, sources = parsed
        holder = next(s for s in sources if self.sentence in " ".join(s.text.split()))
        words = self.sentence.rstrip(".").split()
        # A paraphrase: the sentence's second half first, a few words of our own.
        half = len(words) // 2
        yield f"In short, {' '.join(words[half:])}, and {' '.join(words[:half])} [{holder.number}]."

    async def transcribe(self, image: object) -> str:
        return ""


@pytest.mark.parametrize(
    "name", ["ragsage-overview.md", "glossary.html", "onboarding-checklist.docx"]
)
def test_a_generated_answer_is_aligned_with_the_sentence_it_restates(name: str) -> None:
    kit = local_kit()
    chunks = [c for c in ingested(kit, name) if c.sections]
    pages = pages_of(kit, name)
    checked = 0
    for chunk in chunks:
        for section in chunk.sections:
            sentence = _a_sentence(chunk, section)
            if sentence is None or len(sentence.split()) < 6:
                continue
            kit.llm = WritesAKnownAnswer(sentence)  # type: ignore[assignment]
            found = answer(kit, sentence)
            citation = next((c for c in found.citations if c.chunk_id == chunk.id), None)
            if citation is None:
                continue  # the sentence is held by another retrieved passage too
            page_text = pages[citation.page_numbers[0]]
            assert citation.located == "sentence", found.text
            assert citation.heading_path == section_above(page_text, _find(page_text, sentence))
            checked += 1
    assert checked >= 2, f"{name}: too few sections were checked ({checked})"


def _a_sentence(chunk: Chunk, section: ChunkSection) -> str | None:
    """A sentence or list item of ``section`` as a reader quotes it (no marks), if any."""
    for start, end in sentence_spans(chunk.text[section.start : section.end]):
        text = _BULLET.sub("", chunk.text[section.start + start : section.start + end])
        if len(text.split()) >= 4 and text[0].isalpha() and "|" not in text:
            return " ".join(text.split())  # as a reader writes it: line wraps are spaces
    return None


def _find(page_text: str, sentence: str) -> int:
    """Where ``sentence`` starts in ``page_text``, whatever line wraps it has there."""
    found = re.search(r"\s+".join(map(re.escape, sentence.split())), page_text)
    assert found is not None, sentence
    return found.start()


_BULLET = re.compile(r"^(?:[-*+]|\d{1,3}[.)])\s+")


def test_without_aligned_words_a_citation_names_the_first_section_and_says_so() -> None:
    chunk = Chunk(
        id="d:0",
        document_id="d",
        ordinal=0,
        text="Alpha paragraph about keys.\n\n## Beta\n\nBeta paragraph about leases.",
        embed_text="",
        heading_path=("Doc", "Alpha"),
        page_numbers=(1,),
        sections=(
            ChunkSection(("Doc", "Alpha"), 0, 27, 1, 10, 37),
            ChunkSection(("Doc", "Beta"), 29, 66, 1, 39, 76),
        ),
    )
    where = locate(chunk, "Something else entirely about weather")
    assert (where.located, where.section.heading_path, where.quote) == (
        "passage",
        ("Doc", "Alpha"),
        "",
    )
    where = locate(chunk, "Leases: a beta paragraph says it.")
    assert where.located == "sentence" and where.section.heading_path == ("Doc", "Beta")
    assert where.quote == "Beta paragraph about leases."
    assert (where.page_start, where.page_end) == (48, 76)


def test_the_text_before_each_group_of_markers_belongs_to_every_number_in_it() -> None:
    claims = attributed_text("Keys are hashed. [1][2] Leases expire [3]. Both hold [1, 3].")
    assert content_words(claims[1]) == {"keys", "hashed", "both", "hold"}
    assert content_words(claims[2]) == {"keys", "hashed"}
    assert content_words(claims[3]) == {"leases", "expire", "both", "hold"}


def test_quotes_read_as_prose_and_code_stays_code() -> None:
    text = (
        "## Setup\n\n- Install the wheel.\n- Run `make run`.\n\n"
        "| Setting | Default |\n|---|---|\n| RAGSAGE_LOG_LEVEL | INFO |\n\n"
        "```python\nprint('hello')\n```\n\n1. First step done. Then the second.\n"
        "2. Short item\n3. A longer item that comes after the short one\n\n"
        "Ends a sentence.\nTitle drawn from a PDF\nThe paragraph under that title goes on."
    )
    assert quotable(text) == [
        "Install the wheel.",
        "Run `make run`.",
        "Setting; Default",
        "RAGSAGE_LOG_LEVEL; INFO",
        "```\nprint('hello')\n```",
        "First step done.",
        "Then the second.",
        "Short item",
        "A longer item that comes after the short one",
        "Ends a sentence.",
        "The paragraph under that title goes on.",
    ]


def test_a_page_of_small_sections_records_each_section_where_it_sits() -> None:
    kit = local_kit()
    text = "# Guide\n\n## Keys\n\nKeys are hashed.\n\n## Leases\n\nLeases expire after a minute.\n"
    parsed = kit.parser.parse(RawSource(content=text.encode(), filename="guide.md"))
    document = Document(id="guide", content_hash="h", title="Guide", source="guide.md")
    [chunk] = kit.chunker.chunk(document, list(parsed.pages), size=200, overlap=0)
    assert [s.heading_path for s in chunk.sections] == [("Guide", "Keys"), ("Guide", "Leases")]
    assert chunk.heading_path == ("Guide", "Keys")
    page: Page = parsed.pages[0]
    for section in chunk.sections:
        on_page = page.text[section.page_start : section.page_end]
        assert chunk.text[section.start : section.end] == on_page


def test_the_wire_form_and_the_offline_state_keep_a_chunks_sections() -> None:
    """The CLI's saved corpus and the JSON results carry the sections, as the stores do."""
    kit = local_kit()
    [joined] = [c for c in ingested(kit, "ragsage-overview.md") if c.sections][:1]
    assert chunk_from_dict(chunk_to_dict(joined)) == joined
    restored = local_kit()
    restored.restore(kit.snapshot())
    again = asyncio.run(restored.document_store.chunks(SCOPE, joined.document_id))
    assert [c.sections for c in again] == [
        c.sections for c in asyncio.run(kit.document_store.chunks(SCOPE, joined.document_id))
    ]
