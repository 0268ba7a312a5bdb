"""Ingest a folder of real files through the queue and report what a user would measure.

    python bench/real_corpus.py [--doc-root /usr/share/doc] [--processes 2]
                                [--chunk-size 512] [--peer-python PATH]

The files are every regular ``.html``/``.htm`` under ``--doc-root`` (no symlinks),
sorted by path: on these machines Debian's package documentation folder, the
242 pages ``../shared/bench/llamaindex_bench.py`` ingests.  An embedded Postgres
and Redis are started in a temporary folder, one ``ragsage worker`` with
``--processes`` processes consumes the queue, and every page is uploaded with
``Enqueuer.enqueue_document`` under its path relative to the root.  Offline
defaults throughout (hashing embedder, heading-window contextualizer).

Printed: wall time from the first upload to the last finished job; jobs by
state and any that were delivered more than once; chunks and their size in
tokens (p50/p99/max) against the budget; per-stage totals from the jobs'
timings; each worker process's peak RSS; and the chunks that hold site
navigation (``bench/site_chrome.py`` explains the count).  With
``--peer-python`` (a venv holding LlamaIndex, see ``../shared/bench/README.md``)
the peer ingests the same pages right after, and the ratio of wall times is
printed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path

# Run as a script, this folder is on sys.path: its sibling modules import directly.
import site_chrome
from sqlalchemy import create_engine, text
from stack import local_stack

from ragsage.parsing import make_token_counter
from ragsage.settings import Settings
from worker.cli import celery_worker_argv
from worker.enqueue import Enqueuer

ROOT = Path(__file__).resolve().parents[1]
PEER_SCRIPT = ROOT.parent / "shared" / "bench" / "llamaindex_bench.py"
NAMESPACE = "corpus"


def percentile(values: list[int], share: float) -> float:
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, int(share * len(ordered)))]) if ordered else 0.0


def worker_peaks(worker: subprocess.Popen[bytes]) -> list[int]:
    """Peak RSS (VmHWM, kB) of the worker's pool processes, read before it stops."""
    peaks = []
    children = Path(f"/proc/{worker.pid}/task/{worker.pid}/children")
    for pid in children.read_text().split() if children.exists() else []:
        status = Path(f"/proc/{pid}/status")
        for line in status.read_text().splitlines() if status.exists() else []:
            if line.startswith("VmHWM:"):
                peaks.append(int(line.split()[1]))
    return peaks


def ingest(settings: Settings, pages: list[Path], doc_root: Path, processes: int, log: Path):
    env = {**os.environ, **settings.to_env()}
    argv = celery_worker_argv(settings.ingest_queue, concurrency=processes, loglevel="WARNING")
    worker = subprocess.Popen(
        argv, cwd=ROOT, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT
    )
    enqueuer = Enqueuer(settings)
    try:
        time.sleep(3)  # let the pool start before the clock does
        started = time.perf_counter()
        outcomes = [
            enqueuer.enqueue_document(NAMESPACE, str(path.relative_to(doc_root)), path=path)
            for path in pages
        ]
        uploaded = time.perf_counter() - started
        duplicates = sum(1 for outcome in outcomes if outcome.duplicate)
        job_ids = [str(o.job_id) for o in outcomes if not o.duplicate and o.job_id is not None]
        jobs, pending = {}, set(job_ids)
        while pending:
            for job_id in list(pending):
                job = enqueuer.job_status(NAMESPACE, job_id)
                if job is not None and job.state.finished:
                    jobs[job_id] = job
                    pending.discard(job_id)
            time.sleep(0.1)
        wall = time.perf_counter() - started
        return wall, (uploaded, duplicates), list(jobs.values()), worker_peaks(worker)
    finally:
        worker.terminate()
        worker.wait(30)
        enqueuer.close()


def stored_chunks(owner_url: str) -> list[tuple[str, str]]:
    engine = create_engine(owner_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                text("SELECT source, text FROM ragsage_chunks WHERE namespace = :n"),
                {"n": NAMESPACE},
            )
            return [(str(source), str(body)) for source, body in rows]
    finally:
        engine.dispose()


def run_peer(peer_python: str, doc_root: Path, workdir: Path) -> float | None:
    done = subprocess.run(
        [
            peer_python,
            str(PEER_SCRIPT),
            "--doc-root",
            str(doc_root),
            "--workdir",
            str(workdir),
            "--runs",
            "1",
            "--worker-runs",
            "0",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    results = workdir / "results.json"
    if done.returncode != 0 or not results.exists():
        print(f"peer failed ({done.returncode}): {done.stderr.strip()[-400:]}")
        return None
    runs = [r for r in json.loads(results.read_text()).get("ingest_seq", []) if "wall_s" in r]
    return float(runs[0]["wall_s"]) if runs else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--doc-root", type=Path, default=Path("/usr/share/doc"))
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--chunk-size", type=int, default=512)
    parser.add_argument("--peer-python", help="python of a venv holding LlamaIndex")
    args = parser.parse_args()
    pages = site_chrome.html_pages(args.doc_root)
    megabytes = sum(path.stat().st_size for path in pages) / 1e6
    print(f"{len(pages)} pages, {megabytes:.1f} MB of HTML under {args.doc_root}")
    with local_stack("corpus", chunk_size=args.chunk_size) as stack:
        settings = stack.settings
        migrator = Enqueuer(settings)
        migrator.run(migrator.database.migrate())
        migrator.close()
        wall, uploaded, jobs, peaks = ingest(
            settings, pages, args.doc_root, args.processes, stack.directory / "worker.log"
        )
        chunks = stored_chunks(stack.owner_url)
    report(args, wall, uploaded, jobs, peaks, chunks, pages)
    if args.peer_python:
        with tempfile.TemporaryDirectory() as directory:
            peer = run_peer(args.peer_python, args.doc_root, Path(directory))
        if peer:
            print(f"peer (LlamaIndex) ingestion: {peer:.1f} s; ragsage / peer = {wall / peer:.2f}")


def report(args, wall, uploaded, jobs, peaks, chunks, pages) -> None:
    states = Counter(str(job.state) for job in jobs)
    redelivered = sum(1 for job in jobs if job.deliveries > 1)
    seconds, duplicates = uploaded
    print(
        f"wall {wall:.1f} s with {args.processes} worker processes (uploads {seconds:.1f} s; "
        f"{duplicates} pages were byte-identical to one uploaded before)"
    )
    print(f"jobs: {dict(states)}; delivered more than once: {redelivered}")
    for job in jobs:
        if str(job.state) != "succeeded":
            print(f"  {job.filename}: {job.state} {job.error}")
    count = make_token_counter()
    tokens = [count(body) for _, body in chunks]
    over = sum(1 for t in tokens if t > args.chunk_size)
    print(
        f"chunks: {len(chunks)}; tokens p50 {percentile(tokens, 0.5):.0f}, "
        f"p99 {percentile(tokens, 0.99):.0f}, max {max(tokens, default=0)}, "
        f"mean {statistics.fmean(tokens) if tokens else 0:.0f}; over {args.chunk_size}: {over}"
    )
    stages: Counter[str] = Counter()
    for job in jobs:
        stages.update({name: float(ms) for name, ms in job.timings.items()})
    print("stage totals: " + ", ".join(f"{k} {v / 1000:.1f} s" for k, v in stages.most_common()))
    if peaks:
        print("peak RSS per worker process: " + ", ".join(f"{kb / 1024:.0f} MB" for kb in peaks))
    chrome = site_chrome.chrome_lines(args.doc_root, pages)
    by_package = [
        (site_chrome.package_of(args.doc_root, args.doc_root / source), body)
        for source, body in chunks
    ]
    site_chrome.report(by_package, chrome)


if __name__ == "__main__":
    main()
