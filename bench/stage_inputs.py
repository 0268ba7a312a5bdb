"""The inputs of the stage benchmark: real pages of this machine joined or tiled to a size."""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import io
import itertools
import os
import random
import re
import sys
import textwrap
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

# Run as a script, this folder is on sys.path: its sibling modules import directly.
from site_chrome import html_pages

from ragsage.core.documents import RawSource

ROOT = Path(__file__).resolve().parents[1]
SITE_PAGES = ROOT / "tests" / "unit" / "parsing" / "site_pages.py"
KINDS = ("html-site", "html-docs", "markdown", "pdf")
MB = 1_000_000
# Raised whenever the drawing below changes, so cached PDFs of an older shape are not reused.
PDF_VERSION = 1
_UNITS = {"B": 1, "KB": 1_000, "MB": 1_000_000, "GB": 1_000_000_000}
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([KMG]?B)")
_BODY_OPEN = re.compile(rb"<body\b[^>]*>", re.IGNORECASE)
_BODY_CLOSE = re.compile(rb"</body\s*>", re.IGNORECASE)
_HEAD_END = re.compile(rb"</head\s*>", re.IGNORECASE)
_MARKDOWN_NAMES = (".md", ".markdown", ".md.gz", ".markdown.gz")

WORDS = (
    "the a of to and in is that for it as with on by be this are from or at which can an "
    "not each when one all if more than their its only two into after before every no "
    "document page chunk token budget heading table list paragraph section parser reader "
    "index query vector lexical search rank score worker queue job lease retry tenant "
    "namespace embedding model cache request response server client stream buffer file "
    "path module function class method value argument option default error event handler "
    "callback promise timer socket connection header body element node tree layout menu "
    "link version release memory process thread signal encoding character string number "
    "returns creates reads writes sends receives opens closes starts stops emits checks "
    "holds keeps drops splits joins counts measures stores loads parses builds runs "
    "new old first last next previous whole empty large small fast slow safe local remote"
).split()
IDENTIFIERS = (
    "fs.readFile",
    "os.path.join",
    "Buffer.from()",
    "http.createServer",
    "xmlParseMemory",
    "ThreadPoolExecutor",
    "getLogger",
    "EventEmitter",
    "stream.pipeline()",
    "process.env",
)


class Prose:
    """Deterministic sentences of technical prose, for the generated inputs."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def words(self, low: int, high: int) -> str:
        return " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(low, high)))

    def sentence(self) -> str:
        words = self.words(6, 24).split()
        if self.rng.random() < 0.3:
            words.insert(self.rng.randrange(len(words)), f"`{self.rng.choice(IDENTIFIERS)}`")
        if self.rng.random() < 0.2:
            words.insert(self.rng.randrange(len(words)), str(self.rng.randint(2, 4096)))
        text = " ".join(words)
        return text[:1].upper() + text[1:] + self.rng.choice("....?!")

    def paragraph(self) -> str:
        return " ".join(self.sentence() for _ in range(self.rng.randint(2, 7)))

    def title(self) -> str:
        return self.words(2, 5).title()

    def code(self) -> list[str]:
        lines: list[str] = []
        for _ in range(self.rng.randint(3, 14)):
            name, call = self.rng.choice(WORDS), self.rng.choice(IDENTIFIERS).rstrip("()")
            lines.append(f"const {name} = {call}({self.rng.choice(WORDS)!r}, {len(lines)});")
        return lines


# --- inputs -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Input:
    kind: str
    label: str
    source: RawSource
    origin: str


def parse_size(text: str) -> int:
    match = _SIZE.fullmatch(text.strip().upper())
    if match is None:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (write 100KB, 1MB, 2.5MB ...)")
    return int(float(match.group(1)) * _UNITS[match.group(2)])


def size_label(size: int) -> str:
    for unit in ("GB", "MB", "KB"):
        if size >= _UNITS[unit]:
            return f"{size / _UNITS[unit]:g}{unit}"
    return f"{size}B"


def body_of(page: bytes) -> bytes:
    """What lies between a page's ``<body>`` and its last ``</body>``."""
    opened = _BODY_OPEN.search(page)
    head_end = _HEAD_END.search(page)
    start = opened.end() if opened else head_end.end() if head_end else 0
    closes = [found.start() for found in _BODY_CLOSE.finditer(page, start)]
    return page[start : closes[-1] if closes else len(page)].strip()


def join_html(bodies: Iterator[bytes], size: int, title: str) -> tuple[bytes, int]:
    """One page of ``size`` bytes (or just under) holding the bodies in turn; how many."""
    head = b"<!DOCTYPE html>\n<html><head><title>" + title.encode() + b"</title></head><body>\n"
    tail = b"\n</body></html>\n"
    room = size - len(head) - len(tail)
    parts: list[bytes] = []
    used = 0
    for body in bodies:
        if used + len(body) + 1 > room:
            # The last body is cut before a tag, so no tag is left half-written.
            cut = body.rfind(b"<", 0, max(0, room - used - 1))
            if cut > 0:
                parts.append(body[:cut])
            break
        parts.append(body)
        used += len(body) + 1
    return head + b"\n".join(parts) + tail, len(parts)


def join_text(texts: Iterator[bytes], size: int) -> tuple[bytes, int]:
    """Texts joined by blank lines up to ``size`` bytes, the last one cut at a line end."""
    parts: list[bytes] = []
    used = 0
    for text in texts:
        if used + len(text) + 2 > size:
            cut = text.rfind(b"\n", 0, max(0, size - used - 2))
            if cut > 0:
                parts.append(text[:cut])
            break
        parts.append(text)
        used += len(text) + 2
    return b"\n\n".join(parts), len(parts)


def _site_pages() -> ModuleType:
    spec = importlib.util.spec_from_file_location("site_pages", SITE_PAGES)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load the page generators at {SITE_PAGES}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def site_bodies() -> Iterator[bytes]:
    """Bodies of generated documentation pages, old layout and modern by turns, endlessly."""
    module = _site_pages()
    layout_page: Callable[..., Any] = module.layout_page
    modern_page: Callable[..., Any] = module.modern_page
    prose = Prose(11)
    for number in itertools.count():
        paragraphs = [prose.paragraph() for _ in range(prose.rng.randint(2, 6))]
        if number % 3 == 2:
            page = modern_page(paragraphs)
        else:
            page = layout_page(
                paragraphs,
                items=[prose.sentence() for _ in range(prose.rng.randint(0, 6))],
                code=prose.code() if prose.rng.random() < 0.5 else None,
                rows=[(prose.rng.choice(IDENTIFIERS), prose.sentence()) for _ in range(4)],
                banner=prose.title(),
                page_name=f"page{number}.html",
            )
        yield body_of(str(page.html).encode())


def cycled(paths: Sequence[Path], read: Callable[[Path], bytes | None]) -> Iterator[bytes]:
    """What ``read`` gives for each path in turn, the list started again when it runs out."""
    cache: dict[Path, bytes | None] = {}
    for path in itertools.cycle(paths):
        if path not in cache:
            cache[path] = read(path)
        found = cache[path]
        if found is not None:
            yield found


def markdown_files(doc_root: Path) -> list[Path]:
    """Every regular Markdown file under the root, gzipped or not, sorted (no symlinks)."""
    found = []
    for directory, _subdirectories, files in os.walk(doc_root):
        for name in files:
            path = Path(directory) / name
            if name.lower().endswith(_MARKDOWN_NAMES) and path.is_file() and not path.is_symlink():
                found.append(path)
    return sorted(found, key=lambda path: str(path.relative_to(doc_root)))


def read_markdown(path: Path) -> bytes | None:
    """A Markdown file's text, or None when it is not clean UTF-8 (the reader refuses those)."""
    data = path.read_bytes()
    if path.name.lower().endswith(".gz"):
        data = gzip.decompress(data)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return None if b"\x00" in data else data.removeprefix(b"\xef\xbb\xbf").strip()


def generated_markdown() -> Iterator[bytes]:
    """Chapters of a manual in Markdown: four heading levels, lists, code and tables."""
    prose = Prose(23)
    for chapter in itertools.count(1):
        out = [f"# {chapter}. {prose.title()}", prose.paragraph()]
        for section in range(1, prose.rng.randint(2, 5)):
            out += [f"## {chapter}.{section} {prose.title()}", prose.paragraph(), prose.paragraph()]
            items = [f"- {prose.sentence()}" for _ in range(prose.rng.randint(2, 6))]
            items.insert(1, f"  - {prose.sentence()}")
            out.append("\n".join(items))
            out.append("\n".join(f"{n}. {prose.sentence()}" for n in range(1, 4)))
            out.append("```js\n" + "\n".join(prose.code()) + "\n```")
            out += [f"### {prose.title()}", prose.paragraph()]
            rows = [
                f"| `{prose.rng.choice(IDENTIFIERS)}` | {prose.words(1, 2)} | {prose.sentence()} |"
                for _ in range(prose.rng.randint(3, 12))
            ]
            out.append("| Name | Type | Meaning |\n| --- | --- | --- |\n" + "\n".join(rows))
            out += [f"#### {prose.title()}", prose.paragraph()]
        yield "\n\n".join(out).encode()


def pdf_lines(prose: Prose) -> Iterator[tuple[str, str]]:
    """(style, line) for a manual's pages: headings, wrapped paragraphs, blank gaps."""
    for chapter in itertools.count(1):
        yield "heading", f"{chapter}. {prose.title()}"
        for _ in range(prose.rng.randint(2, 6)):
            for line in textwrap.wrap(prose.paragraph(), 100):
                yield "body", line
            yield "gap", ""


def draw_pdf(pages: int) -> bytes:
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen.canvas import Canvas

    buffer = io.BytesIO()
    canvas = Canvas(buffer, pagesize=A4, pageCompression=0, invariant=1)
    canvas.setTitle("The ragsage bench manual")
    width, height = A4
    lines = pdf_lines(Prose(31))
    for number in range(1, pages + 1):
        canvas.setFont("Helvetica-Oblique", 8)
        canvas.drawString(50, height - 34, "The ragsage bench manual")
        y = height - 60
        while y > 60:
            style, text = next(lines)
            if style == "heading":
                canvas.setFont("Helvetica-Bold", 12)
                canvas.drawString(50, y - 6, text)
                y -= 20
            elif style == "body":
                canvas.setFont("Helvetica", 9)
                canvas.drawString(50, y, text)
                y -= 11.5
            else:
                y -= 6
        canvas.setFont("Helvetica", 8)
        canvas.drawCentredString(width / 2, 30, f"Page {number} of {pages}")
        canvas.showPage()
    canvas.save()
    return buffer.getvalue()


def pdf_document(size: int, cache_dir: Path) -> tuple[bytes, str]:
    """A PDF of about ``size`` bytes (drawn once, then read from the cache) and its origin."""
    path = cache_dir / f"manual-v{PDF_VERSION}-{size}.pdf"
    if path.is_file():
        return path.read_bytes(), f"reportlab, cached at {path}"
    sample = 20
    per_page = len(draw_pdf(sample)) / sample
    data = draw_pdf(max(1, round(size / per_page)))
    cache_dir.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.write_bytes(data)
    partial.replace(path)
    return data, f"reportlab, drawn now and cached at {path}"


@dataclass(frozen=True, slots=True)
class Pieces:
    """Where a kind's documents come from: page bodies or files, joined into one."""

    stream: Callable[[], Iterator[bytes]]
    noun: str  # what one piece is, for the origin column
    available: int | None = None  # how many real pieces there are (None: generated)
    note: str = ""


def pieces_of(kind: str, doc_root: Path) -> Pieces:
    real = doc_root.is_dir() and kind != "html-site"
    real_pages = html_pages(doc_root) if real and kind == "html-docs" else []
    real_markdown = markdown_files(doc_root) if real and kind == "markdown" else []
    if kind == "html-site" or (kind == "html-docs" and not real_pages):
        note = f" (no HTML pages under {doc_root}: the generated shape instead)"
        return Pieces(site_bodies, "site_pages.py pages", note=note if kind == "html-docs" else "")
    if kind == "html-docs":
        return Pieces(
            lambda: cycled(real_pages, lambda path: body_of(path.read_bytes())),
            f"real pages under {doc_root}",
            len(real_pages),
        )
    if real_markdown:
        return Pieces(
            lambda: cycled(real_markdown, read_markdown),
            f"real Markdown files under {doc_root}",
            len(real_markdown),
        )
    return Pieces(generated_markdown, "generated chapters", note=f" (no Markdown under {doc_root})")


def tiled(pieces: Pieces, size: int) -> Pieces:
    """The whole pieces the ``size`` input holds, over and over: same text, any length."""
    base: list[bytes] = []
    used = 0
    for piece in pieces.stream():
        if base and used + len(piece) > size:
            break
        base.append(piece)
        used += len(piece)
    label = size_label(size)
    note = f"{pieces.note} (tiled: the first {len(base)}, those of the {label} input, repeated)"
    return Pieces(lambda: itertools.cycle(base), pieces.noun, None, note)


def build_inputs(
    kinds: Sequence[str], sizes: Sequence[int], doc_root: Path, *, tile: bool = False
) -> list[Input]:
    """Every (kind, size) input, kind by kind; ``tile``: the smallest one's text repeated."""
    cache_dir = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ragsage-bench"
    inputs = []
    for kind in kinds:
        if kind == "pdf":  # one uniform manual at every size, tiled or not
            for size in sizes:
                data, origin = pdf_document(size, cache_dir)
                source = RawSource(data, f"pdf-{size_label(size)}.pdf", "application/pdf")
                inputs.append(Input(kind, size_label(size), source, origin))
            continue
        pieces = pieces_of(kind, doc_root)
        if tile:
            pieces = tiled(pieces, min(sizes))
        for size in sizes:
            label = size_label(size)
            if kind == "markdown":
                data, used = join_text(pieces.stream(), size)
                source = RawSource(data, f"{kind}-{label}.md", "text/markdown")
            else:
                data, used = join_html(pieces.stream(), size, f"{kind} bench page")
                source = RawSource(data, f"{kind}-{label}.html", "text/html")
            origin = f"{used} {pieces.noun}"
            if pieces.available is not None:
                origin = f"{used} of the {pieces.available} {pieces.noun}"
                if used > pieces.available:
                    origin += " (all of them, repeated)"
            inputs.append(Input(kind, label, source, origin + pieces.note))
    return inputs
