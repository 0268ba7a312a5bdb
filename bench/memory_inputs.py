"""The inputs of the job memory benchmark: real text on this machine, one file per format."""

from __future__ import annotations

import ast
import csv
import glob
import gzip
import io
import json
import random
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

MIB = 1024 * 1024
DOC_ROOT = Path("/usr/share/doc")
FORMATS = ("txt", "txt-oneline", "md", "html", "csv", "json", "py", "pdf", "docx")
EXTENSIONS = {"txt-oneline": ".txt"}
WARMUP_BYTES = 64 * 1024
_PLACEHOLDER_DSN = "postgresql://bench@127.0.0.1:9/bench"  # never connected to


# --- Real text on this machine -------------------------------------------------------


def _read_text(path: Path) -> str:
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    return data.decode("utf-8", errors="replace")


def _files(patterns: list[str]) -> list[Path]:
    found = {Path(p) for pattern in patterns for p in glob.glob(pattern, recursive=True)}
    return sorted(p for p in found if p.is_file() and not p.is_symlink())


def prose_sources() -> list[Path]:
    return _files(
        [
            f"{DOC_ROOT}/*/*.txt",
            f"{DOC_ROOT}/*/*.txt.gz",
            f"{DOC_ROOT}/*/spec/*.txt",
            f"{DOC_ROOT}/git/RelNotes/*.txt",
            "/usr/share/common-licenses/*",
        ]
    )


_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def prose_corpus() -> str:
    """Plain-text manuals and licences, control characters (form feeds too) removed."""
    texts = [_CONTROLS.sub("", _read_text(p).replace("\f", "\n\n")) for p in prose_sources()]
    joined = "\n\n".join(t.strip("\n") for t in texts if t.strip())
    return joined or "No plain text was found on this machine.\n"


def _repeat_to(parts: list[str], target: int, separator: str = "\n\n") -> Iterator[str]:
    """``parts`` in order, again and again, until their UTF-8 size reaches ``target``."""
    size = 0
    while size < target:
        for part in parts:
            yield part
            size += len(part.encode()) + len(separator)
            if size >= target:
                return


def _cut_lines(text: str, target: int) -> str:
    data = text.encode()[:target]
    cut = data.rfind(b"\n")
    return data[: cut if cut > target // 2 else target].decode("utf-8", errors="ignore")


def _sentences(prose: str) -> list[str]:
    flat = " ".join(prose.split())
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", flat) if 20 <= len(s) <= 400]


# --- Builders: one input file of about ``target`` bytes --------------------------------


def build_txt(target: int) -> bytes:
    prose = prose_corpus()
    return _cut_lines("\n\n".join(_repeat_to([prose], target)), target).encode()


def build_txt_oneline(target: int) -> bytes:
    flat = " ".join(prose_corpus().split())
    data = " ".join(_repeat_to([flat], target, " ")).encode()[:target]
    return data.decode("utf-8", errors="ignore").rstrip().encode()


def build_md(target: int) -> bytes:
    sources = _files([f"{DOC_ROOT}/nodejs/api/*.md", f"{DOC_ROOT}/**/*.md"])
    texts = [_read_text(p) for p in sources] or [_generated_markdown()]
    return _cut_lines("\n\n".join(_repeat_to(texts, target)), target).encode()


def _generated_markdown() -> str:
    return (
        "# Guide\n\nSome prose about the system.\n\n## Install\n\n- one\n- two\n\n"
        "```sh\npip install thing\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    )


_BODY = re.compile(r"<body[^>]*>(.*?)(?:</body>|$)", re.DOTALL | re.IGNORECASE)


def build_html(target: int) -> bytes:
    pages = [p for p in _files([f"{DOC_ROOT}/**/*.html"]) if p.name != "all.html"]
    bodies = []
    for page in pages:
        found = _BODY.search(_read_text(page))
        if found and found.group(1).strip():
            bodies.append((page, found.group(1)))
    if not bodies:
        bodies = [
            (Path("page.html"), "<h1>Page</h1><p>Text.</p><table><tr><td>1</td></tr></table>")
        ]
    articles: list[str] = []
    links: list[str] = []
    size = 0
    while size < target:
        for page, body in bodies:
            number = len(articles)
            links.append(f'<li><a href="#doc-{number}">{page.stem}</a></li>')
            articles.append(f'<article id="doc-{number}" class="doc">\n{body}\n</article>')
            size += len(articles[-1]) + len(links[-1])
            if size >= target:
                break
    head = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        "<title>Debian package documentation</title>\n"
        '<link rel="stylesheet" href="/static/site.css">\n'
        "<script>window.analytics = window.analytics || [];</script>\n</head>\n<body>\n"
        '<header class="site-header"><a class="logo" href="/">Docs</a>\n'
        '<nav class="main-nav" aria-label="Main"><ul><li><a href="/">Home</a></li>'
        '<li><a href="/guides/">Guides</a></li><li><a href="/api/">API</a></li>'
        '<li><a href="/faq/">FAQ</a></li><li><a href="/download/">Download</a></li></ul></nav>\n'
        '<form class="search" action="/search"><input name="q"></form></header>\n'
        '<div id="container">\n<aside class="sidebar"><ul>\n'
    )
    middle = '\n</ul></aside>\n<main id="content">\n'
    tail = (
        '\n</main>\n</div>\n<footer class="site-footer"><p>&copy; The authors. '
        '<a href="/privacy">Privacy</a> | <a href="/contact">Contact</a></p></footer>\n'
        "</body>\n</html>\n"
    )
    page_text = head + "\n".join(links) + middle + "\n".join(articles)
    keep = max(0, target - len((head + middle + tail).encode()))
    return page_text.encode()[: len(head.encode()) + keep] + tail.encode()


def build_csv(target: int) -> bytes:
    rng = random.Random(7)
    notes = _sentences(prose_corpus()) or ["No notes."]
    cities = ["Lisbon", "Oslo", "Quito", "Osaka", "Lagos", "Perth", "Lyon", "Austin", "Pune"]
    products = ["ledger", "router", "sensor", "license", "cable", "monitor", "service plan"]
    states = ["paid", "shipped", "refunded", "open", "cancelled"]
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(
        ["id", "date", "customer", "city", "product", "qty", "price", "status", "notes"]
    )
    row = 0
    while out.tell() < target:
        row += 1
        writer.writerow(
            [
                row,
                f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
                f"Customer {rng.randint(1, 5000)}",
                rng.choice(cities),
                rng.choice(products),
                rng.randint(1, 40),
                f"{rng.uniform(1, 900):.2f}",
                rng.choice(states),
                rng.choice(notes),
            ]
        )
    return out.getvalue().encode()


def build_json(target: int) -> bytes:
    rng = random.Random(11)
    sentences = _sentences(prose_corpus()) or ["No text."]
    records: list[dict[str, Any]] = []
    size = 0
    while size < target:
        body = " ".join(rng.choices(sentences, k=rng.randint(2, 6)))
        record = {
            "id": len(records) + 1,
            "title": rng.choice(sentences)[:60],
            "author": {"name": f"Author {rng.randint(1, 300)}", "team": rng.choice("ABCDE")},
            "tags": rng.sample(["api", "ops", "db", "ui", "auth", "docs", "perf"], k=3),
            "published": f"2023-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
            "body": body,
        }
        records.append(record)
        size += len(json.dumps(record, indent=2)) + 4
    return json.dumps(records, indent=2).encode()


_FUTURE = re.compile(r"^from __future__ import .*$", re.MULTILINE)


def build_py(target: int) -> bytes:
    sources = _files(["/usr/lib/python3.11/**/*.py"]) or _files([f"{sys.prefix}/lib/**/*.py"])
    modules: list[str] = []
    for path in sources:
        try:
            text = _FUTURE.sub("# (from __future__ import dropped)", path.read_text("utf-8"))
            ast.parse(text)
        except (SyntaxError, ValueError, UnicodeDecodeError):
            continue
        modules.append(f"# ---- {path}\n{text.rstrip()}\n")
        if sum(len(m) for m in modules) > 2 * target:
            break
    return "\n\n".join(_repeat_to(modules, target)).encode()


def build_pdf(target: int) -> bytes:
    import pypdfium2

    originals = [pypdfium2.PdfDocument(str(p)) for p in _files([f"{DOC_ROOT}/**/*.pdf"])]
    if not originals:
        return _reportlab_pdf(target)
    per_page = sum(p.stat().st_size for p in _files([f"{DOC_ROOT}/**/*.pdf"])) / sum(
        len(pdf) for pdf in originals
    )
    wanted = max(1, round(target / per_page))
    out = pypdfium2.PdfDocument.new()
    while len(out) < wanted:
        for source in originals:
            take = min(len(source), wanted - len(out))
            if take > 0:
                out.import_pages(source, pages=list(range(take)))
    buffer = io.BytesIO()
    out.save(buffer)
    return buffer.getvalue()


def _reportlab_pdf(target: int) -> bytes:
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, pageCompression=0)
    lines = [line for line in prose_corpus().split("\n") if line.strip()]
    index = 0
    while buffer.tell() < target:
        y = 800.0
        while y > 40:
            pdf.drawString(40, y, lines[index % len(lines)][:100])
            index, y = index + 1, y - 12
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def build_docx(target: int) -> bytes:
    # Two small documents give the bytes per section; the real one is sized from them.
    small, large = len(_docx(20)), len(_docx(80))
    per_section = max(1.0, (large - small) / 60)
    return _docx(max(1, round(20 + (target - small) / per_section)))


def _docx(sections: int, batch: int = 50) -> bytes:
    """A python-docx document of ``sections``, each written into a small document
    first and moved over: python-docx's own appends rescan the body, O(n^2)."""
    import docx
    from docx.oxml.ns import qn

    rng = random.Random(5)
    sentences = _sentences(prose_corpus()) or ["No text."]
    document = docx.Document()
    body = document.element.body
    closing = body.find(qn("w:sectPr"))
    for first in range(0, sections, batch):
        part = docx.Document()
        for number in range(first, min(sections, first + batch)):
            _docx_section(part, number, rng, sentences)
        for child in list(part.element.body):
            if child.tag != qn("w:sectPr"):
                body.append(child)
    if closing is not None:
        body.append(closing)  # moves it back to the end, where Word wants it
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def _docx_section(document: Any, number: int, rng: random.Random, sentences: list[str]) -> None:
    document.add_heading(f"Section {number + 1}: {rng.choice(sentences)[:50]}", level=2)
    for _ in range(4):
        document.add_paragraph(" ".join(rng.choices(sentences, k=rng.randint(3, 7))))
    for _ in range(3):
        document.add_paragraph(rng.choice(sentences), style="List Bullet")
    if number % 3 == 0:
        table = document.add_table(rows=5, cols=4)
        for row in table.rows:
            for cell in row.cells:
                cell.text = rng.choice(sentences)[:40]


BUILDERS: dict[str, Callable[[int], bytes]] = {
    "txt": build_txt,
    "txt-oneline": build_txt_oneline,
    "md": build_md,
    "html": build_html,
    "csv": build_csv,
    "json": build_json,
    "py": build_py,
    "pdf": build_pdf,
    "docx": build_docx,
}


def available(name: str) -> bool:
    module = {"pdf": "pypdfium2", "docx": "docx"}.get(name)
    if module is None:
        return True
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def input_file(workdir: Path, name: str, megabytes: float, rebuild: bool) -> Path:
    extension = EXTENSIONS.get(name, "." + name)
    label = f"{megabytes:g}MB" if megabytes >= 0.1 else "warmup"
    path = workdir / f"{name}-{label}{extension}"
    if rebuild or not path.exists():
        workdir.mkdir(parents=True, exist_ok=True)
        path.write_bytes(BUILDERS[name](int(megabytes * MIB)))
    return path
