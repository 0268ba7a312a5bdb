"""Request rates per key and per namespace, counted in a real Redis, through the real API."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import text

from api.costs import AnswersAtOnce
from api.errors import ApiError
from api.limits import RequestLimits
from api.services import EXTENSION
from ragsage.adapters.embedded.redis import EmbeddedRedis
from ragsage.adapters.postgres import Database
from ragsage.adapters.postgres.namespaces import set_overrides
from ragsage.core.keys import Role
from ragsage.core.scopes import Scope
from ragsage.runtime import build_database

from .api_harness import ApiServer, make_key, serve, with_database
from .worker_harness import Deployment


@contextmanager
def _served(deployment: Deployment, **settings: object) -> Iterator[ApiServer]:
    limited = replace(deployment, settings=replace(deployment.settings, **settings))
    with contextmanager(serve)(limited) as api:
        yield api


def _search(api: ApiServer, key: str, times: int) -> list[int]:
    client = api.client(key)
    return [
        client.post("/v1/search", json={"query": "valve pressure"}).status_code
        for _ in range(times)
    ]


def test_a_key_over_its_search_rate_is_refused_with_the_limit_named(
    deployment: Deployment,
) -> None:
    namespace = f"rates-{uuid.uuid4().hex[:8]}"
    with _served(deployment, rate_limit_search_key="4/minute") as api:
        key = make_key(deployment.settings, namespace)
        client = api.client(key)
        answers = [client.post("/v1/search", json={"query": "valve"}) for _ in range(6)]

        assert [a.status_code for a in answers] == [200] * 4 + [429] * 2
        refused = answers[-1]
        assert refused.json()["error"]["code"] == "rate_limited"
        message = refused.json()["error"]["message"]
        assert "rate limit 'search per key' reached: at most 4 searches and answers per minute" in (
            message
        )
        assert "RAGSAGE_RATE_LIMIT_SEARCH_KEY" in message
        assert 1 <= int(refused.headers["Retry-After"]) <= 60
        assert refused.headers["RateLimit-Limit"] == "4"
        assert refused.headers["RateLimit-Remaining"] == "0"
        assert int(refused.headers["RateLimit-Reset"]) == int(refused.headers["Retry-After"])
        # Uploads and management calls are counted apart; another key has its own count.
        assert client.get("/v1/jobs").status_code == 200
        other = make_key(deployment.settings, namespace)
        assert _search(api, other, 1) == [200]
        metrics = api.client().get("/metrics").text
        assert 'ragsage_requests_refused_total{limit="search per key"} 2.0' in metrics
        assert namespace not in metrics  # no series per namespace

        # Who was refused is the namespace's admin's to read, not a metric label.
        assert client.get("/v1/usage").status_code == 403
        admin = api.client(make_key(deployment.settings, namespace, Role.ADMIN))
        client.post("/v1/documents", files={"file": ("memo.md", b"# Memo\n\nValve check.\n")})
        usage = admin.get("/v1/usage").json()
        assert usage["refused"] == {"search per key": 2}
        assert (usage["documents"], usage["jobs_queued"], usage["stored_bytes"]) == (1, 1, 21)
        assert usage["rate_limits"]["search per key"] == "4 per 1 minute"
        assert usage["quotas"] == {"documents": 0, "stored_bytes": 0, "chunks": 0, "queued_jobs": 0}


def test_a_namespaces_keys_share_its_rate_and_other_namespaces_do_not(
    deployment: Deployment,
) -> None:
    busy, calm = f"busy-{uuid.uuid4().hex[:8]}", f"calm-{uuid.uuid4().hex[:8]}"
    with _served(deployment, rate_limit_search_namespace="5/minute") as api:
        first, second = (make_key(deployment.settings, busy) for _ in range(2))
        assert _search(api, first, 3) == [200] * 3
        assert _search(api, second, 3) == [200, 200, 429]
        assert _search(api, make_key(deployment.settings, calm), 3) == [200] * 3


def test_searches_answer_when_the_limits_redis_is_stopped(
    deployment: Deployment, tmp_path: Path
) -> None:
    limits_redis = EmbeddedRedis(tmp_path / "limits-redis")
    limits_redis.start()
    namespace = f"open-{uuid.uuid4().hex[:8]}"
    try:
        with _served(
            deployment, rate_limit_search_key="3/minute", limits_redis_url=limits_redis.url(0)
        ) as api:
            key = make_key(deployment.settings, namespace)
            assert _search(api, key, 4) == [200, 200, 200, 429]
            limits_redis.stop()

            # The key found over its limit stays refused until its window's reset, which
            # each API process remembers; every other search goes through unchecked.
            assert _search(api, key, 1) == [429]
            other = make_key(deployment.settings, namespace)
            assert _search(api, other, 5) == [200] * 5  # fail open, never a 5xx
            metrics = api.client().get("/metrics").text
            assert "ragsage_rate_limits_unavailable_total 1.0" in metrics  # then paused
            started = time.perf_counter()
            assert _search(api, other, 1) == [200]
            assert time.perf_counter() - started < 1.0  # no wait on the stopped server
    finally:
        limits_redis.stop()


def test_a_search_or_answer_over_a_cost_cap_is_refused_naming_it(
    deployment: Deployment,
) -> None:
    namespace = f"costs-{uuid.uuid4().hex[:8]}"
    with _served(deployment, max_top_k=20, max_neighbours=2, max_history_turns=3) as api:
        client = api.client(make_key(deployment.settings, namespace))
        too_many = client.post("/v1/search", json={"query": "valve", "top_k": 21})
        wide = client.post("/v1/search", json={"query": "valve", "chunks_above": 3})
        long = client.post(
            "/v1/query",
            json={"question": "why?", "history": [{"role": "user", "content": "hi"}] * 4},
        )

        assert [r.status_code for r in (too_many, wide, long)] == [400, 400, 400]
        assert too_many.json()["error"] == {
            "code": "limit_exceeded",
            "message": "top_k 21 is over this deployment's cap of 20 (RAGSAGE_MAX_TOP_K)",
        }
        assert "RAGSAGE_MAX_NEIGHBOURS" in wide.json()["error"]["message"]
        assert "a history of 4 turns" in long.json()["error"]["message"]
        assert client.post("/v1/search", json={"query": "valve", "top_k": 20}).status_code == 200


def test_a_key_produces_no_more_answers_at_once_than_its_cap(
    deployment: Deployment,
) -> None:
    counted = AnswersAtOnce(replace(deployment.settings, answers_per_key=2))
    key = f"key-{uuid.uuid4().hex[:8]}"
    try:
        first, second = counted.take(key), counted.take(key)
        with pytest.raises(ApiError) as refused:
            counted.take(key)
        assert refused.value.status == 429
        assert "already producing 2 answers at once" in refused.value.message
        counted.give_back(first)
        third = counted.take(key)  # one ended: room for one more
        counted.give_back(second)
        counted.give_back(third)
    finally:
        counted.close()

    namespace = f"answers-{uuid.uuid4().hex[:8]}"
    with _served(deployment, answers_per_key=1) as api:
        client = api.client(make_key(deployment.settings, namespace))
        for _ in range(3):  # each answer gives its place back when it ends, streamed or not
            streamed = client.post("/v1/query", json={"question": "Pump?", "stream": True})
            assert streamed.status_code == 200 and "event: done" in streamed.text
            assert client.post("/v1/query", json={"question": "Valve?"}).status_code == 200


def test_a_namespaces_searches_run_under_its_own_statement_timeout(
    deployment: Deployment,
) -> None:
    slow, other = f"timed-{uuid.uuid4().hex[:8]}", f"untimed-{uuid.uuid4().hex[:8]}"

    async def override() -> None:
        database = build_database(deployment.settings)
        try:
            async with database.owner_connection() as owner:
                variable = database.config.isolation_variable
                await set_overrides(owner, variable, Scope(slow), {"search_timeout_ms": 1234})
        finally:
            await database.dispose()

    asyncio.run(override())
    with _served(deployment, search_timeout_ms=0) as api:
        for namespace in (slow, other):
            client = api.client(make_key(deployment.settings, namespace))
            assert client.post("/v1/search", json={"query": "valve"}).status_code == 200
        here = api.app.extensions[EXTENSION]
        setting = [("SELECT current_setting('statement_timeout')", {})]
        assert here.run(here.runtime.database.read(Scope(slow), setting)) == [("1234ms",)]
        assert here.run(here.runtime.database.read(Scope(other), setting)) == [("30s",)]


def test_counts_made_together_are_the_librarys_own(deployment: Deployment) -> None:
    """A search's two counts go in one pipeline; the library's own checks must see them."""
    settings = replace(
        deployment.settings,
        rate_limit_search_key="3/minute",
        rate_limit_search_namespace="5/minute",
    )
    limits = RequestLimits(settings)
    namespace, digest = f"both-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    try:
        together = [limits.check_both("query.search", digest, namespace) for _ in range(4)]
        assert together[:3] == [None] * 3
        assert together[3] is not None and together[3].limit.name == "search per key"
        # The fourth was counted for the namespace too (once); hit() one at a time agrees.
        assert limits.check_namespace("query.search", namespace) is None
        refused = limits.check_namespace("query.search", namespace)
        assert refused is not None and refused.limit.name == "search per namespace"
    finally:
        limits.close()


def test_a_revoked_key_over_its_namespaces_rate_learns_only_that_it_is_revoked(
    deployment: Deployment,
) -> None:
    """A namespace's 429 tells of its traffic: a revoked key gets the 401 first."""
    namespace = f"gone-{uuid.uuid4().hex[:8]}"
    with _served(deployment, rate_limit_search_namespace="2/minute") as api:
        key = make_key(deployment.settings, namespace)
        assert _search(api, key, 2) == [200, 200]  # this process now knows the key

        async def revoke(database: Database) -> None:
            async with database.session(Scope(namespace)) as session:
                await session.execute(text("UPDATE ragsage_api_keys SET revoked_at = now()"))

        with_database(deployment.settings, revoke)
        # Over the namespace's limit and revoked: counted beside its search, refused by
        # the count, and still answered as a revoked key.
        assert _search(api, key, 1) == [401]
