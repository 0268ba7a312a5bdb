"""Milliseconds per MB of input for every CPU stage of ingestion, at several document sizes.

    python bench/stages.py [--sizes 100KB,1MB,10MB] [--runs 5]
                           [--kinds html-site,html-docs,markdown,pdf]
                           [--doc-root /usr/share/doc] [--tile] [--no-check]

Every input is ONE document of the given size (1 MB = 10^6 bytes of the file as
uploaded), since the question is whether a stage stays linear in the size of a
document:

``html-site``
    pages from ``tests/unit/parsing/site_pages.py`` (the libxslt-manual layout
    of nested tables with a menu cell beside the content, and modern pages with
    navigation landmarks and a breadcrumb trail), their bodies joined into one page.
``html-docs``
    the bodies of the real HTML pages under ``--doc-root`` (every regular
    .html/.htm, no symlinks, sorted by path, as ``bench/site_chrome.py`` lists
    them), joined until the size is reached; with no pages there, the
    ``html-site`` shape, and the output says so.
``markdown``
    the real Markdown files under ``--doc-root`` (.md/.markdown, gzipped or not,
    sorted by path; on Debian mostly Node.js's API manual), joined; with none
    there, a generated document of headings at four levels, paragraphs, nested
    lists, fenced code and pipe tables.
``pdf``
    a born-digital PDF drawn with reportlab (running header, headings,
    paragraphs, page footers; uncompressed content streams, so its bytes follow
    its text), kept under ``~/.cache/ragsage-bench/`` so each size is drawn once.

``--tile`` makes every size repeat the whole pieces (pages, files) of the
smallest input, so that only the size changes between sizes, not the kind of
text: the real corpora are joined in path order, and a bigger document of them
holds other packages' pages (on Debian, 10 MB of Markdown is mostly Node.js
changelogs, whose commit lists are far longer blocks than the first files').
A ratio over 2 that goes away with ``--tile`` is the content, not the code.

The stages are the engine's own objects with the default (offline) settings,
built as ``ragsage.runtime.build_runtime`` builds them and called as
``IngestionPipeline`` calls them: parse (``HeuristicBackend.parse``), classify
(``LayoutPageClassifier.classify`` on every page), chunk
(``HeuristicBackend.chunk`` with ``IngestionConfig``'s 512/64 tokens),
contextualize (``HeadingWindowContextualizer.texts``, the synchronous body of
what the pipeline runs on a thread) and embed (the hashing embedder, in the
pipeline's batches of 64 embed texts).

Each (kind, size) is ingested ``--runs`` times, interleaved (every kind at
sizes A, B, C, then again A, B, C ...) so machine noise hits all sizes alike,
after one untimed warm-up per kind; the table shows medians.  For each kind
and stage the last lines give ms/MB at the largest size divided by ms/MB at
the smallest: above 2.0 is FAIL, and the exit status is 1 unless
``--no-check`` is given.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import gzip
import importlib.util
import io
import itertools
import os
import random
import re
import resource
import statistics
import sys
import textwrap
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any

# Run as a script, this folder is on sys.path: its sibling modules import directly.
from site_chrome import html_pages

from ragsage.adapters.parsing import HeuristicBackend, LayoutPageClassifier
from ragsage.adapters.parsing.contextualizing import HeadingWindowContextualizer
from ragsage.core.ports import Embedder
from ragsage.core.types import Chunk, Document, PageRoute, RawSource
from ragsage.ingestion import IngestionConfig
from ragsage.runtime import make_embedder
from ragsage.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
SITE_PAGES = ROOT / "tests" / "unit" / "parsing" / "site_pages.py"
KINDS = ("html-site", "html-docs", "markdown", "pdf")
STAGES = ("parse", "classify", "chunk", "contextualize", "embed")
LIMIT = 2.0
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


# --- the stages ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Engine:
    """The CPU stages as the runtime builds them with the default settings."""

    backend: HeuristicBackend
    classifier: LayoutPageClassifier
    contextualizer: HeadingWindowContextualizer
    embedder: Embedder
    config: IngestionConfig
    loop: asyncio.AbstractEventLoop


def build_engine(loop: asyncio.AbstractEventLoop) -> Engine:
    settings = Settings(embedder="hashing")
    embedder = make_embedder(
        settings, settings.embedder, settings.embedding_model_name, settings.embedding_dim
    )
    return Engine(
        backend=HeuristicBackend(),
        classifier=LayoutPageClassifier(),
        contextualizer=HeadingWindowContextualizer(),
        embedder=embedder,
        config=IngestionConfig(),
        loop=loop,
    )


@dataclass(slots=True)
class Outcome:
    ms: dict[str, float] = field(default_factory=dict)
    pages: int = 0
    chunks: int = 0


async def embed_all(embedder: Embedder, chunks: Sequence[Chunk], batch: int) -> int:
    vectors = 0
    for start in range(0, len(chunks), batch):
        texts = [chunk.embed_text for chunk in chunks[start : start + batch]]
        vectors += len(await embedder.embed(texts))
    return vectors


def ingest_once(engine: Engine, source: RawSource) -> Outcome:
    """One document through every CPU stage, each timed on its own."""
    outcome = Outcome()
    clock = time.perf_counter
    config = engine.config

    started = clock()
    parsed = engine.backend.parse(source)
    outcome.ms["parse"] = (clock() - started) * 1000
    document = Document(
        id="bench",
        content_hash="0" * 64,
        title=parsed.title or source.filename,
        source=source.filename,
        metadata={**parsed.metadata, **source.metadata},
    )

    started = clock()
    routes = [engine.classifier.classify(page) for page in parsed.pages]
    outcome.ms["classify"] = (clock() - started) * 1000
    if PageRoute.VISION in routes:
        raise SystemExit(f"{source.filename}: a page routes to vision; these inputs have text")
    # What the pipeline chunks: the pages resolved, none of them transcribed.
    pages = [replace(page, image=None, route=PageRoute.TEXT) for page in parsed.pages]

    started = clock()
    chunks = list(
        engine.backend.chunk(document, pages, size=config.chunk_size, overlap=config.chunk_overlap)
    )
    outcome.ms["chunk"] = (clock() - started) * 1000

    started = clock()
    texts = engine.contextualizer.texts(document, chunks, pages)
    chunks = [
        replace(chunk, embed_text=text or chunk.text)
        for chunk, text in zip(chunks, texts, strict=True)
    ]
    outcome.ms["contextualize"] = (clock() - started) * 1000

    started = clock()
    vectors = engine.loop.run_until_complete(
        embed_all(engine.embedder, chunks, config.embed_batch_size)
    )
    outcome.ms["embed"] = (clock() - started) * 1000
    if vectors != len(chunks):
        raise SystemExit(f"{source.filename}: {vectors} vectors for {len(chunks)} chunks")
    outcome.pages, outcome.chunks = len(pages), len(chunks)
    return outcome


# --- the report ---------------------------------------------------------------------------


@dataclass(slots=True)
class Samples:
    item: Input
    ms: dict[str, list[float]] = field(default_factory=lambda: {s: [] for s in STAGES})
    pages: int = 0
    chunks: int = 0

    @property
    def megabytes(self) -> float:
        return len(self.item.source.content) / MB

    def median(self, stage: str) -> float:
        return statistics.median(self.ms[stage])

    def per_mb(self, stage: str) -> float:
        return self.median(stage) / self.megabytes


def measure(engine: Engine, inputs: Sequence[Input], runs: int) -> list[Samples]:
    samples = [Samples(item) for item in inputs]
    warmed: set[str] = set()
    for sample in samples:  # loads the encoding and the format libraries, untimed
        if sample.item.kind not in warmed:
            ingest_once(engine, sample.item.source)
            warmed.add(sample.item.kind)
    for run in range(1, runs + 1):
        started = time.perf_counter()
        for sample in samples:
            gc.collect()  # the previous document's garbage is not this one's cost
            outcome = ingest_once(engine, sample.item.source)
            for stage in STAGES:
                sample.ms[stage].append(outcome.ms[stage])
            sample.pages, sample.chunks = outcome.pages, outcome.chunks
        print(f"run {run}/{runs}: {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return samples


def print_inputs(samples: Sequence[Samples]) -> None:
    print(f"{'kind':<10} {'size':>6} {'bytes':>11} {'pages':>6} {'chunks':>7}  origin")
    for s in samples:
        print(
            f"{s.item.kind:<10} {s.item.label:>6} {len(s.item.source.content):>11,} "
            f"{s.pages:>6} {s.chunks:>7}  {s.item.origin}"
        )


def print_table(samples: Sequence[Samples]) -> None:
    header = f"{'kind':<10} {'size':>6} {'stage':<14} {'ms (median)':>12} {'ms/MB':>10}"
    print(f"\n{header} {'spread':>7}")
    for s in samples:
        for stage in STAGES:
            median = s.median(stage)
            spread = (max(s.ms[stage]) - min(s.ms[stage])) / median if median else 0.0
            print(
                f"{s.item.kind:<10} {s.item.label:>6} {stage:<14} {median:>12.2f} "
                f"{s.per_mb(stage):>10.2f} {spread:>6.0%}"
            )


def print_ratios(samples: Sequence[Samples]) -> list[str]:
    """One line per kind and stage; returns the failing ones."""
    failures = []
    kinds = list(dict.fromkeys(s.item.kind for s in samples))
    for kind in kinds:
        mine = sorted((s for s in samples if s.item.kind == kind), key=lambda s: s.megabytes)
        if len(mine) < 2:
            continue
        small, large = mine[0], mine[-1]
        if kind == kinds[0]:
            print(
                f"\nlinearity: ms/MB at {large.item.label} / ms/MB at {small.item.label} "
                f"(limit {LIMIT:g})"
            )
        for stage in STAGES:
            base = small.per_mb(stage)
            ratio = large.per_mb(stage) / base if base > 0 else float("inf")
            verdict = "PASS" if ratio <= LIMIT else "FAIL"
            if verdict == "FAIL":
                failures.append(f"{kind}/{stage}")
            print(f"{kind:<10} {stage:<14} {ratio:>6.2f}  {verdict}")
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        default="100KB,1MB,10MB",
        type=lambda text: [parse_size(part) for part in text.split(",") if part.strip()],
        help="document sizes, comma-separated (default 100KB,1MB,10MB; 1MB = 10^6 bytes)",
    )
    parser.add_argument("--runs", type=int, default=5, help="timed runs per input (default 5)")
    parser.add_argument(
        "--kinds",
        default=",".join(KINDS),
        type=lambda text: [part.strip() for part in text.split(",") if part.strip()],
        help=f"input kinds, comma-separated (default {','.join(KINDS)})",
    )
    parser.add_argument("--doc-root", type=Path, default=Path("/usr/share/doc"))
    parser.add_argument(
        "--tile",
        action="store_true",
        help="every size repeats the smallest input's text: size alone varies, not content",
    )
    parser.add_argument("--no-check", action="store_true", help="print only; always exit 0")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    unknown = [kind for kind in args.kinds if kind not in KINDS]
    if unknown:
        parser.error(f"unknown kinds {', '.join(unknown)}; known: {', '.join(KINDS)}")

    started = time.perf_counter()
    inputs = build_inputs(args.kinds, sorted(set(args.sizes)), args.doc_root, tile=args.tile)
    print(f"inputs built in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    loop = asyncio.new_event_loop()
    try:
        samples = measure(build_engine(loop), inputs, args.runs)
    finally:
        loop.close()
    print_inputs(samples)
    print_table(samples)
    failures = print_ratios(samples)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux
    print(f"\npeak RSS: {peak:.0f} MB; wall time {time.perf_counter() - started:.0f} s")
    if failures and not args.no_check:
        print(f"over the {LIMIT:g}x limit: {', '.join(failures)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
