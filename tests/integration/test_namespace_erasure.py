"""Ending a tenant: ``ragsage namespaces delete`` while its jobs run, on real services."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import redis
from sqlalchemy import text

from ragsage.adapters.embedding_cache import CachingEmbedder, embed_cache_prefix
from ragsage.adapters.postgres.keys import authenticate_on, create_key
from ragsage.adapters.postgres.namespaces import namespace_tables
from ragsage.adapters.redis.redis import RedisCache
from ragsage.core.keys import Role
from ragsage.core.scopes import Scope
from ragsage.ingestion.parse_cache import parse_cache_key
from ragsage.runtime import build_runtime
from ragsage.testing import FakeEmbedder

from .worker_harness import ROOT, Deployment

ACME, GLOBEX = Scope("acme"), Scope("globex")


def _manual(name: str) -> bytes:
    return (
        f"# {name} operating manual\n\n## Start-up\n\nOpen the {name} intake valve, wait for "
        f"the pressure to settle and start the {name} pump.\n\n## Shut-down\n\nClose the "
        f"{name} valve before the pump stops.\n"
    ).encode()


def _rows_left(deployment: Deployment, namespace: str) -> dict[str, int]:
    """Rows of ``namespace`` in every ragsage table the catalogue lists (read as the owner)."""

    async def count() -> dict[str, int]:
        runtime = build_runtime(deployment.settings)
        try:
            async with runtime.database.owner_connection() as owner:
                tables = await namespace_tables(owner)
                assert "ragsage_chunks" in tables and "ragsage_api_keys" in tables
                return {
                    table: int(
                        await owner.scalar(
                            text(f'SELECT count(*) FROM "{table}" WHERE namespace = :n'),
                            {"n": namespace},
                        )
                        or 0
                    )
                    for table in tables
                }
        finally:
            await runtime.aclose()

    return asyncio.run(count())


def _key_for(deployment: Deployment, scope: Scope) -> str:
    async def make() -> str:
        runtime = build_runtime(deployment.settings)
        try:
            async with runtime.database.session(scope) as session:
                return (await create_key(session, scope, Role.READ, "reader")).key
        finally:
            await runtime.aclose()

    return asyncio.run(make())


def _accepted(deployment: Deployment, key: str) -> bool:
    async def check() -> bool:
        runtime = build_runtime(deployment.settings)
        try:
            return await authenticate_on(runtime.database, key) is not None
        finally:
            await runtime.aclose()

    return asyncio.run(check())


def _cache_vectors(deployment: Deployment, namespace: str) -> None:
    """Vectors of the namespace's texts in the cache, as a paid model's embedder leaves them."""

    async def embed() -> None:
        cache = RedisCache.from_url(deployment.settings.cache_redis_url, prefix="")
        try:
            embedder = CachingEmbedder(FakeEmbedder(dimension=16), cache)
            await embedder.for_namespace(namespace).embed(["Open the intake valve."])
        finally:
            await cache.close()

    asyncio.run(embed())


def _ragsage(deployment: Deployment, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).with_name("ragsage")), "namespaces", *args],
        cwd=ROOT,
        env=deployment.env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_deleting_a_namespace_mid_job_leaves_nothing_of_it(deployment: Deployment) -> None:
    enqueuer = deployment.enqueuer
    quick = deployment.worker()
    quick.start()
    kept = enqueuer.enqueue_document(GLOBEX.namespace, "boiler.md", data=_manual("boiler"))
    done = enqueuer.enqueue_document(ACME.namespace, "pump.md", data=_manual("pump"))
    deployment.wait(GLOBEX.namespace, [str(kept.job_id)])
    deployment.wait(ACME.namespace, [str(done.job_id)])
    quick.stop()
    globex_before = _rows_left(deployment, GLOBEX.namespace)
    key = _key_for(deployment, ACME)
    assert _ragsage(deployment, "set", ACME.namespace, "--max-documents", "9").returncode == 0
    cache = redis.Redis.from_url(deployment.settings.cache_redis_url)
    assert list(cache.scan_iter(match="*:acme:*"))  # its parse is cached
    for namespace in (ACME.namespace, GLOBEX.namespace):
        _cache_vectors(deployment, namespace)
    vectors = {
        n: set(cache.scan_iter(match=embed_cache_prefix(n) + "*")) for n in ("acme", "globex")
    }
    assert vectors["acme"] and vectors["globex"]
    # A namespace may hold ':': erasing acme must not take x:acme's cached parse.
    neighbour = parse_cache_key("x:acme", "0" * 64, object())
    cache.set(neighbour, "{}")
    shown = _ragsage(deployment, "delete", ACME.namespace)
    assert shown.returncode == 1 and "run again with --yes" in shown.stderr
    assert "ragsage_chunks" in shown.stdout
    assert _rows_left(deployment, ACME.namespace)["ragsage_documents"] == 1  # nothing deleted

    slow = deployment.worker(
        RAGSAGE_ADAPTERS="tests.integration.adapters:flaky",
        TEST_EMBED_DELAY="6",
        TEST_EMBED_COUNTER=str(deployment.tmp / "embeds"),
    )
    slow.start()
    running = enqueuer.enqueue_document(ACME.namespace, "mixer.md", data=_manual("mixer"))
    queued = enqueuer.enqueue_document(ACME.namespace, "drier.md", data=_manual("drier"))
    deployment.wait(ACME.namespace, [str(running.job_id)], until=lambda job: job.stage == "embed")
    erased = _ragsage(deployment, "delete", ACME.namespace, "--yes")
    assert erased.returncode == 0, erased.stdout + erased.stderr
    assert "erased namespace 'acme'" in erased.stdout and "ragsage_api_keys" in erased.stdout
    assert not _accepted(deployment, key)  # the next request with its key is refused

    # The running job's embed (6 s) ends, or its heartbeat (1 s) finds it gone first;
    # then the queued job's turn is taken, and finds nothing of it left to run.
    slow.wait_deliveries_ended(2)
    left = _rows_left(deployment, ACME.namespace)
    assert left and set(left.values()) == {0}, left
    assert set(cache.scan_iter(match="*:acme:*")) == {neighbour.encode()}
    assert not list(cache.scan_iter(match=embed_cache_prefix("acme") + "*"))
    assert set(cache.scan_iter(match=embed_cache_prefix("globex") + "*")) == vectors["globex"]
    assert _rows_left(deployment, GLOBEX.namespace) == globex_before
    log = slow.log.read_text(errors="replace")
    assert f"job {running.job_id}: abandoned" in log
    assert f"job {queued.job_id}:" not in log  # it never started
