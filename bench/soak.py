"""A bounded soak of the job system: real services, worker deaths, outages, rapid versions.

    python bench/soak.py [--documents 400] [--kills 20] [--seed 7]

An embedded Postgres and a persistent Redis broker start in a temporary
folder; two ``ragsage`` Celery workers (one pool process each) consume the
queue with a short lease (6 s, heartbeat 2 s, watchdog every 2 s).  The
documents are real files found on this machine (Debian's HTML documentation,
the Python standard library's sources, text and Markdown files) topped up
with generated Markdown, plus a few that must fail: a corrupt PDF, a file of
NUL bytes, and a 90 MB text file that is one single line.

While they ingest, the script SIGKILLs a worker's pool process at random
``--kills`` times (every fifth kill takes a whole worker, which is started
again), restarts Postgres once and the broker once, and uploads 20 versions of
one document in quick succession.  Then it checks, in Postgres:

* every job ended ``succeeded``, ``superseded`` or ``failed`` with an error
  that names its file;
* every document is there once, ``ready`` unless its only upload failed,
  with chunk ordinals 0..n-1 and as many chunks as its stored job reported;
* the versioned document holds its 20th upload and nothing of the others;

and prints the jobs by state, the kills that hit a running job and the wait
from each such kill to the job running again (median and longest).  Exit
status 1 if a check fails.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import signal
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from soak_parts import Kill, Workers, edition, generated, must_fail, real_files
from sqlalchemy import Engine, create_engine, text

from ragsage.adapters.embedded.postgres import EmbeddedPostgres
from ragsage.adapters.embedded.redis import EmbeddedRedis
from ragsage.core.identity import content_hash, document_id_for
from ragsage.core.jobs import Upload, UploadOutcome
from ragsage.jobs.enqueue import Enqueuer
from ragsage.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
NAMESPACE = "soak"
VERSIONED = "versioned.md"
FINISHED = ("succeeded", "superseded", "failed", "cancelled")
_STOPPED: set[tuple[str, int]] = set()  # (job, attempt) already put down to a kill


def jobs_now(engine: Engine) -> dict[str, dict[str, Any]] | None:
    """Every job's row, or None while Postgres is away."""
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                text(
                    "SELECT id::text, state, attempts, lost_deliveries, filename, error, "
                    "document_id, version, result, lease_expires_at FROM ragsage_jobs "
                    "WHERE namespace = :n"
                ),
                {"n": NAMESPACE},
            ).all()
    except Exception:  # noqa: BLE001 - the restart makes Postgres vanish for a while
        return None
    keys = (
        "state",
        "attempts",
        "lost",
        "filename",
        "error",
        "document",
        "version",
        "result",
        "lease",
    )
    return {row[0]: dict(zip(keys, row[1:], strict=True)) for row in rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    # Enough work to outlast 20 kills on a fast machine: 150 ran out after 8-16.
    parser.add_argument("--documents", type=int, default=400)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--timeout", type=float, default=900.0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="ragsage-soak-") as directory:
        raise SystemExit(soak(Path(directory), args, rng))


def soak(base: Path, args: argparse.Namespace, rng: random.Random) -> int:
    postgres = EmbeddedPostgres(base / "pg")
    broker = EmbeddedRedis(base / "broker", persistent=True)
    postgres.start()
    broker.start()
    owner = postgres.ensure_database("soak")
    settings = Settings.from_env(
        {},
        database_url=owner,
        app_database_url=owner.replace("postgres@", "ragsage_app@", 1),
        redis_url=broker.url(0),
        cache_redis_url="",
        embedder="hashing",
        job_lease=6.0,
        job_heartbeat=2.0,
        watchdog_interval=2.0,
        job_unsent_grace=4.0,
        job_retry_backoff=1.5,
        job_retry_backoff_max=4.0,
        job_max_attempts=8,
        job_soft_time_limit=120.0,
        job_time_limit=150.0,
        broker_visibility_timeout=600.0,
    )
    engine = create_engine(owner.replace("postgresql://", "postgresql+psycopg://", 1))
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("RAGSAGE_")},
        **settings.to_env(),
    }
    workers = Workers(env, f"{settings.ingest_queue},{settings.reindex_queue}", base)
    enqueuer = Enqueuer(settings)
    try:
        enqueuer.run(enqueuer.database.migrate())
        return run(args, rng, settings, postgres, broker, engine, workers, enqueuer)
    finally:
        workers.stop()
        enqueuer.close()
        engine.dispose()
        broker.stop()
        postgres.stop()


def run(
    args: argparse.Namespace,
    rng: random.Random,
    settings: Settings,
    postgres: EmbeddedPostgres,
    broker: EmbeddedRedis,
    engine: Engine,
    workers: Workers,
    enqueuer: Enqueuer,
) -> int:
    bad = must_fail()
    found = real_files(args.documents - len(bad) - 30, rng)
    uploads = [Upload(str(path), path.read_bytes()) for path in found]
    uploads += [
        Upload(f"report-{n}.md", generated(n))
        for n in range(args.documents - len(bad) - len(found))
    ]
    uploads += bad
    rng.shuffle(uploads)
    for index in (0, 1):
        workers.start(index)
    time.sleep(4)
    started = time.monotonic()
    outcomes = enqueuer.enqueue_documents(NAMESPACE, uploads)
    jobs_expected = len({o.job_id for o in outcomes if isinstance(o, UploadOutcome) and o.job_id})
    print(
        f"uploaded {len(uploads)} documents ({len(found)} real files, {len(bad)} that must fail) "
        f"in {time.monotonic() - started:.1f} s"
    )

    kills: list[Kill] = []
    versions = [edition(number) for number in range(1, 21)]
    events = {7: "postgres", 10: "versions", 14: "broker"}
    waits: list[tuple[float, str]] = []
    pending: list[Kill] = []
    deadline = started + args.timeout
    while time.monotonic() < deadline:
        jobs = jobs_now(engine)
        if jobs is not None:
            settle(pending, jobs, waits)
            busy = {
                job_id: (row["attempts"], row["lease"])
                for job_id, row in jobs.items()
                if row["state"] == "running"
            }
            if len(kills) < args.kills and busy:
                kills.append(kill_one(workers, rng, busy, len(kills)))
                pending.append(kills[-1])
                event = events.get(len(kills))
                if event == "postgres":
                    restart(postgres.stop, postgres.start, f"Postgres after kill {len(kills)}")
                elif event == "broker":
                    restart(broker.stop, broker.start, f"the broker after kill {len(kills)}")
                elif event == "versions":
                    for data in versions:
                        enqueuer.enqueue_document(NAMESPACE, VERSIONED, data=data)
                    print("uploaded 20 versions of versioned.md")
                time.sleep(rng.uniform(0.5, 1.5))
                continue
            expected = jobs_expected + (len(versions) if len(kills) >= 10 else 0)
            if not pending and finished(jobs, expected):
                break
        time.sleep(0.5)
    wall = time.monotonic() - started
    jobs = jobs_now(engine) or {}
    print(f"finished in {wall:.1f} s; {len(kills)} kills")
    if len(kills) < args.kills:
        print(f"FAIL the work ran out after {len(kills)} of {args.kills} kills")
        return 1
    return report(engine, jobs, waits, versions, jobs_expected + len(versions))


def finished(jobs: dict[str, dict[str, Any]], expected: int) -> bool:
    return len(jobs) >= expected and all(row["state"] in FINISHED for row in jobs.values())


def kill_one(
    workers: Workers, rng: random.Random, busy: dict[str, tuple[int, int]], number: int
) -> Kill:
    index = rng.randrange(2)
    if (number + 1) % 5 == 0:
        workers.kill_whole(index)
        workers.start(index)
    else:
        for pid in workers.pool_children(index):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return Kill(number + 1, time.monotonic(), busy)


def restart(stop: Any, start: Any, name: str) -> None:
    stop()
    time.sleep(3)
    start()
    print(f"restarted {name}")


def settle(
    pending: list[Kill], jobs: dict[str, dict[str, Any]], waits: list[tuple[float, str]]
) -> None:
    """Find each kill's victim, then time it from the kill to its next attempt.

    The victim is the job whose lease stopped moving: the other worker's lease
    keeper renews its job every heartbeat (2 s), the dead one's never again.
    """
    now = time.monotonic()
    for kill in list(pending):
        if kill.victims is None:
            if now - kill.at < 3.5:
                continue
            kill.victims = {
                job_id
                for job_id, (attempts, lease) in kill.running.items()
                if (row := jobs.get(job_id)) is not None
                and (
                    row["attempts"] > attempts
                    or (row["state"] == "running" and row["lease"] == lease)
                )
                # A job still waiting out its lease from an earlier kill is that kill's.
                and (job_id, attempts) not in _STOPPED
            }
            _STOPPED.update((job_id, kill.running[job_id][0]) for job_id in kill.victims)
        for job_id in list(kill.victims):
            row = jobs.get(job_id)
            attempts = kill.running[job_id][0]
            if row is None or row["state"] in FINISHED and row["attempts"] == attempts:
                kill.victims.discard(job_id)
            elif row["attempts"] > attempts:
                waits.append((now - kill.at, f"kill {kill.number}: {row['filename']}"))
                kill.victims.discard(job_id)
        if not kill.victims:
            pending.remove(kill)


def report(
    engine: Engine,
    jobs: dict[str, dict[str, Any]],
    waits: list[tuple[float, str]],
    versions: list[bytes],
    expected: int,
) -> int:
    problems: list[str] = []
    states = Counter(row["state"] for row in jobs.values())
    print("jobs by state: " + ", ".join(f"{s} {n}" for s, n in sorted(states.items())))
    if len(jobs) < expected:
        problems.append(f"{len(jobs)} jobs, expected {expected}")
    for row in jobs.values():
        if row["state"] not in ("succeeded", "superseded", "failed"):
            problems.append(f"{row['filename']}: ended {row['state']}")
        elif row["state"] == "failed" and row["filename"] not in (row["error"] or ""):
            problems.append(f"{row['filename']}: failed without naming the file: {row['error']}")
    for row in jobs.values():
        if row["state"] == "failed":
            print(f"  failed: {row['error'][:160]}")
    problems += check_documents(engine, jobs, versions)
    if waits:
        seconds = [wait for wait, _ in waits]
        print(
            f"kill -> re-run wait over the {len(waits)} jobs the kills stopped: "
            f"median {statistics.median(seconds):.1f} s, longest {max(seconds):.1f} s"
        )
        for wait, what in sorted(waits, reverse=True)[:3]:
            print(f"  {wait:5.1f} s  {what}")
    for problem in problems:
        print("FAIL " + problem)
    print("PASS" if not problems else f"{len(problems)} problems")
    return 1 if problems else 0


def check_documents(
    engine: Engine, jobs: dict[str, dict[str, Any]], versions: list[bytes]
) -> list[str]:
    problems: list[str] = []
    with engine.connect() as connection:
        documents = {
            row[0]: (row[1], row[2], row[3])
            for row in connection.execute(
                text(
                    "SELECT id, status, content_hash, stored_version FROM ragsage_documents "
                    "WHERE namespace = :n"
                ),
                {"n": NAMESPACE},
            )
        }
        chunks: dict[str, list[int]] = {}
        for document_id, ordinal in connection.execute(
            text(
                "SELECT document_id, ordinal FROM ragsage_chunks WHERE namespace = :n "
                "ORDER BY document_id, ordinal"
            ),
            {"n": NAMESPACE},
        ):
            chunks.setdefault(document_id, []).append(ordinal)
        versioned_text = " ".join(
            connection.scalars(
                text("SELECT text FROM ragsage_chunks WHERE namespace = :n AND document_id = :d"),
                {"n": NAMESPACE, "d": document_id_for(NAMESPACE, VERSIONED)},
            )
        )
    by_document: dict[str, list[dict[str, Any]]] = {}
    for row in jobs.values():
        by_document.setdefault(row["document"], []).append(row)
    for document_id, rows in by_document.items():
        if document_id not in documents:
            problems.append(f"{rows[0]['filename']}: its document is missing")
            continue
        status, _, stored = documents[document_id]
        succeeded = [row for row in rows if row["state"] == "succeeded"]
        if not succeeded:
            continue
        if status != "ready":
            problems.append(f"{rows[0]['filename']}: ingested but {status}")
        ordinals = chunks.get(document_id, [])
        if ordinals != list(range(len(ordinals))):
            problems.append(f"{rows[0]['filename']}: chunk ordinals {ordinals[:5]}... not 0..n-1")
        writer = next((row for row in succeeded if row["version"] == stored), succeeded[-1])
        if (writer["result"] or {}).get("chunks") != len(ordinals):
            problems.append(
                f"{rows[0]['filename']}: {len(ordinals)} chunks stored, its job made "
                f"{(writer['result'] or {}).get('chunks')}"
            )
    versioned = documents.get(document_id_for(NAMESPACE, VERSIONED))
    if versioned is None or versioned[1] != content_hash(versions[-1]):
        problems.append("versioned.md does not hold its 20th upload")
    editions = set(re.findall(r"edition (\d+)", versioned_text.lower()))
    if editions != {"20"}:
        problems.append(f"versioned.md's chunks name editions {sorted(editions)}, not only 20")
    print(f"documents: {len(documents)}; chunks: {sum(len(o) for o in chunks.values())}")
    return problems


if __name__ == "__main__":
    main()
