"""Keeping a running job's lease alive from a process its work cannot starve.

A job's own heartbeat lives on the worker's event loop, and anything that holds
the CPU stops it: a pure-Python loop that never awaits, or one long C call that
keeps the GIL (a regular expression backtracking for seconds stops *every*
thread of the process).  So each worker process that runs jobs also runs a
small keeper process, told over a pipe which job attempt it runs.  The
operating system schedules the keeper whatever the worker does, so a lease
ends only when

* the worker process is gone: its end of the pipe closes, the keeper exits,
  and the lease expires for the watchdog to re-queue the job;
* the job is released, finished, cancelled or taken over (the renewal matches
  the attempt number, so an old attempt can never extend a new one's lease);
* the job has been held past the hard time limit, after which no healthy
  worker is still running it.

The keeper also watches its worker's memory while a job runs.  A job that
grows the process past ``RAGSAGE_JOB_MEMORY_LIMIT`` is failed with that reason
and the process is killed at once: its next delivery finds the job finished,
so a file too big to read costs one delivery, not a crash loop.  (From inside,
a Python thread could not act while a C call holds the GIL and allocates.)

The keeper starts with its worker process and connects at once, and renews a
new hold the moment it hears of it, so a slow start never costs a lease.

Run as ``python -m ragsage.jobs.lease_keeper LEASE HEARTBEAT MAX_HOLD OWNER
MEMORY_LIMIT``; the database settings come from the environment, never the
command line.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import IO, Protocol
from uuid import UUID

from ragsage.adapters.observability.logs import configure_logging
from ragsage.adapters.postgres.database import Database
from ragsage.adapters.postgres.jobs import store
from ragsage.core.scopes import Scope
from ragsage.jobs.memory import resident_bytes
from ragsage.runtime import build_database
from ragsage.settings import Settings

_log = logging.getLogger(__name__)


class LeaseHolder(Protocol):
    """Whatever keeps a claimed job's lease alive while the job runs."""

    def hold(self, namespace: str, job_id: UUID, attempt: int) -> None: ...

    def release(self, job_id: UUID) -> None: ...


class LeaseKeeper:
    """The worker side: starts the keeper process on first use and tells it what to hold.

    Thread-safe; the keeper is restarted (and told every current hold again)
    if it ever exits while this process lives.
    """

    def __init__(
        self, *, lease: float, heartbeat: float, max_hold: float, memory_limit: int = 0
    ) -> None:
        """``memory_limit`` (bytes, 0 for none) is this process's ceiling while it runs a job."""
        self.lease, self.heartbeat, self.max_hold = lease, heartbeat, max_hold
        self.memory_limit = memory_limit
        self._process: subprocess.Popen[bytes] | None = None
        self._holds: dict[UUID, tuple[str, int]] = {}
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start the keeper now, so it is connected before the first job is claimed."""
        with self._lock:
            self._running_stdin()

    def hold(self, namespace: str, job_id: UUID, attempt: int) -> None:
        with self._lock:
            self._holds[job_id] = (namespace, attempt)
            self._send({"hold": str(job_id), "namespace": namespace, "attempt": attempt})

    def release(self, job_id: UUID) -> None:
        with self._lock:
            if self._holds.pop(job_id, None) is not None:
                self._send({"release": str(job_id)})

    @property
    def pid(self) -> int | None:
        """The keeper process's id, once started."""
        return self._process.pid if self._process is not None else None

    def close(self) -> None:
        """Stop the keeper; leases it held then run out on their own."""
        with self._lock:
            process, self._process = self._process, None
            self._holds.clear()
        if process is None:
            return
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)

    def _send(self, message: dict[str, object]) -> None:
        line = (json.dumps(message) + "\n").encode()
        for _ in range(2):
            stdin = self._running_stdin()
            try:
                stdin.write(line)
                stdin.flush()
                return
            except (BrokenPipeError, ValueError, OSError):
                _log.warning("the lease keeper stopped; starting another")
                self._process = None
        # The job's heartbeat still renews its lease, as long as the work lets it.
        _log.error("the lease keeper process cannot be started")

    def _running_stdin(self) -> IO[bytes]:
        if self._process is not None and self._process.poll() is None:
            assert self._process.stdin is not None
            return self._process.stdin
        self._process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ragsage.jobs.lease_keeper",
                str(self.lease),
                str(self.heartbeat),
                str(self.max_hold),
                str(os.getpid()),
                str(self.memory_limit),
            ],
            stdin=subprocess.PIPE,
            close_fds=True,
        )
        assert self._process.stdin is not None
        for job_id, (namespace, attempt) in self._holds.items():
            message = {"hold": str(job_id), "namespace": namespace, "attempt": attempt}
            self._process.stdin.write((json.dumps(message) + "\n").encode())
        return self._process.stdin


@dataclass(slots=True)
class _Hold:
    namespace: str
    attempt: int
    until: float


class _Holds:
    """The keeper side's table of held job attempts, fed by the pipe."""

    def __init__(self, max_hold: float) -> None:
        self.max_hold = max_hold
        self.jobs: dict[UUID, _Hold] = {}

    def apply(self, line: bytes) -> None:
        try:
            message = json.loads(line)
            if "hold" in message:
                self.jobs[UUID(message["hold"])] = _Hold(
                    str(message["namespace"]),
                    int(message["attempt"]),
                    time.monotonic() + self.max_hold,
                )
            elif "release" in message:
                self.jobs.pop(UUID(message["release"]), None)
        except (ValueError, KeyError, TypeError):
            _log.warning("lease keeper: ignoring a malformed instruction")


async def _renew(database: Database, holds: _Holds, lease: float) -> None:
    now = time.monotonic()
    for job_id, hold in list(holds.jobs.items()):
        if now > hold.until:
            _log.warning("lease keeper: job %s outlived the time limit; letting go", job_id)
            holds.jobs.pop(job_id, None)
            continue
        try:
            alive = await store.renew_lease(
                database, Scope(hold.namespace), job_id, hold.attempt, lease, None
            )
        except Exception as exc:  # noqa: BLE001 - the next beat tries again
            _log.warning("lease keeper: renewing job %s failed: %s", job_id, type(exc).__name__)
            continue
        if not alive and holds.jobs.get(job_id) is hold:
            holds.jobs.pop(job_id, None)  # finished, cancelled or taken over


_MEMORY_POLL = 0.2  # seconds between looks at the worker's memory while it runs a job


async def _fail_for_memory(database: Database, holds: _Holds, used: int, limit: int) -> None:
    reason = (
        f"needed more memory than a worker's limit of {limit / 2**20:,.0f} MiB "
        f"(RAGSAGE_JOB_MEMORY_LIMIT; it reached {used / 2**20:,.0f} MiB) and was stopped; "
        "split the file or raise the limit"
    )
    for job_id, hold in list(holds.jobs.items()):
        try:
            async with database.session(Scope(hold.namespace)) as session:
                await store.fail_attempt(session, job_id, hold.attempt, reason)
        except Exception as exc:  # noqa: BLE001 - the poison count still ends it
            _log.error("lease keeper: could not fail job %s: %s", job_id, type(exc).__name__)
        _log.error("lease keeper: job %s %s", job_id, reason)


async def _serve(
    lease: float, heartbeat: float, max_hold: float, owner: int, memory_limit: int = 0
) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    holds = _Holds(max_hold)
    wake = asyncio.Event()

    async def read() -> None:
        while line := await reader.readline():
            holds.apply(line)
            wake.set()  # a new hold is renewed at once, not a heartbeat later
        wake.set()

    reading = asyncio.create_task(read())
    # Connected before the first job: a slow start must not eat into a lease.
    database = build_database(Settings.from_env())
    try:
        await database.ping()
        renew_at = 0.0
        while not reading.done() and os.getppid() == owner:
            watching = memory_limit > 0 and bool(holds.jobs)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(_MEMORY_POLL if watching else heartbeat):
                    await wake.wait()
            woken = wake.is_set()
            wake.clear()
            if not holds.jobs or reading.done():
                continue
            if memory_limit > 0 and (used := resident_bytes(owner)) > memory_limit:
                await _fail_for_memory(database, holds, used, memory_limit)
                os.kill(owner, signal.SIGKILL)
                return
            if woken or time.monotonic() >= renew_at:
                await _renew(database, holds, lease)
                renew_at = time.monotonic() + heartbeat
    finally:
        reading.cancel()
        await database.dispose()


def main(argv: list[str]) -> int:
    lease, heartbeat, max_hold = (float(value) for value in argv[:3])
    owner = int(argv[3]) if len(argv) > 3 else os.getppid()
    memory_limit = int(argv[4]) if len(argv) > 4 else 0
    settings = Settings.from_env()
    configure_logging(settings.log_level, json=settings.log_json)
    asyncio.run(_serve(lease, heartbeat, max_hold, owner, memory_limit))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
