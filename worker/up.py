"""``ragsage up``: the whole stack on one machine, with no Docker and no keys.

Starts an embedded Postgres (pgvector included), a Redis broker and a Redis
parse cache, one Celery worker and the API (gunicorn), all under a data
directory that is kept between runs; migrates; prints a local API key; queues
the sample documents and follows their jobs; shows a ready-to-paste ``curl``
query with its streamed answer; and serves until Ctrl-C, then stops everything
it started.  Every failure a newcomer can meet ends in one line saying what to
do, not a stack trace.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ragsage.adapters.embedded.postgres import EmbeddedPostgres
from ragsage.adapters.embedded.redis import EmbeddedRedis
from ragsage.core.errors import RagsageError
from ragsage.core.jobs import JobState
from ragsage.core.types import Scope
from ragsage.settings import Settings

if TYPE_CHECKING:
    from ragsage.adapters.sealing import Sealer

NAMESPACE = "default"
QUESTION = "How does row-level security isolate namespaces?"


class StackError(Exception):
    """A failure with a one-line message for the person running ``ragsage up``."""


def register(commands: Any) -> None:
    up = commands.add_parser("up", help="run the whole stack locally (no Docker, no keys)")
    up.add_argument("--data-dir", default=".ragsage/stack", help="kept between runs")
    up.add_argument("--host", default="127.0.0.1")
    up.add_argument("--port", type=int, default=8000)
    up.add_argument("--samples", default="examples/docs", help="documents to ingest at start")
    up.add_argument("--no-samples", action="store_true")
    up.add_argument("--exit-when-ready", action="store_true", help=argparse.SUPPRESS)
    up.set_defaults(handler=_up, asynchronous=False)


def _up(args: argparse.Namespace) -> int:
    stack = Stack(Path(args.data_dir).resolve(), args.host, args.port)
    stopping = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stopping.set())
    try:
        stack.start()
        if not args.no_samples and Path(args.samples).is_dir():
            stack.ingest_samples(Path(args.samples))
        stack.show_query()
        stack.show_sign_in_link()
        print(f"\nServing on {stack.url} — press Ctrl-C to stop.", flush=True)
        while not stopping.wait(1.0) and not args.exit_when_ready:
            stack.check_children()
    except StackError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 1
    finally:
        stack.stop()
    return 0


class Stack:
    """The processes and servers of one local ragsage."""

    def __init__(self, data: Path, host: str, port: int) -> None:
        self.data, self.host, self.port = data, host, port
        self.url = f"http://{host}:{port}"
        self.postgres = EmbeddedPostgres(data / "postgres")
        self.broker = EmbeddedRedis(data / "broker", persistent=True)
        self.cache = EmbeddedRedis(data / "cache", maxmemory_bytes=256 * 1024 * 1024)
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        self.settings: Settings | None = None
        self.key = ""
        # Made once the settings are: it seals stored secrets and signs sign-in codes.
        self.sealer: Sealer | None = None
        self._lock: IO[str] | None = None

    # ------------------------------------------------------------------ start

    def start(self) -> None:
        self.data.mkdir(parents=True, exist_ok=True)
        self._take_lock()
        self._check_port()
        print(f"Starting ragsage with data in {self.data}", flush=True)
        try:
            self.postgres.start()
            owner = self.postgres.ensure_database("ragsage")
        except RagsageError as exc:
            raise StackError(
                f"the embedded Postgres in {self.data / 'postgres'} would not start "
                f"({_first_line(exc)}); move {self.data} aside to start fresh"
            ) from None
        try:
            self.broker.start()
            self.cache.start()
        except RagsageError as exc:
            raise StackError(f"the embedded Redis would not start ({_first_line(exc)})") from None
        local: dict[str, Any] = {}
        if not os.environ.get("RAGSAGE_WEBHOOK_ALLOW_PRIVATE"):
            local["webhook_allow_private"] = True  # receivers on this machine are the point
        self.settings = Settings.from_env(
            **local,
            database_url=owner,
            app_database_url=owner.replace("postgres@", "ragsage_app@", 1),
            redis_url=self.broker.url(0),
            cache_redis_url=self.cache.url(0),
        )
        if not self.settings.sealing_keys:  # the operator's, under either name, come first
            self.settings = self.settings.replace(sealing_keys=self._made_sealing_key())
        self._migrate_and_key()
        self._spawn("worker", ["worker", "--concurrency", "1"])
        self._spawn(
            "api",
            ["api", "--bind", f"{self.host}:{self.port}", "--workers", "1", "--threads", "8"],
        )
        self._wait_ready()
        print(f"API ready at {self.url}", flush=True)
        print(f"Your local API key (namespace {NAMESPACE!r}, admin):\n  {self.key}", flush=True)

    def _made_sealing_key(self) -> str:
        """The key sealing this stack's stored secrets when the operator gave none, made once.

        It is kept with the stack's data (still under its first name,
        ``webhook.key``, so a stack made before keeps opening what it sealed).
        """
        from ragsage.adapters.sealing import new_operator_key

        path = self.data / "webhook.key"
        if not path.exists():
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "w") as handle:
                handle.write(new_operator_key())
        return path.read_text().strip()

    def _take_lock(self) -> None:
        handle = (self.data / "up.lock").open("a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            owner = handle.read().strip() or "another process"
            handle.close()
            raise StackError(
                f"ragsage up is already running with data in {self.data} (pid {owner}); "
                "stop it with Ctrl-C in its terminal, or use another --data-dir"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        self._lock = handle

    def _check_port(self) -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((self.host, self.port))
            except OSError as exc:
                reason = "in use" if exc.errno == errno.EADDRINUSE else exc.strerror
                raise StackError(
                    f"port {self.port} on {self.host} is {reason}; stop what uses it, or "
                    f"choose another: ragsage up --port N (make run PORT=N)"
                ) from None

    def _migrate_and_key(self) -> None:
        from ragsage.adapters.postgres import active_generation
        from ragsage.adapters.postgres.keys import authenticate, create_key, migrate_and_seal
        from ragsage.adapters.sealing import Sealer
        from ragsage.core.keys import Role
        from ragsage.runtime import build_database

        assert self.settings is not None
        settings = self.settings
        key_file = self.data / "api-key"
        scope = Scope(NAMESPACE)
        sealer = self.sealer = Sealer(settings.sealing_keys)

        async def prepare() -> tuple[str, str | None]:
            database = build_database(settings)
            try:
                await migrate_and_seal(database, sealer)
                saved = key_file.read_text().strip() if key_file.exists() else ""
                if saved:
                    async with database.system_session() as session:
                        if await authenticate(session, saved) is not None:
                            key = saved
                        else:
                            saved = ""
                async with database.session(scope) as session:
                    if not saved:
                        made = await create_key(
                            session, scope, Role.ADMIN, "ragsage up", (), sealer
                        )
                        key = made.key
                    active = await active_generation(session)
                pinned = active.embedding_model if active is not None else None
                return key, pinned
            finally:
                await database.dispose()

        try:
            self.key, pinned = asyncio.run(prepare())
        except RagsageError as exc:
            raise StackError(f"could not prepare the database: {_first_line(exc)}") from None
        key_file.write_text(self.key + "\n")
        key_file.chmod(0o600)
        configured = settings.embedding_model_name
        if pinned is not None and pinned != configured:
            print(
                f"note: namespace {NAMESPACE!r} is indexed with embedding model {pinned!r}, but "
                f"the configured model is {configured!r}; queries keep using {pinned!r}. To "
                f"move: ragsage reindex --namespace {NAMESPACE} --embedding-model {configured}",
                flush=True,
            )

    def _spawn(self, name: str, arguments: list[str]) -> None:
        assert self.settings is not None
        logs = self.data / "logs"
        logs.mkdir(exist_ok=True)
        executable = Path(sys.executable).with_name("ragsage")
        command = (
            [str(executable)] if executable.exists() else [sys.executable, "-m", "ragsage.cli"]
        )
        with (logs / f"{name}.log").open("ab") as log:
            self.children[name] = subprocess.Popen(
                [*command, *arguments],
                env={**os.environ, **self.settings.to_env()},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own group: stopping it stops its pool too
            )

    def _wait_ready(self, timeout: float = 90.0) -> None:
        # httpx loads its own CLI (rich, pygments) with it: too slow for every `ragsage`
        # command's start-up, since registering `up` imports this module.
        import httpx

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_children()
            try:
                if httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        raise StackError(f"the API did not become ready; see {self.data / 'logs' / 'api.log'}")

    def check_children(self) -> None:
        for name, child in self.children.items():
            if child.poll() is not None:
                raise StackError(
                    f"the {name} stopped unexpectedly (exit {child.returncode}); "
                    f"see {self.data / 'logs' / (name + '.log')}"
                )

    # ------------------------------------------------------------------ use

    def ingest_samples(self, folder: Path) -> None:
        from ragsage.jobs.enqueue import Enqueuer

        assert self.settings is not None
        enqueuer = Enqueuer(self.settings)
        try:
            pending: dict[str, str] = {}
            for path in sorted(p for p in folder.iterdir() if p.is_file()):
                outcome = enqueuer.enqueue_document(NAMESPACE, path.name, path=path)
                if outcome.duplicate and outcome.state is JobState.SUCCEEDED:
                    print(f"  {path.name}: already ingested", flush=True)
                elif outcome.job_id is not None:
                    pending[str(outcome.job_id)] = path.name
            if pending:
                print(f"Ingesting {len(pending)} sample documents...", flush=True)
            deadline = time.monotonic() + 600
            while pending and time.monotonic() < deadline:
                self.check_children()
                for job_id, name in list(pending.items()):
                    job = enqueuer.job_status(NAMESPACE, job_id)
                    if job is not None and job.state.finished:
                        chunks = (job.result or {}).get("chunks", 0)
                        detail = (
                            f"{chunks} chunks"
                            if job.state is JobState.SUCCEEDED
                            else job.error or (job.result or {}).get("reason")
                        )
                        print(f"  {name}: {job.state.value} ({detail})", flush=True)
                        del pending[job_id]
                time.sleep(0.3)
        finally:
            enqueuer.close()

    def show_query(self) -> None:
        import httpx

        body = json.dumps({"question": QUESTION, "stream": True})
        print(
            "\nAsk a question (streamed, with citations):\n"
            f"  curl -N {self.url}/v1/query -H 'Authorization: Bearer {self.key}' "
            f"-H 'Content-Type: application/json' -d '{body}'\n",
            flush=True,
        )
        try:
            with httpx.stream(
                "POST",
                f"{self.url}/v1/query",
                headers={"Authorization": f"Bearer {self.key}"},
                json={"question": QUESTION, "stream": True},
                timeout=60,
            ) as response:
                event = ""
                for line in response.iter_lines():
                    if line.startswith("event: "):
                        event = line[7:]
                    elif line.startswith("data: "):
                        _show_event(event, json.loads(line[6:]))
        except httpx.HTTPError as exc:
            print(f"(the example query failed: {type(exc).__name__})", flush=True)

    def show_sign_in_link(self) -> None:
        """Print a link that signs the page in once: a short-lived code, never the key itself.

        The key would stay usable by anyone who later reads the terminal's
        scrollback or the browser's history; the code is spent on first use.
        """
        from ragsage.library.sign_in import SignInCodes, sign_in_link

        assert self.sealer is not None
        codes = SignInCodes(self.sealer)
        link = sign_in_link(self.url, codes.make(self.key))
        print(
            f"\nOpen {self.url}/ to upload, ask and search. This link signs in with the local "
            f"key in one click; it works once, within {codes.minutes} minutes (after that, "
            f"paste the key above into the page):\n  {link}",
            flush=True,
        )

    # ------------------------------------------------------------------ stop

    def stop(self) -> None:
        """Stop everything this run started; the data directory stays."""
        for child in self.children.values():
            if child.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.pid, signal.SIGTERM)
        for child in self.children.values():
            try:
                child.wait(30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.pid, signal.SIGKILL)
                child.wait(10)
        for server in (self.cache, self.broker):
            with contextlib.suppress(Exception):
                server.stop()
        with contextlib.suppress(Exception):
            self.postgres.stop()
        if self._lock is not None:
            self._lock.close()
            self._lock = None
        if self.children:
            print("Stopped. Data kept in", self.data, flush=True)


def _show_event(event: str, data: Any) -> None:
    if event == "token":
        print(data["text"], end="", flush=True)
    elif event == "citations" and data:
        print("\n\nSources:")
        for citation in data:
            print(f"  [{citation['number']}] {citation['source']} — {citation['title']}")
    elif event == "error":
        print(f"\n(error: {data['message']})")


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
