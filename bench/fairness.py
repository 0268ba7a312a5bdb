"""One tenant's backlog against two tenants' small uploads: does anyone wait behind it?

Tenant A bulk-enqueues the Debian HTML pages, each in --copies copies with
distinct bytes (960 and more documents), while tenants B and C each upload one
short real Markdown note every --interval seconds, as interactive uploads.
Each small upload's time from upload to ``succeeded`` is printed against its
idle time (the same kind of note on an idle queue, measured first in the same
database) and against A's longest single job in the same run; the bound the
fair queue promises is the larger of 3x the idle time and A's longest job plus
one second.  A's total time is compared with A alone.  Then the same with A
re-indexing its documents (a new embedding model) instead of uploading them.

    python bench/fairness.py [--doc-root /usr/share/doc] [--copies 4] [--processes 2]

Four phases on one embedded Postgres and Redis, each on its own database and a
fresh worker with the parse cache flushed: A alone, A with B and C, then
(on copies of A-alone's database) A's re-index alone and with B and C.  Times
come from the job rows (Postgres's clock); the run polls with one count per
tick so it spends little of the CPU it measures.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import site_chrome
from redis import Redis
from sqlalchemy import Engine, create_engine, text
from stack import Worker, local_stack, migrate

from ragsage.core.jobs import Upload
from ragsage.jobs.enqueue import Enqueuer
from ragsage.settings import Settings

A, B, C = "tenant-a", "tenant-b", "tenant-c"
REINDEX_MODEL = "ragsage-hashing-256"
# Short real notes of this machine; a generated one stands in if none is found.
NOTE_CANDIDATES = (
    "python3-yaml/README.md",
    "libglib2.0-0/README.md",
    "procps/bugs.md",
    "zstd/TESTING.md",
    "systemd/TRANSLATORS.md",
)


@dataclass(frozen=True)
class JobTimes:
    namespace: str
    filename: str
    kind: str
    state: str
    waited: float  # upload (created_at) to finished_at, seconds
    ran: float  # first claim (started_at) to finished_at, seconds
    created: float  # epoch seconds
    finished: float


def notes(doc_root: Path) -> list[bytes]:
    found = [doc_root / name for name in NOTE_CANDIDATES if (doc_root / name).is_file()]
    if found:
        return [path.read_bytes() for path in found]
    return [b"# Release note\n\nThe nightly build now signs its artefacts.\n"]


def a_documents(pages: list[Path], doc_root: Path, copies: int) -> list[Upload]:
    """Every page ``copies`` times, each copy's bytes made distinct by a trailing comment."""
    uploads = []
    for copy in range(copies):
        for path in pages:
            data = path.read_bytes() + f"\n<!-- copy {copy} -->\n".encode()
            name = f"copy{copy}/{path.relative_to(doc_root)}"
            uploads.append(Upload(name, data, media_type="text/html"))
    return uploads


def engine_for(url: str) -> Engine:
    return create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))


def open_jobs(engine: Engine, namespace: str) -> int:
    with engine.connect() as connection:
        return int(
            connection.scalar(
                text(
                    "SELECT count(*) FROM ragsage_jobs WHERE namespace = :n "
                    "AND state IN ('queued', 'running')"
                ),
                {"n": namespace},
            )
        )


def job_times(engine: Engine) -> list[JobTimes]:
    with engine.connect() as connection:
        rows = connection.execute(
            text(
                "SELECT namespace, filename, kind, state, "
                "extract(epoch FROM finished_at - created_at), "
                "extract(epoch FROM finished_at - started_at), "
                "extract(epoch FROM created_at), extract(epoch FROM finished_at) "
                "FROM ragsage_jobs WHERE finished_at IS NOT NULL"
            )
        ).all()
    return [
        JobTimes(str(r[0]), str(r[1]), str(r[2]), str(r[3]), *(float(v or 0) for v in r[4:]))
        for r in rows
    ]


class Phase:
    """A database, its worker and its enqueuer; the B and C uploads of one measurement."""

    def __init__(self, settings: Settings, processes: int, log: Path, note_bytes: list[bytes]):
        self.settings, self.notes = settings, note_bytes
        self.engine = engine_for(settings.database_url)
        self.enqueuer = Enqueuer(settings)
        self.worker = Worker(settings, processes, log)
        self.sent = 0

    def note(self, namespace: str) -> str:
        """Upload one short note as an interactive upload; returns its job id."""
        self.sent += 1
        body = self.notes[self.sent % len(self.notes)]
        data = body + f"\n\nUpload {self.sent} of {namespace}.\n".encode()
        outcome = self.enqueuer.enqueue_document(
            namespace, f"note-{self.sent}.md", data=data, job_class="interactive"
        )
        return str(outcome.job_id)

    def idle_seconds(self, count: int = 3) -> float:
        """Median upload-to-succeeded time of a note on an idle queue."""
        for _ in range(count):
            self.note(B)
            while open_jobs(self.engine, B):
                time.sleep(0.05)
        idle = [t.waited for t in job_times(self.engine) if t.namespace == B]
        return statistics.median(idle)

    def others_until(self, done: threading.Event, interval: float) -> None:
        """B and C upload a note each, half an interval apart, until ``done``."""
        turn = 0
        while not done.is_set():
            self.note(B if turn % 2 == 0 else C)
            turn += 1
            done.wait(interval / 2)

    def close(self) -> None:
        self.worker.stop()
        self.enqueuer.close()
        self.engine.dispose()


def run_phase(
    settings: Settings,
    args: argparse.Namespace,
    work: str,
    with_others: bool,
    uploads: list[Upload],
    label: str,
) -> dict[str, object]:
    phase = Phase(settings, args.processes, args.logs / f"{label}.log", notes(args.doc_root))
    try:
        idle = phase.idle_seconds()
        started = time.time()
        if work == "upload":
            feeder = threading.Thread(
                target=phase.enqueuer.enqueue_documents,
                args=(A, uploads),
                kwargs={"job_class": "bulk"},
            )
            feeder.start()
        else:
            phase.enqueuer.reindex.start(A, embedder="hashing", model=REINDEX_MODEL)
            feeder = None
        done = threading.Event()
        others = threading.Thread(target=phase.others_until, args=(done, args.interval))
        if with_others:
            time.sleep(args.head_start)  # A's backlog is queued before the others come
            others.start()
        if feeder is not None:
            feeder.join()
        while open_jobs(phase.engine, A):
            time.sleep(0.2)
        done.set()
        if with_others:
            others.join()
            while open_jobs(phase.engine, B) + open_jobs(phase.engine, C):
                time.sleep(0.2)
        times = [t for t in job_times(phase.engine) if t.created >= started]
    finally:
        phase.close()
    kind = "ingest" if work == "upload" else "reindex"
    a_jobs = [t for t in times if t.namespace == A and t.kind == kind]
    small = sorted((t for t in times if t.namespace in (B, C)), key=lambda t: t.created)
    return {
        "idle": idle,
        "a_total": max(t.finished for t in a_jobs) - min(t.created for t in a_jobs),
        "a_jobs": len(a_jobs),
        "a_longest": max(t.ran for t in a_jobs),
        "a_failed": sum(1 for t in a_jobs if t.state == "failed"),
        "small": small,
    }


def report(label: str, alone: dict[str, object], shared: dict[str, object]) -> bool:
    idle = float(shared["idle"])  # type: ignore[arg-type]
    longest = float(shared["a_longest"])  # type: ignore[arg-type]
    bound = max(3 * idle, longest + 1.0)
    small: list[JobTimes] = shared["small"]  # type: ignore[assignment]
    print(f"\n== {label} ==")
    print(
        f"A: {shared['a_jobs']} jobs ({shared['a_failed']} failed); "
        f"alone {alone['a_total']:.1f} s, with B and C {shared['a_total']:.1f} s "
        f"= {float(shared['a_total']) / float(alone['a_total']):.3f} x alone"  # type: ignore[arg-type]
    )
    print(
        f"idle note: {idle * 1000:.0f} ms; A's longest job: {longest:.2f} s; "
        f"bound max(3 x idle, longest + 1 s) = {bound:.2f} s"
    )
    print(f"{'upload':>28} {'waited s':>9} {'x idle':>8} {'x A longest':>12}  within")
    within = True
    for t in small:
        ok = t.waited <= bound and t.state == "succeeded"
        within &= ok
        print(
            f"{t.namespace + '/' + t.filename:>28} {t.waited:9.2f} {t.waited / idle:8.1f} "
            f"{t.waited / longest:12.2f}  {'yes' if ok else 'NO (' + t.state + ')'}"
        )
    waits = [t.waited for t in small]
    if waits:
        print(
            f"small uploads: {len(waits)}, p50 {statistics.median(waits):.2f} s, "
            f"max {max(waits):.2f} s; all within the bound: {'yes' if within else 'NO'}"
        )
    return within


def on_database(url: str, database: str) -> str:
    """``url`` with its database replaced (the query string, a socket folder, kept)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{database}"))


def admin(owner_url: str, statement: str) -> None:
    """Run a statement outside any transaction, connected to the ``postgres`` database."""
    engine = create_engine(
        on_database(owner_url, "postgres").replace("postgresql://", "postgresql+psycopg://", 1),
        isolation_level="AUTOCOMMIT",
    )
    with engine.connect() as connection:
        connection.execute(text(statement))
    engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--doc-root", type=Path, default=Path("/usr/share/doc"))
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--interval", type=float, default=3.0, help="seconds between B's notes")
    parser.add_argument("--head-start", type=float, default=3.0)
    parser.add_argument("--logs", type=Path, default=Path(".ragsage/bench-fairness"))
    parser.add_argument("--skip-reindex", action="store_true")
    args = parser.parse_args()
    args.logs.mkdir(parents=True, exist_ok=True)
    pages = site_chrome.html_pages(args.doc_root)
    uploads = a_documents(pages, args.doc_root, args.copies)
    print(
        f"A: {len(uploads)} documents ({len(pages)} pages x {args.copies} copies, "
        f"{sum(len(u.data) for u in uploads) / 1e6:.0f} MB); "
        f"{args.processes} worker processes; B and C: a note every {args.interval:.0f} s each"
    )
    with local_stack("fair_alone", embedding_widths="256") as stack:
        base = stack.settings
        redis = Redis.from_url(base.redis_url)

        def settings_for(database: str, fresh: bool) -> Settings:
            redis.flushall()  # no queued message, no parse cached by an earlier phase
            url = on_database(stack.owner_url, database)
            settings = replace(
                base,
                database_url=url,
                app_database_url=url.replace("postgres@", "ragsage_app@", 1),
                cache_redis_url=base.redis_url.rsplit("/", 1)[0] + "/1",
            )
            if fresh:
                migrate(settings)
            return settings

        alone = run_phase(settings_for("fair_alone", True), args, "upload", False, uploads, "alone")
        print(f"A alone: {alone['a_total']:.1f} s for {alone['a_jobs']} jobs")
        server = stack.owner_url
        # The re-index phases start from A's ingested documents: copies of A alone.
        admin(server, 'CREATE DATABASE "fair_reindex_alone" TEMPLATE "fair_alone"')
        admin(server, 'CREATE DATABASE "fair_reindex_shared" TEMPLATE "fair_alone"')
        admin(server, 'CREATE DATABASE "fair_shared"')
        shared = run_phase(
            settings_for("fair_shared", True), args, "upload", True, uploads, "shared"
        )
        good = report("A bulk-uploads, B and C upload notes", alone, shared)
        if not args.skip_reindex:
            r_alone = run_phase(
                settings_for("fair_reindex_alone", False), args, "reindex", False, [], "r-alone"
            )
            r_shared = run_phase(
                settings_for("fair_reindex_shared", False), args, "reindex", True, [], "r-shared"
            )
            good &= report("A re-indexes, B and C upload notes", r_alone, r_shared)
    print(f"\nevery small upload within its bound: {'yes' if good else 'NO'}")


if __name__ == "__main__":
    main()
