"""``ragsage worker``, ``ragsage enqueue`` and ``ragsage jobs``, registered as CLI plugins.

The ``ragsage`` command finds these through the ``ragsage.commands`` entry-point
group, so the engine's CLI never imports the worker package.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

from tqdm import tqdm

from ragsage.cli.files import collect_files
from ragsage.cli.reindex import GATE_MARGIN, reindex_command
from ragsage.core.errors import RagsageError
from ragsage.core.jobs import Job, JobState


def register(commands: Any) -> None:
    """Add the worker's subcommands to the ``ragsage`` parser."""
    run = commands.add_parser("worker", help="run a Celery ingestion worker")
    run.add_argument("--concurrency", "-c", type=int, default=None, help="worker processes")
    run.add_argument("--pool", choices=("prefork", "solo", "threads"), default="prefork")
    run.add_argument("--loglevel", default="INFO")
    run.add_argument("--queues", default=None, help="comma-separated (default: all ragsage queues)")
    run.set_defaults(handler=_worker, asynchronous=False)

    enqueue = commands.add_parser("enqueue", help="queue files for ingestion by the workers")
    enqueue.add_argument("paths", nargs="+")
    enqueue.add_argument("--namespace", required=True)
    enqueue.add_argument("--no-wait", action="store_true", help="return once queued")
    enqueue.add_argument("--timeout", type=float, default=3600.0)
    enqueue.add_argument(
        "--job-class",
        choices=("bulk", "interactive"),
        default="bulk",
        help="bulk (default) waits behind the namespace's interactive uploads",
    )
    enqueue.add_argument(
        "--access",
        action="append",
        metavar="PRINCIPAL",
        help="a principal who may read the files (repeatable); without it a new document "
        "is open to the whole namespace and a new version keeps its list",
    )
    enqueue.set_defaults(handler=_enqueue, asynchronous=False)

    reindex = commands.add_parser(
        "reindex", help="re-embed a namespace with another model, switching when complete"
    )
    where = reindex.add_mutually_exclusive_group(required=True)
    where.add_argument("--namespace")
    where.add_argument("--all", action="store_true", help="every namespace with documents")
    action = reindex.add_mutually_exclusive_group(required=True)
    action.add_argument("--embedding-model", help="the model to re-index into")
    action.add_argument("--status", action="store_true", help="show generations and progress")
    action.add_argument("--rollback", action="store_true", help="re-activate the previous one")
    action.add_argument("--drop-previous", action="store_true", help="free retired generations")
    reindex.add_argument("--embedder", help="adapter kind (default: RAGSAGE_EMBEDDER)")
    reindex.add_argument("--dim", type=int, help="vector width, where the model offers several")
    reindex.add_argument("--no-wait", action="store_true", help="return once the jobs are queued")
    reindex.add_argument("--timeout", type=float, default=24 * 3600.0)
    gated = reindex.add_argument_group("evaluation gate (with --embedding-model)")
    gated.add_argument(
        "--gate",
        metavar="DATASET",
        help="evaluate the new generation against the active one on this dataset "
        "(QA spans or BEIR) and switch only if recall@10 holds",
    )
    gated.add_argument(
        "--gate-margin",
        type=float,
        metavar="DROP",
        help=f"largest acceptable fall in recall@10, absolute (default {GATE_MARGIN})",
    )
    gated.add_argument(
        "--gate-retrieval", choices=("dense", "hybrid"), help="how to search (default hybrid)"
    )
    gated.add_argument("--gate-split", help="question split to ask (default: all)")
    gated.add_argument(
        "--force",
        action="store_true",
        help="activate even if the gate refuses (figures shown); with --rollback, roll back "
        "even over documents the previous generation lacks",
    )
    reindex.set_defaults(handler=reindex_command, asynchronous=False)

    again = commands.add_parser(
        "reprocess", help="read a namespace's documents again from their stored bytes"
    )
    again.add_argument("--namespace", required=True)
    again.add_argument(
        "--only-skipped-pages",
        action="store_true",
        help="only documents with scanned pages skipped for want of a transcriber",
    )
    again.add_argument("--no-wait", action="store_true", help="return once queued")
    again.add_argument("--timeout", type=float, default=3600.0)
    again.set_defaults(handler=_reprocess, asynchronous=False)

    jobs = commands.add_parser("jobs", help="show an ingestion job's state")
    jobs.add_argument("job_id")
    jobs.add_argument("--namespace", required=True)
    jobs.set_defaults(handler=_jobs, asynchronous=False)


def celery_worker_argv(
    queues: str, *, pool: str = "prefork", concurrency: int | None = None, loglevel: str = "INFO"
) -> list[str]:
    """The command line of a ragsage Celery worker (also used by tests and benchmarks)."""
    argv = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "worker.app",
        "worker",
        f"--pool={pool}",
        f"--loglevel={loglevel}",
        f"--queues={queues}",
        # Workers coordinate through Postgres, not Celery's broadcast chatter.
        "--without-gossip",
        "--without-mingle",
    ]
    if concurrency:
        argv.append(f"--concurrency={concurrency}")
    return argv


def _worker(args: argparse.Namespace) -> NoReturn:
    from ragsage.adapters.observability import metrics_dir
    from ragsage.settings import Settings

    settings = Settings.from_env()

    # Before Celery exists: the pool's processes must all import prometheus_client
    # in multiprocess mode, sharing this directory, for one endpoint to sum them.
    metrics_dir.prepare("worker", settings.metrics_dir)
    queues = args.queues or f"{settings.ingest_queue},{settings.reindex_queue}"
    argv = celery_worker_argv(
        queues, pool=args.pool, concurrency=args.concurrency, loglevel=args.loglevel
    )
    # Replace this process so signals (SIGTERM for a graceful stop) reach Celery.
    os.execv(sys.executable, argv)


def _enqueue(args: argparse.Namespace) -> int:
    from ragsage.jobs.enqueue import Upload, enqueue_documents, job_status, upload_from_path

    pending: dict[str, Path] = {}
    failures = 0
    sent: list[Path] = []

    def uploads() -> Iterator[Upload]:
        nonlocal failures
        for path in collect_files(args.paths):
            try:
                upload = upload_from_path(path, access=args.access)
            except OSError as exc:
                failures += 1
                print(f"error: {path}: cannot read ({exc.strerror or exc})", file=sys.stderr)
                continue
            sent.append(path)
            yield upload

    # In batches: one transaction and one broker round per few dozen files.
    for path, outcome in zip(
        sent, enqueue_documents(args.namespace, uploads(), job_class=args.job_class), strict=True
    ):
        if isinstance(outcome, RagsageError):
            failures += 1
            print(f"error: {outcome}", file=sys.stderr)
        elif outcome.duplicate and outcome.state is JobState.SUCCEEDED:
            print(f"unchanged {path}: already ingested as {outcome.document_id}")
        elif outcome.job_id is not None:
            pending[str(outcome.job_id)] = path
            note = " (already queued)" if outcome.duplicate else ""
            print(f"queued {path} as job {outcome.job_id}{note}")
    if args.no_wait or not pending:
        return 1 if failures else 0
    finished = _follow(args.namespace, pending, args.timeout, job_status)
    succeeded = 0
    for job_id, path in pending.items():
        job = finished.get(job_id)
        if job is not None and job.state is JobState.SUCCEEDED:
            succeeded += 1
            continue
        if job is not None and job.state is JobState.SUPERSEDED:
            # A newer upload of the same document was stored: nothing went wrong.
            print(f"superseded {path}: {(job.result or {}).get('reason', '')}")
            continue
        failures += 1
        reason = job.error if job is not None else f"still running after {args.timeout:.0f}s"
        print(f"failed {path}: {reason}", file=sys.stderr)
    print(f"{succeeded} ingested, {failures} failed")
    return 1 if failures else 0


def _follow(
    namespace: str, pending: dict[str, Path], timeout: float, job_status: Any
) -> dict[str, Job]:
    """Poll the jobs until each has finished, with a progress bar on a terminal."""
    finished: dict[str, Job] = {}
    deadline = time.monotonic() + timeout
    with tqdm(total=len(pending), unit="doc", disable=not sys.stderr.isatty()) as bar:
        while len(finished) < len(pending) and time.monotonic() < deadline:
            for job_id in pending:
                if job_id in finished:
                    continue
                job = job_status(namespace, job_id)
                if job is not None and job.state.finished:
                    finished[job_id] = job
                    bar.update(1)
            if len(finished) < len(pending):
                time.sleep(0.25)
    return finished


def _reprocess(args: argparse.Namespace) -> int:
    from ragsage.jobs.enqueue import default_enqueuer, job_status

    job_ids = default_enqueuer().reindex.reprocess(
        args.namespace, only_skipped_pages=args.only_skipped_pages
    )
    which = "with skipped scanned pages " if args.only_skipped_pages else ""
    print(f"queued {len(job_ids)} document{'s' if len(job_ids) != 1 else ''} {which}to read again")
    if args.no_wait or not job_ids:
        return 0
    pending = {str(job_id): Path(str(job_id)) for job_id in job_ids}
    finished = _follow(args.namespace, pending, args.timeout, job_status)
    done = [job for job in finished.values() if job.state is JobState.SUCCEEDED]
    for job_id in pending:
        job = finished.get(job_id)
        if job is None or job.state in (JobState.SUCCEEDED, JobState.SUPERSEDED):
            continue
        print(f"failed {job.filename}: {job.error}", file=sys.stderr)
    unfinished = len(pending) - len(finished)
    tail = f", {unfinished} still running after {args.timeout:.0f}s" if unfinished else ""
    print(f"{len(done)} read again{tail}")
    settled = [j for j in finished.values() if j.state in (JobState.SUCCEEDED, JobState.SUPERSEDED)]
    return 0 if len(settled) == len(pending) else 1


def _jobs(args: argparse.Namespace) -> int:
    from ragsage.jobs.enqueue import job_status

    job = job_status(args.namespace, args.job_id)
    if job is None:
        print(f"error: no job {args.job_id} in namespace {args.namespace!r}", file=sys.stderr)
        return 1
    for key, value in job.to_dict().items():
        print(f"{key}: {value}")
    return 0
