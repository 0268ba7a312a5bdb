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
import gc
import json
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory_inputs import (
    _PLACEHOLDER_DSN,
    BUILDERS,
    FORMATS,
    MIB,
    WARMUP_BYTES,
    available,
    input_file,
)
from memory_probes import StageWatch, maxrss_bytes, reset_peak, rss_bytes

# --- One case, in its own process ------------------------------------------------------


def run_one(path: Path, warmup: Path | None) -> dict[str, Any]:
    """Measure one job in this (fresh) process; the parent reads the result as JSON."""
    watch = StageWatch()
    watch.start()
    started = time.perf_counter()
    from ragsage.core.documents import RawSource
    from ragsage.core.offload import CallerThread, using
    from ragsage.core.scopes import Scope
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

    setup_mb = rss_bytes() / MIB
    if warmup is not None:
        watch.enter("warmup")
        job(warmup.read_bytes(), warmup.name)
    gc.collect()
    watch.enter("baseline")
    with watch.lock:
        # The job's peak is its own, not the warm-up's or the imports'.
        peak_reset = reset_peak()
        baseline = rss_bytes()
        watch.stage_peaks.clear()
        watch.last_maxrss, watch.peak_stage = maxrss_bytes(), "baseline"
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
        peak_mb=maxrss_bytes() / MIB,
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
