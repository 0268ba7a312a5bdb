"""Peak memory of one ingestion job's CPU stages, per input byte, per file format.

    python bench/job_memory.py [--formats txt,txt-oneline,md,html,csv,json,py,pdf,docx]
                               [--sizes 1,4,16] [--ceiling 1024] [--kill-above 3000]
                               [--timeout 300] [--workdir /tmp/ragsage-job-memory]
                               [--json results.json] [--rebuild]

For every format and size (MiB of the file as uploaded) it builds one input
shaped like a real file, from real text on this machine where there is some:

``txt``          prose from Debian's plain-text manuals and licences, lines and paragraphs
``txt-oneline``  the same prose as ONE line, no newline anywhere (whitespace runs -> " ")
``md``           Node.js's Markdown manual (headings, lists, code fences, tables)
``html``         the bodies of the real HTML pages under /usr/share/doc in one page, with
                 a site header, navigation, a sidebar and a footer around them
``csv``          generated order rows, the notes column taken from the prose
``json``         a pretty-printed array of records, bodies taken from the prose
``py``           the standard library's sources in one module (``from __future__`` lines
                 dropped so it still parses)
``pdf``          the born-digital PDFs under /usr/share/doc, pages repeated (pypdfium2);
                 reportlab-drawn pages when there are none
``docx``         headings, paragraphs, bullet lists and tables written with python-docx

Each case runs in a fresh ``python bench/job_memory.py --one FILE`` process that
builds the runtime the way a worker child does (``worker.process.current`` with
``Settings.from_env({})`` defaults with the hashing embedder, heading-window
contextualizer, no parse cache; the database URL is a placeholder, since
``prepare`` opens no connection), runs one small job of the same format to warm
up (readers imported, the tiktoken encoding loaded), records that baseline RSS,
then reads the file and runs ``IngestionPipeline.prepare`` with the CPU stages
on the calling thread (``CallerThread``, as ``worker.tasks`` does).

The peak is the kernel's own, reset to the baseline before the job (writing 5
to ``/proc/self/clear_refs``) and read as VmHWM, which is ``ru_maxrss`` without
the peaks of threads that exited earlier; the stage it belongs to is the last
stage during which it grew (read at every ``on_stage`` change), and a thread
sampling ``/proc/self/statm`` gives each stage's own highest RSS.  The
parent kills a case whose RSS passes ``--kill-above`` MiB ("over") or that runs
past ``--timeout`` ("timeout").  Once a format's case passes ``--ceiling``, its
larger sizes are skipped (the first two sizes always run, so a slope can be fitted).

The write to Postgres (``store``) is not measured: it needs a database.
"""

from __future__ import annotations

import argparse
import ast
import csv
import gc
import glob
import gzip
import io
import json
import os
import random
import re
import resource
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
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


# --- One case, in its own process ------------------------------------------------------


def _rss_bytes() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _maxrss_bytes() -> int:
    """The kernel's peak RSS of this process's memory: VmHWM, else ru_maxrss.

    ``ru_maxrss`` also keeps the peak of any thread that has exited, which a
    reset of the peak (see :func:`_reset_peak`) does not clear; VmHWM does.
    """
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _reset_peak() -> bool:
    """Reset the kernel's peak RSS (VmHWM, and so ru_maxrss) to the current RSS."""
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
    except OSError:
        return False
    return True


@dataclass
class StageWatch:
    """The stage running now, each stage's sampled highest RSS, and where ru_maxrss grew."""

    stage: str = "setup"
    stage_peaks: dict[str, int] = field(default_factory=dict)
    peak_stage: str = "setup"
    last_maxrss: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)

    def enter(self, name: str) -> None:
        with self.lock:
            now = _maxrss_bytes()
            if now > self.last_maxrss:
                self.peak_stage, self.last_maxrss = self.stage, now
            self.stage = name
            self._sample()

    def _sample(self) -> None:
        rss = _rss_bytes()
        if rss > self.stage_peaks.get(self.stage, 0):
            self.stage_peaks[self.stage] = rss

    def run(self, interval: float = 0.002) -> None:
        while not self._stop.wait(interval):
            with self.lock:
                self._sample()

    def start(self) -> None:
        threading.Thread(target=self.run, name="rss-sampler", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()


def run_one(path: Path, warmup: Path | None) -> dict[str, Any]:
    """Measure one job in this (fresh) process; the parent reads the result as JSON."""
    watch = StageWatch()
    watch.start()
    started = time.perf_counter()
    from ragsage.core.offload import CallerThread, using
    from ragsage.core.types import RawSource, Scope
    from ragsage.settings import Settings
    from worker import process
    from worker import tasks as _tasks  # noqa: F401 - a worker child has Celery loaded too

    settings = Settings.from_env({}).replace(database_url=_PLACEHOLDER_DSN, embedder="hashing")
    here = process.current(settings)
    pipeline = here.runtime.pipeline()
    scope = Scope("bench")

    def job(content: bytes, filename: str) -> tuple[int, int, dict[str, float]]:
        cpu = CallerThread()
        source = RawSource(content=content, filename=filename)
        work = pipeline.prepare(
            scope,
            source,
            document_id="bench",
            created_at=datetime.now(UTC),
            on_stage=watch.enter,
        )
        prepared = cpu.drive(here.loop.submit(using(cpu, work)))
        return len(prepared.records), len(prepared.pages), prepared.timing_ms

    setup_mb = _rss_bytes() / MIB
    if warmup is not None:
        watch.enter("warmup")
        job(warmup.read_bytes(), warmup.name)
    gc.collect()
    watch.enter("baseline")
    with watch.lock:
        # The job's peak is its own, not the warm-up's or the imports'.
        peak_reset = _reset_peak()
        baseline = _rss_bytes()
        watch.stage_peaks.clear()
        watch.last_maxrss, watch.peak_stage = _maxrss_bytes(), "baseline"
    # Said now, so the parent still knows it if it has to kill this process.
    print(json.dumps({"baseline_mb": baseline / MIB}), flush=True)
    watch.enter("read")
    content = path.read_bytes()
    began = time.perf_counter()
    result: dict[str, Any] = {"status": "ok", "error": None}
    try:
        result["chunks"], result["pages"], result["timing_ms"] = job(content, path.name)
    except Exception as exc:  # noqa: BLE001 - reported as the case's outcome
        result.update(status="error", error=f"{type(exc).__name__}: {str(exc)[:200]}")
    seconds = time.perf_counter() - began
    watch.enter("done")
    watch.stop()
    result.update(
        bytes=len(content),
        peak_reset=peak_reset,
        setup_mb=setup_mb,
        baseline_mb=baseline / MIB,
        peak_mb=_maxrss_bytes() / MIB,
        stage_at_peak=watch.peak_stage,
        stage_peaks_mb={k: round(v / MIB, 1) for k, v in watch.stage_peaks.items()},
        seconds=seconds,
        process_seconds=time.perf_counter() - started,
    )
    return result


# --- The parent: build, run, watch, tabulate -------------------------------------------


@dataclass
class Case:
    name: str
    megabytes: float
    size_mb: float = 0.0
    status: str = "skipped"
    baseline_mb: float = 0.0
    peak_mb: float = 0.0
    watched_peak_mb: float = 0.0
    stage_at_peak: str = ""
    seconds: float = 0.0
    chunks: int = 0
    pages: int = 0
    stage_peaks_mb: dict[str, float] = field(default_factory=dict)
    timing_ms: dict[str, float] = field(default_factory=dict)
    error: str | None = None

    @property
    def peak(self) -> float:
        """The child's own kernel peak; for a killed case, what the parent saw."""
        return self.peak_mb if self.status in ("ok", "error") else self.watched_peak_mb

    @property
    def growth(self) -> float:
        return self.peak - self.baseline_mb

    @property
    def ratio(self) -> float:
        return self.growth / self.size_mb if self.size_mb else 0.0


def _child_rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def run_case(case: Case, path: Path, warmup: Path, args: argparse.Namespace) -> None:
    """Run one case in a fresh interpreter, killing it past the RSS or time limit."""
    case.size_mb = path.stat().st_size / MIB
    command = [sys.executable, str(Path(__file__).resolve()), "--one", str(path)]
    command += ["--warmup", str(warmup)]
    out_path = path.with_suffix(path.suffix + ".out")
    with open(out_path, "w+") as out, open(path.with_suffix(path.suffix + ".err"), "w") as err:
        child = subprocess.Popen(command, stdout=out, stderr=err, cwd=Path(__file__).parent.parent)
        began = time.monotonic()
        verdict = ""
        while child.poll() is None:
            rss = _child_rss_mb(child.pid)
            case.watched_peak_mb = max(case.watched_peak_mb, rss)
            if rss > args.kill_above:
                verdict = "over"
            elif time.monotonic() - began > args.timeout:
                verdict = "timeout"
            if verdict:
                child.kill()
                child.wait()
                break
            time.sleep(0.02)
        case.seconds = time.monotonic() - began
        out.seek(0)
        said = [json.loads(line) for line in out.read().splitlines() if line.startswith("{")]
    found: dict[str, Any] = {}
    for part in said:
        found.update(part)
    case.baseline_mb = found.get("baseline_mb", 0.0)
    if verdict:
        case.status = verdict
        return
    if child.returncode != 0 or "status" not in found:
        case.status, case.error = "crashed", f"exit {child.returncode}"
        return
    case.status, case.error = found["status"], found["error"]
    for name in ("baseline_mb", "peak_mb", "stage_at_peak", "seconds", "stage_peaks_mb"):
        setattr(case, name, found[name])
    case.chunks, case.pages = found.get("chunks", 0), found.get("pages", 0)
    case.timing_ms = found.get("timing_ms", {})


def _fit(cases: list[Case]) -> tuple[float, float] | None:
    """Least-squares growth = slope * size + intercept over the measured cases."""
    points = [(c.size_mb, c.growth) for c in cases if c.status == "ok"]
    if not points:
        return None
    if len(points) == 1:
        return points[0][1] / points[0][0], 0.0
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / spread
    return slope, mean_y - slope * mean_x


def _row(case: Case) -> str:
    if case.status == "skipped":
        skipped = "skipped: a smaller size passed the ceiling"
        return f"{case.name:<12} {case.megabytes:>6g} {'-':>5} {skipped}"
    peak = case.peak
    stages = " ".join(f"{k}={v:.0f}" for k, v in case.stage_peaks_mb.items())
    status = (
        "" if case.status == "ok" else f" [{case.status}{': ' + case.error if case.error else ''}]"
    )
    peak_text = f">{peak:.0f}" if case.status == "over" else f"{peak:.0f}"
    return (
        f"{case.name:<12} {case.size_mb:>6.2f} {case.pages:>5} {case.chunks:>6} "
        f"{case.baseline_mb:>6.0f} {peak_text:>7} {case.ratio:>7.1f} {case.stage_at_peak:<13} "
        f"{case.seconds:>6.1f}  {stages}{status}"
    )


def report(cases: list[Case], ceiling: float) -> None:
    print(
        f"\n{'format':<12} {'MiB':>6} {'pages':>5} {'chunks':>6} {'base':>6} {'peak':>7} "
        f"{'grow/MiB':>7} {'stage@peak':<13} {'secs':>6}  per-stage sampled max RSS (MiB)"
    )
    for case in cases:
        print(_row(case))
    print(f"\nper format: peak growth = slope x input MiB + intercept; ceiling {ceiling:.0f} MiB")
    for name in dict.fromkeys(c.name for c in cases):
        mine = [c for c in cases if c.name == name]
        fit = _fit(mine)
        over = [c.size_mb for c in mine if c.status in ("over", "timeout")]
        note = f"; killed/timed out at {min(over):.1f} MiB" if over else ""
        if fit is None:
            print(f"  {name:<12} no successful case{note}")
            continue
        slope, intercept = fit
        base = max(c.baseline_mb for c in mine if c.status == "ok")
        worst = max(c.ratio for c in mine if c.status == "ok")
        largest = (ceiling - base - intercept) / slope if slope > 0 else float("inf")
        cautious = (ceiling - base) / worst if worst > 0 else float("inf")
        print(
            f"  {name:<12} slope {slope:6.1f} MiB/MiB, intercept {intercept:6.1f}, baseline "
            f"{base:.0f}: largest input under the ceiling ~{largest:.1f} MiB by the fit, "
            f"{cautious:.1f} MiB at the worst measured ratio{note}"
        )


def run_all(args: argparse.Namespace) -> list[Case]:
    cases: list[Case] = []
    workdir = Path(args.workdir)
    for name in args.formats:
        if not available(name):
            print(f"{name}: no library to write it in this venv; skipped", flush=True)
            continue
        warmup = input_file(workdir, name, WARMUP_BYTES / MIB, args.rebuild)
        exceeded = False
        for index, megabytes in enumerate(args.sizes):
            case = Case(name, megabytes)
            cases.append(case)
            if exceeded and index >= 2:
                continue
            path = input_file(workdir, name, megabytes, args.rebuild)
            run_case(case, path, warmup, args)
            print(_row(case), flush=True)
            exceeded = exceeded or case.status in ("over", "timeout") or case.peak_mb > args.ceiling
    return cases


def _sizes(text: str) -> list[float]:
    return sorted(float(part) for part in text.split(",") if part.strip())


def _formats(text: str) -> list[str]:
    chosen = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [name for name in chosen if name not in BUILDERS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown formats {unknown}; choose from {FORMATS}")
    return chosen


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Peak memory of one ingestion job, per format.")
    parser.add_argument("--formats", type=_formats, default=list(FORMATS))
    parser.add_argument(
        "--sizes", type=_sizes, default=[1.0, 4.0, 16.0], help="MiB, comma-separated"
    )
    parser.add_argument("--ceiling", type=float, default=1024.0, help="MiB a child must stay under")
    parser.add_argument("--kill-above", type=float, default=3000.0, help="MiB: kill the case")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per case")
    parser.add_argument("--workdir", default="/tmp/ragsage-job-memory")
    parser.add_argument("--json", help="also write every case here")
    parser.add_argument("--rebuild", action="store_true", help="rebuild cached input files")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--warmup", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        warmup = Path(args.warmup) if args.warmup else None
        print(json.dumps(run_one(Path(args.one), warmup)), flush=True)
        return
    print(f"python {sys.version.split()[0]}, inputs in {args.workdir}", flush=True)
    cases = run_all(args)
    report(cases, args.ceiling)
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(c) for c in cases], indent=2))


if __name__ == "__main__":
    main()
