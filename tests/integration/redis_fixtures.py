"""A real Redis for integration tests, started by the tests themselves.

Importing ``redis_server_fixture`` into a test module registers the
``redis_server`` fixture there (the function and fixture names differ so that
test parameters named ``redis_server`` do not shadow an import).  One server
serves the whole session; tests keep apart by unique key prefixes, never by
flushing.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator

import pytest

from ragsage.adapters.embedded.redis import EmbeddedRedis


@pytest.fixture(scope="session", name="redis_server")
def redis_server_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedRedis]:
    server = EmbeddedRedis(tmp_path_factory.mktemp("redis"), maxmemory_bytes=64 * 1024 * 1024)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def unique_prefix() -> str:
    """A key prefix no other test uses."""
    return f"test:{uuid.uuid4().hex[:12]}:"


def closed_port() -> int:
    """A loopback port nothing listens on (connections are refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port
