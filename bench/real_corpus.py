"""Ingest a folder of real files through the queue and report what a user would measure.

    python bench/real_corpus.py --peer-script PATH [--doc-root /usr/share/doc]
                                [--processes 2] [--chunk-size 512] [--peer-python PATH]
                                [--no-search]

The files are every regular ``.html``/``.htm`` under ``--doc-root`` (no symlinks),
sorted by path: on these machines Debian's package documentation folder, the
242 pages the peer's benchmark script (``--peer-script``) ingests.  An embedded Postgres
and Redis are started in a temporary folder, one ``ragsage worker`` with
``--processes`` processes consumes the queue, and every page is uploaded with
``Enqueuer.enqueue_documents`` (the bulk upload) under its path relative to the
root.  Offline
defaults throughout, except the embedder: hashing, as the peer uses (heading-window
contextualizer).

Printed: wall time from the first upload to the last finished job; jobs by
state and any that were delivered more than once; chunks and their size in
tokens (p50/p99/max) against the budget; per-stage totals from the jobs'
timings; each worker process's peak RSS; and the chunks that hold site
navigation (``bench/site_chrome.py`` explains the count).  The search
measurements ask the sentences the peer's script samples from the same pages
(``corpus_search.py``), so they need ``--peer-script``; ``--no-search`` skips
them.  With ``--peer-python`` (the Python of an environment holding LlamaIndex)
the peer's script ingests the same pages right after, and the ratio of wall
times is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

# Run as a script, this folder is on sys.path: its sibling modules import directly.
import corpus_search
import site_chrome
from api_search import new_key
from sqlalchemy import Engine, create_engine, text
from stack import Stack, local_stack, serve_api

from ragsage.adapters.parsing import HeuristicBackend, make_token_counter
from ragsage.cli.worker import celery_worker_argv
from ragsage.core.documents import RawSource
from ragsage.core.jobs import UploadOutcome
from ragsage.core.scopes import Scope
from ragsage.jobs.enqueue import Enqueuer, upload_from_path
from ragsage.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
NAMESPACE = "corpus"


def percentile(values: list[int], share: float) -> float:
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, int(share * len(ordered)))]) if ordered else 0.0


def worker_peaks(worker: subprocess.Popen[bytes]) -> list[int]:
    """Peak RSS (VmHWM, kB) of the worker's pool processes, read before it stops."""
    peaks = []
    for pid in _children(worker.pid):
        status = Path(f"/proc/{pid}/status")
        for line in status.read_text().splitlines() if status.exists() else []:
            if line.startswith("VmHWM:"):
                peaks.append(int(line.split()[1]))
    return peaks


def busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy (all cores), from /proc/stat."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle and iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def own_cpu(pid: int) -> float:
    """CPU seconds of one process and of its children it has reaped (0 if it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    # utime, stime, cutime, cstime are fields 14-17 of stat (11-14 after the name).
    return sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def tree_cpu(pid: int) -> float:
    """CPU seconds of a process, its reaped children and its live descendants."""
    return own_cpu(pid) + sum(tree_cpu(kid) for kid in _children(pid))


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    try:
        return [int(kid) for kid in path.read_text().split()]
    except OSError:
        return []


def worker_processes(parent: int) -> dict[int, str]:
    """The worker's processes by pid: its parent, pool children and their lease keepers."""
    found = {parent: "worker parent"}
    for child in _children(parent):
        found[child] = "pool children"
        for grandchild in _children(child):
            keeper = "lease_keeper" in _command(grandchild)
            found[grandchild] = "lease keepers" if keeper else "pool children"
    return found


def redis_pid(url: str) -> int | None:
    """The pid of the Redis server at ``url`` (its process title names its port)."""
    port = f":{urlsplit(url).port}"
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            command = _command(int(entry.name))
            if "redis-server" in command and port in command:
                return int(entry.name)
    return None


class CpuLedger:
    """CPU seconds by role over one ingestion: each process counted from when first seen."""

    def __init__(self, worker: int, postgres: int, redis: int | None) -> None:
        self.worker, self.postgres, self.redis = worker, postgres, redis
        self.start: dict[int, float] = {}
        self.roles: dict[int, str] = {}
        self.poll()
        self.services = self._services()
        self.uploader = time.process_time()

    def poll(self) -> None:
        """Notice processes started since (pool children and lease keepers may be new)."""
        for pid, role in worker_processes(self.worker).items():
            if pid not in self.roles:
                self.roles[pid] = role
                self.start[pid] = own_cpu(pid)

    def _services(self) -> dict[str, float]:
        found = {"postgres": tree_cpu(self.postgres)}
        if self.redis is not None:
            found["broker and cache (redis)"] = own_cpu(self.redis)
        return found

    def spent(self) -> dict[str, float]:
        self.poll()
        by_role: dict[str, float] = {}
        for pid, role in self.roles.items():
            by_role[role] = by_role.get(role, 0.0) + max(0.0, own_cpu(pid) - self.start[pid])
        now = self._services()
        for name, seconds in now.items():
            by_role[name] = seconds - self.services[name]
        by_role["uploader (this process)"] = time.process_time() - self.uploader
        return by_role


def finished_jobs(engine: Engine, namespace: str = NAMESPACE) -> int:
    with engine.connect() as connection:
        return int(
            connection.scalar(
                text(
                    "SELECT count(*) FROM ragsage_jobs WHERE namespace = :n "
                    "AND state IN ('succeeded', 'failed', 'cancelled', 'superseded')"
                ),
                {"n": namespace},
            )
        )


def postmaster_pid(owner_url: str) -> int:
    engine = create_engine(owner_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as connection:
            backend = int(connection.scalar(text("SELECT pg_backend_pid()")))
            # Read while connected: the backend process ends with its connection.
            stat = Path(f"/proc/{backend}/stat").read_text()
    finally:
        engine.dispose()
    return int(stat.rsplit(")", 1)[1].split()[1])


def ingest(
    settings: Settings,
    pages: list[Path],
    doc_root: Path,
    processes: int,
    log: Path,
    namespace: str = NAMESPACE,
):
    env = {**os.environ, **settings.to_env()}
    argv = celery_worker_argv(settings.ingest_queue, concurrency=processes, loglevel="WARNING")
    worker = subprocess.Popen(
        argv, cwd=ROOT, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT
    )
    enqueuer = Enqueuer(settings)
    try:
        time.sleep(3)  # let the pool start before the clock does
        started, busy = time.perf_counter(), busy_seconds()
        postgres = postmaster_pid(settings.database_url)
        ledger = CpuLedger(worker.pid, postgres, redis_pid(settings.redis_url))
        outcomes = [
            outcome
            for outcome in enqueuer.enqueue_documents(
                namespace,
                (upload_from_path(path, str(path.relative_to(doc_root))) for path in pages),
            )
            if isinstance(outcome, UploadOutcome)
        ]
        uploaded = time.perf_counter() - started
        duplicates = sum(1 for outcome in outcomes if outcome.duplicate)
        job_ids = [str(o.job_id) for o in outcomes if not o.duplicate and o.job_id is not None]
        # One count per poll: asking after each job in turn would cost the
        # machine more CPU than some stages do.
        polling = create_engine(
            settings.database_url.replace("postgresql://", "postgresql+psycopg://", 1)
        )
        while finished_jobs(polling, namespace) < len(job_ids):
            ledger.poll()
            time.sleep(0.2)
        polling.dispose()
        wall = time.perf_counter() - started
        cores = os.cpu_count() or 1
        used = ledger.spent()
        machine = busy_seconds() - busy
        print(
            f"machine CPU busy: {machine / (wall * cores):.0%} of {cores} cores "
            f"({machine:.1f} CPU s); ragsage's processes {sum(used.values()):.1f} CPU s: "
            + ", ".join(f"{name} {seconds:.1f}" for name, seconds in used.items())
        )
        jobs = [enqueuer.job_status(namespace, job_id) for job_id in job_ids]
        found = [job for job in jobs if job]
        return wall, (uploaded, duplicates), found, worker_peaks(worker), sum(used.values())
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


def run_peer(peer_python: str, peer_script: Path, doc_root: Path, workdir: Path) -> dict | None:
    done = subprocess.run(
        [
            peer_python,
            str(peer_script),
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
    return dict(json.loads(results.read_text()))


def peer_wall(results: dict) -> float | None:
    runs = [r for r in results.get("ingest_seq", []) if "wall_s" in r]
    return float(runs[0]["wall_s"]) if runs else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--doc-root", type=Path, default=Path("/usr/share/doc"))
    parser.add_argument(
        "--processes",
        default="2",
        help="worker processes; a comma-separated list (say 1,2) runs each in turn, "
        "on a fresh database, and prints the wall-time ratios",
    )
    parser.add_argument("--chunk-size", type=int, default=512)
    parser.add_argument(
        "--peer-script",
        type=Path,
        help="the peer's benchmark script: its sampled sentences are the search queries, "
        "and --peer-python runs it",
    )
    parser.add_argument("--peer-python", help="python of an environment holding LlamaIndex")
    parser.add_argument(
        "--no-search", action="store_true", help="skip the search measurements after ingestion"
    )
    args = parser.parse_args()
    if args.peer_script is None and (args.peer_python or not args.no_search):
        parser.error("--peer-script is needed for the search queries and --peer-python")
    pages = site_chrome.html_pages(args.doc_root)
    megabytes = sum(path.stat().st_size for path in pages) / 1e6
    print(f"{len(pages)} pages, {megabytes:.1f} MB of HTML under {args.doc_root}")
    walls: dict[int, float] = {}
    for processes in (int(value) for value in args.processes.split(",")):
        walls[processes] = run_once(args, pages, processes)
    if len(walls) > 1:
        fewest = min(walls)
        for processes, wall in sorted(walls.items()):
            print(f"{processes} processes: {wall:.1f} s = {wall / walls[fewest]:.2f} x {fewest}")
    if args.peer_python:
        with tempfile.TemporaryDirectory() as directory:
            results = run_peer(args.peer_python, args.peer_script, args.doc_root, Path(directory))
        peer = peer_wall(results) if results else None
        if results and not args.no_search:
            print("peer (LlamaIndex, same pages, same run) search, top 10:")
            for name, figures in corpus_search.peer_figures(results).items():
                print(corpus_search.line(name, figures))
            rates = (results.get("query") or {}).get("hit_rate") or {}
            print(f"  peer own sentence in top 10: {rates}")
        if peer:
            for processes, wall in sorted(walls.items()):
                print(
                    f"peer (LlamaIndex) ingestion: {peer:.1f} s; ragsage with {processes} "
                    f"processes / peer = {wall / peer:.2f}"
                )
        spent = peer_cpu(results) if results else None
        if spent:
            client, server, nodes = spent
            parsing = parse_cpu(pages)
            print(
                f"peer CPU: client {client:.1f} s, server and the rest of the machine "
                f"{server:.1f} s, {(client + server) / max(1, nodes) * 1000:.2f} ms per chunk "
                f"({nodes} chunks); ragsage's parser alone over the same pages {parsing:.1f} s "
                "(the conversion the peer's timer leaves out)"
            )
            for processes, cpu in sorted(CPU_SECONDS.items()):
                print(
                    f"ragsage with {processes} processes: {cpu:.1f} CPU s = "
                    f"{cpu / (client + server + parsing):.2f} x (peer + parsing)"
                )


# The CPU seconds of ragsage's processes in each run, by worker processes.
CPU_SECONDS: dict[int, float] = {}


def parse_cpu(pages: list[Path]) -> float:
    """CPU seconds of the engine's parser over the pages in this process (no store, no queue).

    The peer's timer starts after its own HTML-to-text conversion; this is the
    part of ragsage's CPU that does the same work, to set beside it.
    """
    backend = HeuristicBackend()
    sources = [RawSource(path.read_bytes(), path.name) for path in pages]
    started = time.process_time()
    for source in sources:
        backend.parse(source)
    return time.process_time() - started


def peer_cpu(results: dict) -> tuple[float, float, int] | None:
    """The peer's client CPU, the rest of the machine's busy CPU (its server), and its chunks."""
    runs = [r for r in results.get("ingest_seq", []) if "wall_s" in r]
    if not runs:
        return None
    run = runs[0]
    client = float(run["cpu_user_s"] + run["cpu_sys_s"] + run["cpu_children_s"])
    busy = float((run.get("machine_cpu") or {}).get("busy_s", client))
    return client, max(0.0, busy - client), int(run.get("nodes", 0))


def run_once(args: argparse.Namespace, pages: list[Path], processes: int) -> float:
    # The search figures time one client asking as fast as answers come back,
    # about 150 searches a second: past a key's default rate, so limits are off.
    unlimited = {
        f"rate_limit_{kind}_{who}": "none"
        for kind in ("search", "other")
        for who in ("key", "namespace")
    }
    with local_stack("corpus", chunk_size=args.chunk_size, **unlimited) as stack:
        settings = stack.settings
        migrator = Enqueuer(settings)
        migrator.run(migrator.database.migrate())
        migrator.close()
        wall, uploaded, jobs, peaks, cpu = ingest(
            settings, pages, args.doc_root, processes, stack.directory / "worker.log"
        )
        chunks = stored_chunks(stack.owner_url)
        report(args, processes, wall, uploaded, jobs, peaks, chunks, pages)
        print(f"ragsage CPU per chunk written: {cpu / max(1, len(chunks)) * 1000:.2f} ms")
        CPU_SECONDS[processes] = cpu
        if not args.no_search:
            search_report(args, stack, pages, processes)
    return wall


def search_report(
    args: argparse.Namespace, stack: Stack, pages: list[Path], processes: int
) -> None:
    """Search latency idle, over HTTP, during a second ingestion; the own-sentence rate."""
    settings = stack.settings
    sentences = corpus_search.query_sentences(pages, args.peer_script)
    key = asyncio.run(new_key(settings, Scope(NAMESPACE)))
    server, url = serve_api(settings, stack.directory / "api.log")
    try:
        figures, last = asyncio.run(
            corpus_search.measure(settings, NAMESPACE, sentences, (url, key))
        )
    finally:
        server.terminate()
        server.wait(30)
    print(f"search over {len(sentences)} sampled sentences, top 10 (median of 3 rounds):")
    corpus = corpus_search.Corpus(stack.owner_url, NAMESPACE)
    navigation = corpus_search.navigation_sentences(args.doc_root, pages, sentences)
    for name, measured in figures.items():
        rate, nav, absent = corpus_search.own_sentence_rate(
            corpus, sentences, last[name], navigation
        )
        print(corpus_search.line(name, measured, f"  own sentence {rate:.3f}"))
    print(
        f"  sentences only in navigation the chunker removed (left out): {nav}; "
        f"absent from the stored text for another reason (counted as misses): {absent}"
    )
    dense, raw = figures["dense store"]["p50"], figures["dense raw SQL"]["p50"]
    print(f"  dense store / raw SQL p50: {dense / raw:.2f}")
    # The same 50 sentences, idle and during the ingestion, through one runtime each.
    probe = sentences[:50]
    idle = statistics.median(
        asyncio.run(corpus_search.under_load(settings, NAMESPACE, probe, passes=5))
    )
    loaded: list[float] = []
    done = threading.Event()

    def search_while_ingesting() -> None:
        loaded.extend(asyncio.run(corpus_search.under_load(settings, NAMESPACE, probe, until=done)))

    searcher = threading.Thread(target=search_while_ingesting)
    searcher.start()
    try:
        ingest(
            settings, pages, args.doc_root, processes, stack.directory / "load.log", "corpus-load"
        )
    finally:
        done.set()
        searcher.join()
    during = statistics.median(loaded) if loaded else float("nan")
    print(
        f"hybrid p50 idle {idle:.2f} ms; during ingestion by {processes} worker processes "
        f"{during:.2f} ms ({during / idle:.2f} x idle, {len(loaded)} passes of 50 queries)"
    )


def report(args, processes, wall, uploaded, jobs, peaks, chunks, pages) -> None:
    states = Counter(str(job.state) for job in jobs)
    redelivered = sum(1 for job in jobs if job.deliveries > 1)
    lost = sum(job.lost_deliveries for job in jobs)
    seconds, duplicates = uploaded
    print(
        f"wall {wall:.1f} s with {processes} worker processes (uploads {seconds:.1f} s; "
        f"{duplicates} pages were byte-identical to one uploaded before)"
    )
    print(
        f"jobs: {dict(states)}; delivered more than once: {redelivered}; "
        f"deliveries lost (re-queued by the watchdog): {lost}"
    )
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
    durations = {k: v for k, v in stages.items() if not k.endswith("_cpu_ms")}
    cpu = {k.removesuffix("_cpu_ms"): v for k, v in stages.items() if k.endswith("_cpu_ms")}
    print(
        "stage totals (wall): "
        + ", ".join(f"{k} {v / 1000:.1f} s" for k, v in Counter(durations).most_common())
    )
    print(
        "stage CPU in the pool children: "
        + ", ".join(f"{k} {v / 1000:.1f} s" for k, v in Counter(cpu).most_common())
        + f"; all stages {sum(cpu.values()) / 1000:.1f} s"
    )
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
