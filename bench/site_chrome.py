"""Site navigation left in chunks: the lines a site repeats on its pages, found in the index.

    python bench/site_chrome.py [--doc-root /usr/share/doc] [--chunk-size 512]

A *chrome line* of a package folder (``<doc-root>/<package>/...``, five pages or
more) is a line of visible text that

* holds a letter or digit (a lone ``}`` of a code sample is not navigation),
* appears on at least 20% of the folder's pages (and on two or more), and
* on at least 20% of them sits in a run of three or more such repeated lines
  most of which are link text: a menu, a breadcrumb trail, a version picker.

The third condition is what tells a menu ("Home", "Downloads", "FAQ" ...) from
content a manual repeats on purpose (the "History | Version | Changes" header of
an API changelog, "Returns:" in every function's entry), which is not chrome.

A chunk *holds chrome* when one of its lines, with Markdown marks (headings,
bullets, emphasis) taken off, is a chrome line of two words or more that the
folder never shows outside its menus ("Related links"), or when two of its
lines in a row are two neighbouring lines of a menu ("Home" then
"Introduction"), or its text holds such a pair joined by a space (a menu
flattened into one paragraph).  Single words and lines that also serve as
titles ("Buffer", "Events") count only in pairs: alone they are just as often
a mention in the prose.

Run alone, this script chunks every page in process with the offline defaults
and prints the count; ``bench/real_corpus.py`` applies the same
count to the chunks a real queue ingestion stored.
"""

from __future__ import annotations

import argparse
import html.parser
import os
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ragsage.adapters.parsing import HeuristicBackend
from ragsage.core.documents import Document, RawSource

_BREAKS = frozenset(
    "address article aside blockquote br caption dd details div dl dt figcaption figure footer "
    "form h1 h2 h3 h4 h5 h6 header hr li main nav ol p pre section summary table td th title "
    "tr ul".split()
)
_SKIPPED = frozenset({"script", "style", "template", "noscript"})
_MARKS = re.compile(r"^(?:#{1,6}\s+|[-*+]\s+|\d+[.)]\s+|>\s*)+")
_SPACE = re.compile(r"\s+")
SHARE = 0.2
MIN_PAGES = 5
RUN = 3


@dataclass(frozen=True, slots=True)
class Line:
    text: str
    is_link: bool


@dataclass(slots=True)
class Chrome:
    """A package folder's chrome: lines found only in its menus, and neighbouring menu lines."""

    lines: set[str]
    pairs: set[tuple[str, str]]


class _VisibleLines(html.parser.HTMLParser):
    """Visible text cut at block boundaries, each line marked when it is mostly link text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[Line] = []
        self._parts: list[tuple[str, bool]] = []
        self._skip = 0
        self._links = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIPPED:
            self._skip += 1
        elif tag == "a" and any(name == "href" for name, _ in attrs):
            self._links += 1
        elif tag in _BREAKS:
            self._end_line()

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED:
            self._skip = max(0, self._skip - 1)
        elif tag == "a":
            self._links = max(0, self._links - 1)
        elif tag in _BREAKS:
            self._end_line()

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        pieces = data.split("\n")
        for index, piece in enumerate(pieces):
            if index:
                self._end_line()
            self._parts.append((piece, self._links > 0))

    def close(self) -> None:
        super().close()
        self._end_line()

    def _end_line(self) -> None:
        text = _SPACE.sub(" ", "".join(part for part, _ in self._parts)).strip()
        linked = sum(len(part.strip()) for part, link in self._parts if link)
        self._parts = []
        if text:
            self.lines.append(Line(text, linked * 2 >= len(text)))


def visible_lines(raw: bytes) -> list[Line]:
    parser = _VisibleLines()
    parser.feed(raw.decode("utf-8", "replace"))
    parser.close()
    return parser.lines


def html_pages(doc_root: Path) -> list[Path]:
    """Every regular .html/.htm file under the root, sorted by relative path (no symlinks)."""
    found = []
    for directory, _subdirectories, files in os.walk(doc_root):
        for name in files:
            path = Path(directory) / name
            if name.endswith((".html", ".htm")) and path.is_file() and not path.is_symlink():
                found.append(path)
    return sorted(found, key=lambda path: str(path.relative_to(doc_root)))


def package_of(doc_root: Path, path: Path) -> str:
    return path.relative_to(doc_root).parts[0]


def chrome_lines(doc_root: Path, pages: Iterable[Path]) -> dict[str, Chrome]:
    """Each package folder's chrome lines (see the module docstring)."""
    by_package: dict[str, list[list[Line]]] = defaultdict(list)
    for path in pages:
        by_package[package_of(doc_root, path)].append(visible_lines(path.read_bytes()))
    chrome: dict[str, Chrome] = {}
    for package, documents in by_package.items():
        if len(documents) < MIN_PAGES:
            continue
        threshold = max(2.0, SHARE * len(documents))
        seen = Counter(line for lines in documents for line in {ln.text for ln in lines})
        in_menus: Counter[str] = Counter()
        elsewhere: set[str] = set()
        runs: list[list[str]] = []
        for lines in documents:
            page_runs = _menu_runs(lines, seen, threshold)
            runs.extend(page_runs)
            menu_lines = {line for run in page_runs for line in run}
            in_menus.update(menu_lines)
            elsewhere.update(line.text for line in lines if line.text not in menu_lines)
        common = {line for line, pages_with in in_menus.items() if pages_with >= threshold}
        pairs = {
            (first, second)
            for run in runs
            for first, second in zip(run, run[1:], strict=False)
            if first in common and second in common
        }
        chrome[package] = Chrome(common - elsewhere, pairs)
    return chrome


def _menu_runs(lines: list[Line], seen: Counter[str], threshold: float) -> list[list[str]]:
    found: list[list[str]] = []
    start = 0
    while start < len(lines):
        end = start
        while end < len(lines) and _repeated(lines[end], seen, threshold):
            end += 1
        run = lines[start:end]
        if len(run) >= RUN and sum(line.is_link for line in run) * 2 > len(run):
            found.append([line.text for line in run])
        start = max(end, start + 1)
    return found


def _repeated(line: Line, seen: Counter[str], threshold: float) -> bool:
    return seen[line.text] >= threshold and any(ch.isalnum() for ch in line.text)


def chunk_lines(text: str) -> list[str]:
    """A chunk's lines in order without Markdown marks (headings, bullets, emphasis)."""
    out: list[str] = []
    for raw in text.split("\n"):
        line = _MARKS.sub("", raw.strip()).replace("**", "").replace("`", "").strip()
        if line:
            out.append(_SPACE.sub(" ", line))
    return out


def chrome_in(text: str, chrome: Chrome) -> set[str]:
    """The chrome a chunk's text holds: menu-only lines, or two neighbouring menu lines."""
    lines = chunk_lines(text)
    flat = _SPACE.sub(" ", text)
    found = {line for line in lines if line in chrome.lines and len(line.split()) >= 2}
    for first, second in zip(lines, lines[1:], strict=False):
        if (first, second) in chrome.pairs:
            found.add(f"{first} / {second}")
    found.update(
        f"{first} {second}" for first, second in chrome.pairs if _holds(flat, f"{first} {second}")
    )
    return found


def _holds(flat: str, phrase: str) -> bool:
    return phrase in flat and re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", flat) is not None


def count_chrome(
    chunks: Iterable[tuple[str, str]], chrome: Mapping[str, Chrome]
) -> tuple[int, Counter[str]]:
    """Chunks (package, text) holding any chrome line of their package, and which lines."""
    bad, lines = 0, Counter[str]()
    for package, text in chunks:
        rules = chrome.get(package)
        found = chrome_in(text, rules) if rules is not None else set()
        if found:
            bad += 1
            lines.update(found)
    return bad, lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--doc-root", type=Path, default=Path("/usr/share/doc"))
    parser.add_argument("--chunk-size", type=int, default=512)
    args = parser.parse_args()
    pages = html_pages(args.doc_root)
    chrome = chrome_lines(args.doc_root, pages)
    print(f"{len(pages)} pages; chrome lines per package folder:")
    for package, rules in sorted(chrome.items()):
        print(f"  {package}: {len(rules.lines)}")
    backend = HeuristicBackend()
    chunks: list[tuple[str, str]] = []
    for path in pages:
        name = str(path.relative_to(args.doc_root))
        parsed = backend.parse(RawSource(path.read_bytes(), name))
        document = Document(id=name, content_hash="", title=parsed.title or name, source=name)
        for chunk in backend.chunk(document, parsed.pages, size=args.chunk_size, overlap=0):
            chunks.append((package_of(args.doc_root, path), chunk.text))
    report(chunks, chrome)


def report(chunks: list[tuple[str, str]], chrome: Mapping[str, Chrome], show: int = 20) -> int:
    """Print how many chunks hold chrome, and the lines most often found; returns the count."""
    bad, lines = count_chrome(chunks, chrome)
    print(f"{len(chunks)} chunks; {bad} hold a chrome line")
    for line, times in lines.most_common(show):
        print(f"  {times:5d}  {line!r}")
    return bad


if __name__ == "__main__":
    main()
