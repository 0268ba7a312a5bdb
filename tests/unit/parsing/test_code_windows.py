"""Long definitions are cut into windows, and every code chunk knows its file lines.

Run over the real-shaped fixture of every language, at a window small enough
that their longer functions are cut: each chunk's ``lines`` are exactly the
file's lines its text holds, the windows of one definition follow each other
under one heading path, each opening with the last lines of the one before
and none leaving a line out, no window is much over the window (a quarter of
the one before is repeated), and a definition under the window, or a file's
own code, is not cut into windows.  A later window's embed text carries the
first line of its definition's doc comment.
"""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragsage.adapters.parsing import HeuristicBackend
from ragsage.adapters.parsing.contextualizing import HeadingWindowContextualizer, doc_summary
from ragsage.adapters.parsing.tokens import make_token_counter
from ragsage.core.chunks import Chunk
from ragsage.core.documents import Document, RawSource
from tests.unit.parsing.fenced import code_lines
from tests.unit.parsing.source_cases import FIXTURES

count = make_token_counter("cl100k_base")
WINDOW = 64
SOURCES = sorted(p for p in FIXTURES.iterdir() if p.suffix not in (".md",))


def _chunks(
    source: str, filename: str, *, window: int = WINDOW, reading: str = "definitions"
) -> tuple[list[Chunk], Document, HeuristicBackend]:
    backend = HeuristicBackend(code_window=window, code_chunking=reading)
    parsed = backend.parse(RawSource(source.encode(), filename))
    document = Document(
        id="doc", content_hash="h", title=filename, source=filename, metadata=parsed.metadata
    )
    chunks = list(backend.chunk(document, parsed.pages, size=512, overlap=64))
    return chunks, document, backend


def _body(chunk: Chunk) -> str:
    return "\n".join(code_lines(chunk.text))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_every_code_chunk_names_the_file_lines_its_text_holds(path: object) -> None:
    assert hasattr(path, "read_text")
    source = path.read_text()  # type: ignore[attr-defined]
    lines = source.split("\n")
    for reading in ("definitions", "lines"):
        chunks, _, _ = _chunks(source, path.name, reading=reading)  # type: ignore[attr-defined]
        assert chunks
        for chunk in chunks:
            first, last = chunk.metadata["lines"]
            assert "\n".join(lines[first - 1 : last]).strip("\n") == _body(chunk).strip("\n")
            assert "startline=" not in chunk.text


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_long_definitions_keep_their_whole_and_gain_even_windows(path: object) -> None:
    source = path.read_text()  # type: ignore[attr-defined]
    chunks, _, _ = _chunks(source, path.name)  # type: ignore[attr-defined]
    runs: dict[tuple[str, ...], list[Chunk]] = {}
    wholes: dict[tuple[str, ...], list[Chunk]] = {}
    for chunk in chunks:
        if "window" in chunk.metadata:
            runs.setdefault(chunk.heading_path, []).append(chunk)
        else:
            wholes.setdefault(chunk.heading_path, []).append(chunk)
    for path_, whole in wholes.items():
        for chunk in whole:
            # Whole: under the window, a heading alone, the file's own code, or a
            # long definition that also has windows.
            small = count(chunk.text) <= WINDOW or "```" not in chunk.text
            assert small or len(path_) == 1 or path_ in runs
    for path_, run in runs.items():
        # Every line of the windows is in the definition's whole chunks, just before them.
        covered = [tuple(c.metadata["lines"]) for c in wholes[path_] if "lines" in c.metadata]
        first, last = run[0].metadata["lines"][0], run[-1].metadata["lines"][1]
        assert any(low <= first for low, _ in covered) and any(high >= last for _, high in covered)
        assert max(c.ordinal for c in wholes[path_]) < run[0].ordinal
    for run in runs.values():
        total = len(run)
        assert [c.metadata["window"] for c in run] == [[k, total] for k in range(1, total + 1)]
        assert [c.ordinal for c in run] == list(range(run[0].ordinal, run[0].ordinal + total))
        assert all(count(c.text) <= _most(WINDOW) for c in run)
        for before, after in zip(run, run[1:], strict=False):
            (first, last), (next_first, _) = before.metadata["lines"], after.metadata["lines"]
            assert first < next_first <= last + 1, "windows overlap or touch, never skip"
    # Fixtures whose functions run past 64 tokens are cut somewhere.
    assert runs or max(count(c.text) for c in chunks) <= WINDOW


def _most(window: int) -> int:
    """A window's ceiling: its share, the quarter of the one before it repeats, fences."""
    return round(window * 1.25) + 8


def test_the_lines_reading_and_a_window_of_zero_cut_no_windows() -> None:
    source = (FIXTURES / "ledger.go").read_text()
    for chunks in (
        _chunks(source, "ledger.go", reading="lines")[0],
        _chunks(source, "ledger.go", window=0)[0],
    ):
        assert not any("window" in chunk.metadata for chunk in chunks)


GO_LONG = """package retry

// Do calls fn until it succeeds, waiting longer after each failure.
func Do(ctx context.Context, attempts int, fn func() (*http.Response, error)) error {{
{body}
}}
"""
GO_STEP = """\tresp{n}, err := fn()
\tif err == nil && resp{n}.StatusCode == 429 {{
\t\twait := resp{n}.Header.Get("Retry-After")
\t\tlog.Printf("attempt {n}: throttled, waiting %s", wait)
\t}}"""


def test_a_later_window_embeds_its_definitions_doc_line() -> None:
    source = GO_LONG.format(body="\n".join(GO_STEP.format(n=n) for n in range(12)))
    chunks, document, backend = _chunks(source, "retry/do.go")
    later = [c for c in chunks if c.metadata.get("window", [1])[0] > 1]
    assert later, "the function is cut into windows"
    parsed = backend.parse(RawSource(source.encode(), "retry/do.go"))
    texts = asyncio.run(
        HeadingWindowContextualizer().contextualize_pages(document, chunks, parsed.pages)
    )
    by_id = dict(zip((c.id for c in chunks), texts, strict=True))
    summary = "Summary: Do calls fn until it succeeds, waiting longer after each failure."
    assert all(summary in by_id[c.id] for c in later)
    first = next(c for c in chunks if c.metadata.get("window", [0])[0] == 1)
    assert "Summary:" not in by_id[first.id], "the first window holds the comment itself"


@pytest.mark.parametrize(
    ("lines", "summary"),
    [
        (["def fetch(url):", '    """Fetch a page, following redirects."""'], "Fetch a page"),
        (["def fetch(url):", '    """', "    Fetch a page.", '    """'], "Fetch a page."),
        (["/**", " * Parses a header value.", " */", "int parse(char *s) {"], "Parses a"),
        (["# Copyright 2020 Someone", "# Runs the job.", "run() {"], "Runs the job."),
        (["func run() {", "\t// a note inside the body", "\tx := 1"], None),
        (["@cache", "def fetch(url):", "    return get(url)"], None),
    ],
)
def test_the_doc_line_is_the_definitions_own_comment(lines: list[str], summary: str | None) -> None:
    found = doc_summary(lines)
    if summary is None:
        assert found is None
    else:
        assert found is not None and found.startswith(summary)


@settings(max_examples=40, deadline=None)
@given(
    steps=st.integers(min_value=1, max_value=40),
    window=st.integers(min_value=24, max_value=300),
)
def test_windows_never_pass_the_window_and_lose_no_line(steps: int, window: int) -> None:
    source = GO_LONG.format(body="\n".join(GO_STEP.format(n=n) for n in range(steps)))
    chunks, _, _ = _chunks(source, "retry/do.go", window=window)
    lines = source.split("\n")
    covered: set[int] = set()
    for chunk in chunks:
        first, last = chunk.metadata["lines"]
        assert "\n".join(lines[first - 1 : last]).strip("\n") == _body(chunk).strip("\n")
        covered |= set(range(first, last + 1))
        if "window" in chunk.metadata:
            assert count(chunk.text) <= min(_most(window), 512)
    assert {n for n, line in enumerate(lines, 1) if line.strip()} <= covered
