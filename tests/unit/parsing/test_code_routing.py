"""Which uploads are read as source code, and in which language.

A source file is read as code by its name or label; text that is not
explicitly Markdown is read as code when it clearly is code, whatever it is
called.  Prose, and Markdown about code, stay text.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ragsage.adapters.parsing import HeuristicBackend
from ragsage.adapters.parsing.formats import DocumentFormat, route, source_language
from ragsage.core.documents import RawSource

FIXTURES = Path(__file__).parent / "source_fixtures"
BACKEND = HeuristicBackend()

EXTENSIONS = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hh": "cpp",
    ".hpp": "cpp",
    ".hxx": "cpp",
    ".cs": "csharp",
    ".rb": "ruby",
    ".rake": "ruby",
    ".gemspec": "ruby",
    ".php": "php",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".swift": "swift",
    ".sh": "bash",
    ".bash": "bash",
    ".zsh": "bash",
}

# The fixtures of the reader's tests, each in its language.
FIXTURE_LANGUAGES = {
    "cache.rs": "rust",
    "ledger.go": "go",
    "queue.ts": "typescript",
    "rate_limiter.js": "javascript",
    "Inventory.java": "java",
    "ringbuf.c": "c",
    "polygon.cpp": "cpp",
    "InvoiceService.cs": "csharp",
    "cart.rb": "ruby",
    "Refunds.php": "php",
    "Forecast.kt": "kotlin",
    "Stopwatch.swift": "swift",
    "deploy.sh": "bash",
    "tea.py": "python",
}

PROSE = """Release notes for version 2.4 (March)

This release changes how uploads are read. Source files in fourteen
languages are now split along their definitions: a search for a function
returns that function, with its class and file named above it.

Three things to know before upgrading:
the cache of parsed files is rebuilt on first start (this takes a few
minutes for a large library), the default chunk size stays at 512 tokens,
and the old behaviour is still there if you want it (set the chunking
option to "lines").

Known problems: very large generated files (over 10 MB) are still read
as plain text, and a file whose grammar is not installed is indexed
without structure. Both are logged as warnings, never as errors.

Thanks to everyone who reported problems with the previous release (see
the issue tracker for the full list): your examples made this one better.
"""

GUIDE = """Quick start

```python
from ragsage import Client


def upload_all(client: Client, paths: list[str]) -> int:
    count = 0
    for path in paths:
        client.upload(path)
        count += 1
    return count
```

Then run it:

```python
if __name__ == "__main__":
    client = Client("http://localhost:8000")
    upload_all(client, ["handbook.pdf"])
    for hit in client.search("refund policy"):
        print(hit.title, hit.score)
```
"""

CPP_HEADER = """#pragma once

#include <string>
#include <vector>

namespace store {

template <typename T>
class Cache {
public:
    explicit Cache(std::size_t capacity);
    const T* find(const std::string& key) const;

private:
    std::vector<T> items_;
};

}  // namespace store
"""

C_HEADER = """#ifndef RINGBUF_H
#define RINGBUF_H

#include <stddef.h>

struct ringbuf;

struct ringbuf *ringbuf_new(size_t capacity);
size_t ringbuf_write(struct ringbuf *rb, const unsigned char *src, size_t n);
int ringbuf_getc(struct ringbuf *rb);
void ringbuf_free(struct ringbuf *rb);

#endif /* RINGBUF_H */
"""


def _fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def _format_of(language: str) -> DocumentFormat:
    return DocumentFormat.PYTHON if language == "python" else DocumentFormat.CODE


def _language(source: RawSource) -> str | None:
    found = source_language(source)
    return found.name if found is not None else None


@pytest.mark.parametrize(("extension", "language"), EXTENSIONS.items())
def test_each_source_extension_is_read_as_code_in_its_language(
    extension: str, language: str
) -> None:
    source = RawSource(b"x\n", f"src/module{extension}")
    assert route(source) is _format_of(language)
    assert _language(source) == language


def test_extensions_are_matched_whatever_their_case() -> None:
    assert route(RawSource(b"x\n", "CMD/MAIN.GO")) is DocumentFormat.CODE
    assert _language(RawSource(b"x\n", "Lib/Cache.RS")) == "rust"


@pytest.mark.parametrize(("fixture", "language"), FIXTURE_LANGUAGES.items())
def test_a_txt_file_that_is_clearly_code_is_read_as_code_in_its_language(
    fixture: str, language: str
) -> None:
    for source in (
        RawSource(_fixture(fixture), "paste.txt"),
        RawSource(_fixture(fixture), "paste.txt", "text/plain"),
        RawSource(_fixture(fixture), "upload"),
    ):
        assert route(source) is _format_of(language)
        assert _language(source) == language


def test_code_uploaded_as_txt_is_parsed_as_code_through_the_backend() -> None:
    parsed = BACKEND.parse(RawSource(_fixture("cache.rs"), "notes/paste.txt", "text/plain"))
    assert parsed.metadata["format"] == "code"
    assert parsed.metadata["language"] == "rust"
    assert "## impl<K: Hash + Eq + Clone, V> Lru<K, V>" in parsed.pages[0].text


def test_a_text_plain_label_does_not_hide_a_go_file() -> None:
    source = RawSource(_fixture("ledger.go"), "main.go", "text/plain; charset=utf-8")
    assert route(source) is DocumentFormat.CODE
    parsed = BACKEND.parse(source)
    assert parsed.metadata["format"] == "code"
    assert parsed.metadata["language"] == "go"


def test_prose_with_parentheses_and_colons_stays_text() -> None:
    source = RawSource(PROSE.encode(), "release-notes.txt")
    assert route(source) is DocumentFormat.TEXT
    assert source_language(source) is None
    assert BACKEND.parse(source).metadata["format"] == "text"


def test_markdown_with_code_examples_stays_text_even_named_txt() -> None:
    source = RawSource(GUIDE.encode(), "guide.txt")
    assert route(source) is DocumentFormat.TEXT
    # The same lines without the fences are code: the fences are what says "document".
    unfenced = "\n".join(line for line in GUIDE.split("\n") if not line.startswith("```"))
    assert route(RawSource(unfenced.encode(), "guide.txt")) is DocumentFormat.PYTHON


def test_explicit_markdown_is_never_read_as_code() -> None:
    code = _fixture("ledger.go")
    assert route(RawSource(code, "ledger.txt")) is DocumentFormat.CODE
    assert route(RawSource(code, "docs/ledger.md")) is DocumentFormat.TEXT
    assert route(RawSource(code, "ledger.markdown")) is DocumentFormat.TEXT
    assert route(RawSource(code, "upload", "text/markdown")) is DocumentFormat.TEXT
    # A Markdown label stands even on a source file's name.
    assert route(RawSource(code, "main.go", "text/markdown")) is DocumentFormat.TEXT


def test_a_header_with_cpp_signals_is_cpp_and_a_plain_c_header_is_c() -> None:
    cpp = RawSource(CPP_HEADER.encode(), "include/store/cache.h")
    c = RawSource(C_HEADER.encode(), "include/ringbuf.h")
    assert route(cpp) is DocumentFormat.CODE and route(c) is DocumentFormat.CODE
    assert _language(cpp) == "cpp"
    assert _language(c) == "c"
    parsed = BACKEND.parse(cpp)
    assert parsed.metadata["language"] == "cpp"
    assert "## namespace store" in parsed.pages[0].text
    assert BACKEND.parse(c).metadata["language"] == "c"


def test_a_ts_file_labelled_as_mpeg_transport_stream_is_typescript() -> None:
    # Python's mimetypes maps .ts to video/mp2t, and some clients send just that.
    source = RawSource(_fixture("queue.ts"), "x.ts", "video/mp2t")
    assert route(source) is DocumentFormat.CODE
    assert _language(source) == "typescript"
    parsed = BACKEND.parse(source)
    assert parsed.metadata["format"] == "code"
    assert parsed.metadata["language"] == "typescript"
    assert "## export class RetryQueue extends EventEmitter" in parsed.pages[0].text


def test_a_source_media_type_names_the_language_of_an_unnamed_upload() -> None:
    source = RawSource(_fixture("cart.rb"), "upload", "text/x-ruby")
    assert route(source) is DocumentFormat.CODE
    assert _language(source) == "ruby"
