"""Reads answered by a real streaming replica, and the primary answering when it cannot."""

from __future__ import annotations

import asyncio
import dataclasses
import random
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from ragsage import RAG
from ragsage.adapters.embedded.postgres import EmbeddedPostgres
from ragsage.adapters.postgres import Database, PgLexicalStore, PgVectorStore
from ragsage.adapters.postgres.config import PostgresConfig
from ragsage.adapters.postgres.jobs.documents import (
    delete_document,
    get_document,
    list_documents,
    set_access,
)
from ragsage.adapters.postgres.keys import revoke_key
from ragsage.adapters.postgres.replicas import replica_reads
from ragsage.adapters.postgres.sessions import ScopedReads
from ragsage.core.scopes import Scope
from ragsage.settings import Settings

from .api_harness import ApiServer, ingested, make_key, serve, with_database
from .conftest import TEST_DIM, PostgresServer, as_user
from .test_search_completeness import DIM, MODEL, load, nearest, unit
from .worker_harness import POLL, Deployment

ACME, GLOBEX = Scope("acme"), Scope("globex")


@pytest.fixture
def standby(postgres_server: PostgresServer) -> Iterator[EmbeddedPostgres]:
    """A streaming replica of the test server, made for this test alone."""
    if postgres_server.embedded is None:
        pytest.fail(
            "the replica tests make a standby of the embedded Postgres; unset "
            "RAGSAGE_DATABASE_URL to run them"
        )
    root = Path(tempfile.mkdtemp(prefix="ragsage-test-standby-"))
    root.chmod(0o755)  # the server's own user makes its folder inside
    replica = postgres_server.embedded.standby(root / "data")
    try:
        yield replica
    finally:
        replica.stop()
        shutil.rmtree(root, ignore_errors=True)


def on_replica(standby: EmbeddedPostgres, database_url: str) -> str:
    """The app role's URL for the test's database on ``standby``."""
    name = urlsplit(database_url).path.lstrip("/")
    url = standby.url(name, user="ragsage_app")
    return urlunsplit(urlsplit(url)._replace(scheme="postgresql"))


def wait_for_replay(database_url: str, replica_url: str, seconds: float = 30) -> None:
    """Until the replica has replayed everything the primary has written so far."""
    with psycopg.connect(database_url, autocommit=True) as primary:
        written = primary.execute("SELECT pg_current_wal_lsn()").fetchone()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with psycopg.connect(replica_url, autocommit=True) as replica:
                done = replica.execute(
                    "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", written
                ).fetchone()
            if done and done[0]:
                return
        except psycopg.OperationalError:
            pass  # the database is not there yet
        time.sleep(0.1)
    raise AssertionError("the replica did not catch up")


@pytest.fixture
async def replicated(
    db: Database, pg_config: PostgresConfig, standby: EmbeddedPostgres, database_url: str
) -> AsyncIterator[tuple[Database, str]]:
    """A database whose searches may go to ``standby``, and the replica's URL."""
    replica_url = on_replica(standby, database_url)
    wait_for_replay(database_url, as_user(replica_url, "postgres"))
    database = Database(dataclasses.replace(pg_config, replica_dsns=(replica_url,)))
    yield database, replica_url
    await database.dispose()


async def test_a_search_served_by_the_replica_finds_what_the_primary_finds(
    db: Database, replicated: tuple[Database, str], database_url: str
) -> None:
    database, replica_url = replicated
    rng = random.Random(41)
    vectors = await load(db, ACME, 300, rng)
    await load(db, GLOBEX, 100, rng)
    wait_for_replay(database_url, as_user(replica_url, "postgres"))
    dense = PgVectorStore(database, embedding_model=MODEL, embedding_dim=DIM)
    keyword = PgLexicalStore(database, text_search_config="english")
    for _ in range(3):
        query = unit(rng)
        on_primary = [c.chunk.id for c in await dense.search(ACME, query, k=10)]
        with replica_reads() as log:
            found = [c.chunk.id for c in await dense.search(ACME, query, k=10)]
            words = [c.chunk.id for c in await keyword.search(ACME, "row 17", k=5)]
        assert log.servers == ["replica-1"]  # proven: every read answered there
        assert found == on_primary == nearest(vectors, query, 10)
        assert words and all(w.startswith("acme-") for w in words)
        # The other tenant's search on the replica sees only its own rows.
        with replica_reads() as log:
            theirs = await dense.search(GLOBEX, query, k=500)
        assert log.servers == ["replica-1"]
        assert len(theirs) == 100 and all(c.chunk.id.startswith("globex-") for c in theirs)
    # Document reads there too, as isolated: another tenant's id reads as absent.
    with replica_reads() as log:
        mine = await get_document(ScopedReads(database, ACME), "acme-0")
        theirs_by_id = await get_document(ScopedReads(database, GLOBEX), "acme-0")
        listed = await list_documents(ScopedReads(database, GLOBEX), limit=50)
    assert log.servers == ["replica-1"]
    assert mine is not None and mine.id == "acme-0" and theirs_by_id is None
    assert [d.id for d in listed] == ["globex-0"]
    # A key bound to a group reads there only what its group may read.
    async with database.session(ACME) as session:
        assert await set_access(session, "acme-0", ["group:hr"])
    sales = Scope("acme", frozenset({"group:sales"}))
    with replica_reads() as log:
        readable = await dense.search(sales, unit(rng), k=500)
        worded = await keyword.search(sales, "row", k=500)
        hidden = await get_document(ScopedReads(database, sales), "acme-0")
    assert log.servers == ["replica-1"]
    assert {c.chunk.document_id for c in readable} == {"acme-100", "acme-200"}
    assert worded and {c.chunk.document_id for c in worded} <= {"acme-100", "acme-200"}
    assert hidden is None


async def test_a_stopped_replica_sends_reads_to_the_primary_and_rejoins(
    db: Database, replicated: tuple[Database, str], standby: EmbeddedPostgres, database_url: str
) -> None:
    database, replica_url = replicated
    rng = random.Random(42)
    vectors = await load(db, ACME, 200, rng)
    wait_for_replay(database_url, as_user(replica_url, "postgres"))
    dense = PgVectorStore(database, embedding_model=MODEL, embedding_dim=DIM)
    query = unit(rng)
    with replica_reads() as log:
        await dense.search(ACME, query, k=5)
    assert log.servers == ["replica-1"]

    standby.stop()
    for _ in range(3):  # every read answered, by the primary
        with replica_reads() as log:
            found = await dense.search(ACME, query, k=5)
        assert [c.chunk.id for c in found] == nearest(vectors, query, 5)
        assert log.servers[-1] == "primary"
    [state] = database.replicas.states()
    assert state["up"] is False and state["error"]

    standby.start()
    deadline = time.monotonic() + 30
    while True:
        await asyncio.sleep(database.replicas.check_every)
        with replica_reads() as log:
            found = await dense.search(ACME, query, k=5)
        assert [c.chunk.id for c in found] == nearest(vectors, query, 5)
        if log.servers == ["replica-1"]:
            break
        assert time.monotonic() < deadline, "the replica never rejoined"


@pytest.fixture
def replicated_api(
    running: Deployment, standby: EmbeddedPostgres, database_url: str
) -> Iterator[ApiServer]:
    """The API over HTTP with ``standby`` as its replica, beside a running worker."""
    replica_url = on_replica(standby, database_url)
    wait_for_replay(database_url, as_user(replica_url, "postgres"))
    settings = dataclasses.replace(running.settings, replica_database_urls=replica_url)
    yield from serve(dataclasses.replace(running, settings=settings))


MANUAL = (
    b"# Field guide\n\n## Anchors\n\nA zirconium anchor holds the buoy in a strong tide.\n\n"
    b"## Ropes\n\nBraided ropes resist abrasion better than twisted ones.\n"
)


def test_over_http_searches_come_from_the_replica_and_an_upload_reads_back_at_once(
    running: Deployment, replicated_api: ApiServer, standby: EmbeddedPostgres
) -> None:
    key = make_key(running.settings, "acme")
    client = replicated_api.client(key)
    ingested(client, "guide.md", MANUAL)
    # An upload is read back at once (documents and jobs come from the primary):
    # never a 404, and the job's state only moves forward.
    reply = client.post("/v1/documents", files={"file": ("second.md", MANUAL + b"\nMore.\n")})
    assert reply.status_code == 202, reply.text
    job_id, document_id = reply.json()["job_id"], reply.json()["document_id"]
    order = ["queued", "running", "succeeded"]
    seen = 0
    deadline = time.monotonic() + 60
    while True:
        job = client.get(f"/v1/jobs/{job_id}")
        document = client.get(f"/v1/documents/{document_id}")
        assert job.status_code == 200 and document.status_code == 200
        state = order.index(job.json()["state"])
        assert state >= seen, "a job went back in time"
        seen = state
        if job.json()["state"] == "succeeded" or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert job.json()["state"] == "succeeded"

    # The search is answered by the replica once it has replayed the ingestion.
    deadline = time.monotonic() + 30
    while True:
        found = client.post("/v1/search", json={"query": "zirconium anchor", "top_k": 3})
        assert found.status_code == 200, found.text
        if found.headers.get("X-Ragsage-Read-Server") == "replica-1" and found.json()["results"]:
            break
        assert time.monotonic() < deadline, found.headers.get("X-Ragsage-Read-Server")
        time.sleep(POLL)
    assert "zirconium anchor" in found.json()["results"][0]["chunk"]["text"]
    # The chunk a result points at, and the source list, are read there too.
    chunk = client.get(f"/v1/chunks/{found.json()['results'][0]['chunk']['id']}")
    assert chunk.status_code == 200 and chunk.headers["X-Ragsage-Read-Server"] == "replica-1"
    sources = client.get("/v1/sources")
    assert sources.headers["X-Ragsage-Read-Server"] == "replica-1"
    assert sorted(sources.json()["sources"]) == ["guide.md", "second.md"]

    # Answers, streamed or not, and the OpenAI-compatible endpoint read there too.
    answered = client.post("/v1/query", json={"question": "What holds the buoy?"})
    assert answered.status_code == 200 and "zirconium" in answered.json()["answer"]
    assert answered.headers["X-Ragsage-Read-Server"] == "replica-1"
    with client.stream(
        "POST", "/v1/query", json={"question": "What holds the buoy?", "stream": True}
    ) as streamed:
        body = "".join(streamed.iter_text())
    assert streamed.headers["X-Ragsage-Read-Server"] == "replica-1" and "zirconium" in body
    chat = {"model": "ragsage", "messages": [{"role": "user", "content": "What holds the buoy?"}]}
    for stream in (False, True):
        with client.stream("POST", "/v1/chat/completions", json={**chat, "stream": stream}) as r:
            body = "".join(r.iter_text())
        assert r.status_code == 200 and "zirconium" in body
        assert r.headers["X-Ragsage-Read-Server"] == "replica-1"

    # A revoked key is refused on its very next request (keys are checked on the primary).
    async def revoke(database: Database) -> bool:
        async with database.session(ACME) as session:
            return await revoke_key(session, key.split("_")[1])

    assert with_database(running.settings, revoke)
    assert client.post("/v1/search", json={"query": "anchor"}).status_code == 401

    # The probes show the replica in rotation ...
    ready = replicated_api.client().get("/readyz")
    assert ready.status_code == 200 and ready.json()["checks"]["replica-1"].startswith("ok")
    scraped = replicated_api.client().get("/metrics").text
    assert 'ragsage_replica_up{replica="replica-1"} 1.0' in scraped
    assert 'ragsage_read_server_requests_total{server="replica-1"}' in scraped

    # With the replica stopped, searches are answered by the primary: no 5xx.
    other = replicated_api.client(make_key(running.settings, "acme"))
    standby.stop()
    for _ in range(3):
        found = other.post("/v1/search", json={"query": "zirconium anchor", "top_k": 3})
        assert found.status_code == 200, found.text
        assert found.headers["X-Ragsage-Read-Server"].endswith("primary")
        assert found.json()["results"]
    # ... and out of it, the service still ready (degraded), reads on the primary.
    ready = replicated_api.client().get("/readyz")
    assert ready.status_code == 200 and ready.json()["status"] == "degraded"
    assert ready.json()["checks"]["replica-1"].startswith("out of rotation")
    scraped = replicated_api.client().get("/metrics").text
    assert 'ragsage_replica_up{replica="replica-1"} 0.0' in scraped


async def test_an_access_change_is_never_missed_by_a_search_on_a_replica(
    db: Database, pg_config: PostgresConfig, standby: EmbeddedPostgres, database_url: str
) -> None:
    replica_url = on_replica(standby, database_url)
    superuser_on_replica = as_user(replica_url, "postgres")
    rng = random.Random(43)
    await load(db, ACME, 300, rng)
    wait_for_replay(database_url, superuser_on_replica)
    config = dataclasses.replace(pg_config, replica_dsns=(replica_url,), replica_max_lag=1.0)
    database = Database(config)
    sales = Scope("acme", frozenset({"group:sales"}))
    dense = PgVectorStore(database, embedding_model=MODEL, embedding_dim=DIM)

    async def readable_documents() -> tuple[set[str], list[str]]:
        with replica_reads() as log:
            found = await dense.search(sales, unit(rng), k=500)
        return {c.chunk.document_id for c in found}, log.servers

    assert await readable_documents() == ({"acme-0", "acme-100", "acme-200"}, ["replica-1"])
    try:
        # The change returns once the replica has replayed it: the very next
        # search there sees the new list.
        async with database.session(ACME) as session:
            assert await set_access(session, "acme-0", ["group:hr"])
        assert await readable_documents() == ({"acme-100", "acme-200"}, ["replica-1"])
        # So does a deletion: the document is gone from the replica's next search.
        async with database.session(ACME) as session:
            assert await delete_document(session, "acme-200")
        assert await readable_documents() == ({"acme-100"}, ["replica-1"])

        # A replica that cannot replay in time (replay paused) is taken out of
        # rotation before the change returns: the next search reads the primary.
        with psycopg.connect(superuser_on_replica, autocommit=True) as replica:
            replica.execute("SELECT pg_wal_replay_pause()")
        started = time.monotonic()
        async with database.session(ACME) as session:
            assert await set_access(session, "acme-100", ["group:hr"])
        assert time.monotonic() - started < 5  # bounded: max_lag plus a check
        assert await readable_documents() == (set(), ["primary"])
        [state] = database.replicas.states()
        assert state["up"] is False
    finally:
        with psycopg.connect(superuser_on_replica, autocommit=True) as replica:
            replica.execute("SELECT pg_wal_replay_resume()")
        await database.dispose()


# Scans of ragsage's tables a server has counted (a standby counts its own).
SCANS = (
    "SELECT coalesce(sum(seq_scan), 0) + coalesce(sum(idx_scan), 0) "
    "FROM pg_stat_user_tables WHERE relname LIKE 'ragsage%'"
)


def scans(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as connection:
        row = connection.execute(SCANS).fetchone()
    return int(row[0]) if row else 0


def test_the_library_searches_on_the_replica_and_reads_what_it_just_indexed(
    pg_config: PostgresConfig, standby: EmbeddedPostgres, database_url: str
) -> None:
    replica_url = on_replica(standby, database_url)
    superuser_on_replica = as_user(replica_url, "postgres")
    settings = Settings.from_env(
        {},
        database_url=pg_config.dsn,
        app_database_url=pg_config.app_dsn,
        embedding_dim=TEST_DIM,
        replica_database_urls=replica_url,
    )
    with RAG.from_settings(settings, namespace="acme", migrate=True) as rag:
        rag.index_text(MANUAL.decode(), document_id="guide", source="guide.md")
        before = scans(superuser_on_replica)
        # No wait for replay here: the write returned once the replica had it.
        found = rag.search("zirconium anchor", top_k=3)
        assert "zirconium anchor" in found.results[0].chunk.text
        assert rag.list_sources() == ["guide.md"]
    # The facade's connections are closed, so the replica has counted their scans.
    assert scans(superuser_on_replica) > before
