"""The Python source reader: structure as headings, code kept whole, never a failed job."""

from __future__ import annotations

import logging
import re

import pytest

from ragsage.adapters.parsing import HeuristicBackend, LayoutPageClassifier
from ragsage.adapters.parsing.contextualizing import HeadingWindowContextualizer
from ragsage.adapters.parsing.formats import DocumentFormat, route
from ragsage.adapters.parsing.readers.code import module_name, read_python
from ragsage.core.documents import Document, RawSource
from ragsage.core.scopes import Scope
from ragsage.ingestion import IngestionConfig
from ragsage.testing import FakeEngineKit
from tests.unit.parsing.fenced import code_lines

SOURCE = '''"""Tools for brewing tea.

Longer explanation that stays in the code block.
"""

import asyncio

STRENGTH = 3


class Kettle(Appliance, metaclass=Registry):
    """Boils water."""

    capacity = 1.5

    def __init__(self, litres: float = 1.0) -> None:
        self.litres = litres

    # Keeps the element from burning out.
    @staticmethod
    def guard(temperature: int) -> bool:
        def inner() -> int:
            return temperature
        return inner() < 100

    class Settings:
        def reset(self):
            pass

    label = "kettle"


async def brew(pot: "Kettle", *leaves: str, steep: int = 4, **extras: object) -> str:
    await asyncio.sleep(steep)
    return "tea"


if __name__ == "__main__":
    print(brew)
'''


def _read(content: str | bytes, filename: str = "kitchen/tea.py") -> str:
    raw = content.encode() if isinstance(content, str) else content
    parsed = read_python(RawSource(raw, filename, "text/x-python"))
    assert len(parsed.pages) == 1
    return parsed.pages[0].text


def _headings(markdown: str) -> list[str]:
    outside, found = True, []
    for line in markdown.split("\n"):
        if line.startswith("```"):
            outside = not outside
        elif outside and line.startswith("#"):
            found.append(line)
    return found


def test_headings_follow_the_structure_with_signatures_and_nesting() -> None:
    assert _headings(_read(SOURCE)) == [
        "# module kitchen.tea — Tools for brewing tea.",
        "## class Kettle(Appliance, metaclass=Registry)",
        "### def __init__(self, litres: float = 1.0) -> None",
        "### @staticmethod def guard(temperature: int) -> bool",
        "### class Settings",
        "#### def reset(self)",
        # Class-level code after the nested class is filed under the class again.
        "## class Kettle(Appliance, metaclass=Registry)",
        "## async def brew(pot: 'Kettle', *leaves: str, steep: int = 4, **extras: object) -> str",
        "# module kitchen.tea — Tools for brewing tea.",
    ]


def test_every_line_of_code_is_kept_once_and_in_order() -> None:
    kept = [line for line in code_lines(_read(SOURCE)) if line.strip()]
    assert kept == [line for line in SOURCE.split("\n") if line.strip()]


def test_decorators_and_the_comment_above_stay_with_their_definition() -> None:
    markdown = _read(SOURCE)
    section = markdown.split("### @staticmethod def guard(temperature: int) -> bool\n", 1)[1]
    block = section.split("\n```\n", 1)[0]
    assert block.split("\n")[2:5] == [
        "    # Keeps the element from burning out.",
        "    @staticmethod",
        "    def guard(temperature: int) -> bool:",
    ]
    # A function inside a function is part of its parent, not a heading of its own.
    assert "        def inner() -> int:" in block


def test_async_definitions_keep_async_in_the_heading() -> None:
    markdown = _read("async def fetch(url: str) -> bytes:\n    return b''\n")
    assert "## async def fetch(url: str) -> bytes" in markdown


def test_long_signatures_are_cut_at_a_parameter() -> None:
    params = ", ".join(f"parameter_number_{i}=None" for i in range(12))
    markdown = _read(f"def configure({params}):\n    pass\n")
    heading = _headings(markdown)[1]
    assert heading.startswith("## def configure(parameter_number_0=None, ")
    assert heading.endswith(", …)") and len(heading) < 140
    assert f"def configure({params}):" in markdown


def test_a_coding_cookie_is_honoured() -> None:
    content = "# -*- coding: latin-1 -*-\ndef café():\n    return 'crème'\n".encode("latin-1")
    markdown = _read(content, "menu.py")
    assert "## def café()" in markdown and "return 'crème'" in markdown


def test_a_file_that_does_not_parse_is_indexed_whole_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    broken = "def ok():\n    return 1\n\nprint 'python 2'\n"
    with caplog.at_level(logging.WARNING, logger="ragsage.adapters.parsing.readers.code"):
        parsed = read_python(RawSource(broken.encode(), "legacy/old.py"))
    assert parsed.title == "legacy.old"
    assert "line 4" in parsed.metadata["parse_warning"]
    assert _headings(parsed.pages[0].text) == ["# module legacy.old"]
    assert code_lines(parsed.pages[0].text) == broken.rstrip("\n").split("\n")
    assert "legacy/old.py" in caplog.text and "without code structure" in caplog.text


def test_undecodable_bytes_are_indexed_with_a_warning_not_refused() -> None:
    parsed = HeuristicBackend().parse(RawSource(b"x = '\xff\xfe'\n", "odd.py"))
    assert "encoding" in parsed.metadata["parse_warning"]
    assert "x = '" in parsed.pages[0].text


@pytest.mark.parametrize(
    ("filename", "expected"),
    [
        ("shutil.py", "shutil"),
        ("json/decoder.py", "json.decoder"),
        ("json/__init__.py", "json"),
        ("src/ragsage/parsing/chunking.py", "ragsage.parsing.chunking"),
        ("C:\\src\\pkg\\mod.py", "pkg.mod"),
        ("/usr/lib/python3.11/email/utils.py", "email.utils"),
        ("my-scripts/run.py", "run"),
    ],
)
def test_module_names_follow_the_import_path(filename: str, expected: str) -> None:
    assert module_name(filename) == expected


@pytest.mark.parametrize(
    ("filename", "media_type", "expected"),
    [
        ("tea.py", None, DocumentFormat.PYTHON),
        ("stubs.PYI", None, DocumentFormat.PYTHON),
        ("upload", "text/x-python", DocumentFormat.PYTHON),
        ("tea.py", "text/plain", DocumentFormat.PYTHON),
        ("notes.txt", "text/plain", DocumentFormat.TEXT),
        ("tea.py", "text/html", DocumentFormat.HTML),
    ],
)
def test_python_source_is_routed_to_the_source_reader(
    filename: str, media_type: str | None, expected: DocumentFormat
) -> None:
    assert route(RawSource(b"x = 1\n", filename, media_type)) is expected


def test_a_long_method_split_into_chunks_keeps_its_path() -> None:
    body = "\n".join(f"        total += step_{i} * {i}" for i in range(200))
    source = f"class Ledger:\n    def sum(self):\n        total = 0\n{body}\n        return total\n"
    backend = HeuristicBackend()
    parsed = backend.parse(RawSource(source.encode(), "books/ledger.py"))
    document = Document(id="d", content_hash="0" * 64, title="books.ledger", source="x")
    chunks = backend.chunk(document, parsed.pages, size=200, overlap=20)
    assert len(chunks) > 3
    assert {c.heading_path for c in chunks if "total" in c.text} == {
        ("module books.ledger", "class Ledger", "def sum(self)")
    }


async def test_a_method_chunk_carries_its_class_and_module_through_ingestion() -> None:
    backend = HeuristicBackend()
    kit = FakeEngineKit(
        parser=backend,
        classifier=LayoutPageClassifier(),
        chunker=backend,
        contextualizer=HeadingWindowContextualizer(window=0),
    )
    scope = Scope("kitchen")
    pipeline = kit.ingestion(IngestionConfig(chunk_size=200, chunk_overlap=20))
    result = await pipeline.ingest(scope, RawSource(SOURCE.encode(), "kitchen/tea.py"))
    chunks = await kit.document_store.chunks(scope, result.document.id)
    guard = next(c for c in chunks if "def guard" in c.text)
    assert guard.heading_path == (
        "module kitchen.tea — Tools for brewing tea.",
        "class Kettle(Appliance, metaclass=Registry)",
        "@staticmethod def guard(temperature: int) -> bool",
    )
    # What gets embedded names where the method lives.
    assert re.search(
        r"Section: module kitchen\.tea .*> class Kettle.*> @staticmethod def guard",
        guard.embed_text,
    )
    assert result.document.title == "kitchen.tea"
    assert result.document.metadata["format"] == "python"


def test_form_feeds_do_not_shift_code_out_of_its_section() -> None:
    source = "import os\n\x0c\ndef a():\n    return 1\n\x0c\ndef b():\n    return 2\n"
    text = _read(source, "m.py")
    sections = text.split("\n## ")
    assert "def a():\n    return 1" in next(s for s in sections if s.startswith("def a()"))
    assert "def b():\n    return 2" in next(s for s in sections if s.startswith("def b()"))


def test_code_nested_too_deeply_to_parse_is_indexed_whole() -> None:
    parsed = HeuristicBackend().parse(RawSource(b"x = 1" + b"+1" * 100_000, "deep.py"))
    assert parsed.metadata["parse_warning"] == "nested too deeply to parse"
    assert parsed.pages[0].text.startswith("# module deep")


def test_a_markdown_label_stands_even_on_a_py_name() -> None:
    assert route(RawSource(b"# Setup\n\nRun it.", "notes/setup.py", "text/markdown")) == (
        DocumentFormat.TEXT
    )
    assert route(RawSource(b"x = 1\n", "setup.py", "text/plain")) == DocumentFormat.PYTHON
