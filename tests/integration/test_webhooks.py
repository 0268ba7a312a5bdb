"""Webhook events and their delivery on real Postgres, with a real receiver process.

The outbox is written by triggers in the transaction of each change, so these
tests make the changes with the job store itself (no worker needed) and run
the dispatcher in this process against the receiver on loopback.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any

import pytest
from sqlalchemy import text
from standardwebhooks.webhooks import Webhook as StandardWebhook
from standardwebhooks.webhooks import WebhookVerificationError

from ragsage.adapters.postgres import Database
from ragsage.adapters.postgres import webhooks as store
from ragsage.adapters.postgres.jobs import documents, reindex
from ragsage.adapters.postgres.jobs import store as jobs
from ragsage.adapters.postgres.jobs.uploads import create_upload
from ragsage.core.errors import Conflict, InvalidRequest
from ragsage.core.jobs import Job, Upload
from ragsage.core.scopes import Scope
from ragsage.jobs.webhook_dispatcher import Dispatcher
from ragsage.runtime.management import build_management
from ragsage.settings import Settings

from .webhook_harness import Receiver
from .worker_harness import Deployment

ACME, OTHER = Scope("acme"), Scope("other")


@pytest.fixture
def settings(deployment: Deployment) -> Settings:
    return deployment.settings


async def _upload(db: Database, scope: Scope, name: str, access: list[str] | None = None) -> Job:
    async with db.session(scope) as session:
        outcome = await create_upload(
            session,
            scope,
            Upload(
                filename=name,
                data=f"# {name}\n\nThe {name} notes, kept apart from every other file.".encode(),
                media_type="text/markdown",
                access=None if access is None else tuple(access),
            ),
            max_bytes=1 << 20,
        )
        assert outcome.job_id is not None
        job = await jobs.get_job(session, outcome.job_id)
    assert job is not None
    return job


async def _succeed(db: Database, scope: Scope, job: Job) -> None:
    async with db.session(scope) as session:
        await jobs.succeed(session, job.id, timings={"parse_ms": 1.0}, result={"chunks": 1})


async def _fail(db: Database, scope: Scope, job: Job) -> None:
    async with db.session(scope) as session:
        await jobs.fail(session, job, f"{job.filename}: unreadable")


async def _events(db: Database, scope: Scope) -> list[tuple[str, str, str, str]]:
    """(endpoint url, event type, object id, delivery state) of every delivery in ``scope``."""
    async with db.session(scope) as session:
        rows = await session.execute(
            text(
                "SELECT w.url, e.type, coalesce(e.data ->> 'id', e.data -> 'generation' ->> 'id'), "
                "d.state FROM ragsage_webhook_deliveries d "
                "JOIN ragsage_webhook_events e ON e.namespace = d.namespace AND e.id = d.event_id "
                "JOIN ragsage_webhooks w ON w.namespace = d.namespace AND w.id = d.webhook_id "
                "ORDER BY e.created_at"
            )
        )
        return [(str(r[0]), str(r[1]), str(r[2]), str(r[3])) for r in rows]


@pytest.fixture
async def running() -> AsyncIterator[Callable[[Dispatcher], None]]:
    """Start dispatchers as tasks of this loop; each is stopped after the test."""
    started: list[asyncio.Task[None]] = []

    def start(dispatcher: Dispatcher) -> None:
        started.append(asyncio.create_task(dispatcher.run()))

    yield start
    for task in started:
        task.cancel()
    await asyncio.gather(*started, return_exceptions=True)


async def _until(check: Callable[[], bool], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.1)


async def test_events_commit_with_their_change_and_reach_only_who_may_see_them(
    db: Database, settings: Settings
) -> None:
    admin = build_management(db, settings).webhooks
    done = await admin.create(ACME, url="http://hooks.test/done", events=["job.succeeded"])
    hr = await admin.create(
        ACME, url="http://hooks.test/hr", events=["job.failed"], principals=["group:hr"]
    )
    await admin.create(ACME, url="http://hooks.test/paused", enabled=False)
    open_doc = await _upload(db, ACME, "open.md")
    sales_doc = await _upload(db, ACME, "sales.md", ["group:sales"])
    hr_doc = await _upload(db, ACME, "hr.md", ["group:hr"])
    open_failing = await _upload(db, ACME, "open-failing.md")
    elsewhere = await _upload(db, OTHER, "elsewhere.md")

    await _succeed(db, ACME, open_doc)
    # A change rolled back leaves no event behind.
    with pytest.raises(RuntimeError):
        async with db.session(ACME) as session:
            await jobs.succeed(session, sales_doc.id, timings={}, result={})
            raise RuntimeError("the write failed after the state changed")
    await _fail(db, ACME, sales_doc)
    await _fail(db, ACME, hr_doc)
    await _fail(db, ACME, open_failing)
    await _succeed(db, OTHER, elsewhere)

    assert await _events(db, ACME) == [
        ("http://hooks.test/done", "job.succeeded", str(open_doc.id), "pending"),
        # The endpoint bound to group:hr hears of the hr document and the open one only.
        ("http://hooks.test/hr", "job.failed", str(hr_doc.id), "pending"),
        ("http://hooks.test/hr", "job.failed", str(open_failing.id), "pending"),
    ]
    # A namespace with no endpoint writes no event at all.
    async with db.session(OTHER) as session:
        assert await session.scalar(text("SELECT count(*) FROM ragsage_webhook_events")) == 0
    listed = {hook.id: hook for hook in await admin.list_all(ACME)}
    assert listed[hr.webhook.id].principals == ("group:hr",)
    assert listed[done.webhook.id].events == ("job.succeeded",)


async def test_cancelled_superseded_deleted_and_reindex_events(
    db: Database, settings: Settings
) -> None:
    admin = build_management(db, settings).webhooks
    await admin.create(ACME, url="http://hooks.test/all")
    cancelled = await _upload(db, ACME, "cancelled.md")
    kept = await _upload(db, ACME, "kept.md")
    async with db.session(ACME) as session:
        assert await documents.cancel_job(session, cancelled.id)
        await jobs.supersede(session, kept, 7)
    await _succeed(db, ACME, kept)
    async with db.session(ACME) as session:
        document = await documents.get_document(session, kept.document_id)
        assert document is not None
        assert await documents.delete_document(session, kept.document_id)
        # Two generations: the active one, and one building that a gate refuses.
        await session.execute(
            text(
                "INSERT INTO ragsage_generations (namespace, id, embedding_model, embedding_dim, "
                "state, embedder) VALUES ('acme', 1, 'm1', 16, 'active', 'hashing'), "
                "('acme', 2, 'm2', 64, 'building', 'hashing')"
            )
        )
    async with db.session(ACME) as session:
        await reindex.record_gate(session, 2, {"passed": False, "forced": False})
    async with db.session(ACME) as session:
        await reindex.activate_held(session, ACME, 2)

    async with db.session(ACME) as session:
        rows = (
            await session.execute(
                text("SELECT type, data FROM ragsage_webhook_events ORDER BY created_at")
            )
        ).all()
    types = [row[0] for row in rows]
    assert types == [
        "job.cancelled",
        "job.superseded",
        "job.succeeded",
        "document.deleted",
        "reindex.failed",
        "reindex.switched",
    ]
    by_type = {row[0]: row[1] for row in rows}
    assert by_type["job.superseded"]["result"]["superseded_by"] == 7
    # The deleted document is described as the API described it.
    deleted = by_type["document.deleted"]
    assert deleted.keys() == document.to_dict().keys()
    assert deleted["id"] == document.id and deleted["filename"] == "kept.md"
    assert by_type["reindex.failed"]["reason"] == "gate"
    assert by_type["reindex.switched"]["generation"]["state"] == "active"
    assert by_type["reindex.switched"]["generation"]["embedding_model"] == "m2"


async def test_deliveries_are_signed_with_both_secrets_while_a_rotation_settles(
    db: Database, settings: Settings, receiver: Receiver, running: Callable[[Dispatcher], None]
) -> None:
    admin = build_management(db, settings).webhooks
    made = await admin.create(ACME, url=f"{receiver.url}/rotating")
    running(Dispatcher(db, settings))
    await _succeed(db, ACME, await _upload(db, ACME, "before.md"))
    await _until(lambda: len(receiver.delivered("/rotating")) == 1)
    rotated = await admin.rotate(ACME, uuid.UUID(made.webhook.id))
    assert rotated is not None and rotated.secret != made.secret
    assert rotated.previous_secret_until is not None
    await _succeed(db, ACME, await _upload(db, ACME, "during.md"))
    await _until(lambda: len(receiver.delivered("/rotating")) == 2)
    first, second = receiver.delivered("/rotating")
    assert len(first["headers"]["webhook-signature"].split(" ")) == 1
    assert len(second["headers"]["webhook-signature"].split(" ")) == 2
    # A receiver holding either secret accepts the delivery; a third secret does not.
    for secret in (made.secret, rotated.secret):
        StandardWebhook(secret).verify(second["body"], second["headers"])
    stranger = await admin.create(OTHER, url=f"{receiver.url}/never")
    with pytest.raises(WebhookVerificationError):
        StandardWebhook(stranger.secret).verify(second["body"], second["headers"])
    with pytest.raises(WebhookVerificationError):
        StandardWebhook(rotated.secret).verify(first["body"], first["headers"])


async def test_an_endpoint_that_keeps_failing_is_disabled_then_replayed_once_fixed(
    db: Database, settings: Settings, receiver: Receiver, running: Callable[[Dispatcher], None]
) -> None:
    quick = replace(
        settings, webhook_retry_base=0.1, webhook_retry_cap=0.2, webhook_retry_window=1.5
    )
    admin = build_management(db, quick).webhooks
    made = await admin.create(ACME, url=f"{receiver.url}/flaky")
    hook = uuid.UUID(made.webhook.id)
    receiver.mode("/flaky", "fail")
    running(Dispatcher(db, quick))
    first = await _upload(db, ACME, "first.md")
    await _succeed(db, ACME, first)

    async def disabled() -> bool:
        found = await admin.get(ACME, hook)
        return found is not None and not found.enabled

    deadline = time.monotonic() + 30
    while not await disabled():
        assert time.monotonic() < deadline, "the failing endpoint was never disabled"
        await asyncio.sleep(0.1)
    found = await admin.get(ACME, hook)
    assert found is not None and found.disabled_reason is not None
    assert "HTTP 500" in found.disabled_reason
    tries = len(receiver.records("/flaky"))
    assert tries >= 3  # retried with backoff before giving up
    # Events while it is disabled are kept, undelivered, for a replay.
    second = await _upload(db, ACME, "second.md")
    await _succeed(db, ACME, second)
    listed = await admin.deliveries(ACME, hook)
    assert listed is not None and [d.state for d in listed] == ["failed", "failed"]
    assert listed[1].last_status == 500 and listed[1].attempts == tries
    await asyncio.sleep(0.5)
    assert len(receiver.records("/flaky")) == tries  # nothing is sent to a disabled endpoint

    receiver.mode("/flaky", "ok")
    enabled = await admin.update(ACME, hook, enabled=True)
    assert enabled is not None and enabled.disabled_reason is None
    assert await admin.replay(ACME, hook) == 2
    await _until(lambda: len(receiver.delivered("/flaky")) == 2)
    got = {r["event"]["data"]["id"] for r in receiver.delivered("/flaky")}
    assert got == {str(first.id), str(second.id)}
    # The receiver has both before the dispatcher records the second as delivered.
    deadline = time.monotonic() + 30
    while len(await admin.deliveries(ACME, hook, state="delivered") or []) < 2:
        assert time.monotonic() < deadline, "the replayed deliveries were never recorded"
        await asyncio.sleep(0.1)
    assert len(await admin.deliveries(ACME, hook, state="delivered") or []) == 2


async def test_a_hanging_endpoint_does_not_hold_back_another_namespace(
    db: Database, settings: Settings, receiver: Receiver, running: Callable[[Dispatcher], None]
) -> None:
    slow = replace(settings, webhook_timeout=3.0, webhook_concurrency=8)
    admin = build_management(db, slow).webhooks
    await admin.create(ACME, url=f"{receiver.url}/stuck")
    await admin.create(OTHER, url=f"{receiver.url}/fine")
    receiver.mode("/stuck", "hang")
    running(Dispatcher(db, slow))
    for number in range(12):
        await _succeed(db, ACME, await _upload(db, ACME, f"stuck-{number}.md"))
    await asyncio.sleep(0.3)  # the hanging endpoint's deliveries are in flight
    started = time.monotonic()
    for number in range(5):
        await _succeed(db, OTHER, await _upload(db, OTHER, f"fine-{number}.md"))
    await _until(lambda: len(receiver.delivered("/fine")) == 5, timeout=20)
    # Every one of them went out while the stuck endpoint still held its slots.
    assert time.monotonic() - started < slow.webhook_timeout
    async with db.session(ACME) as session:
        waiting = await session.scalar(
            text("SELECT count(*) FROM ragsage_webhook_deliveries WHERE state = 'pending'")
        )
    assert waiting == 12


async def test_admin_checks_what_it_stores(db: Database, settings: Settings) -> None:
    strict = replace(settings, webhook_allow_private=False, webhook_max_endpoints=2)
    admin = build_management(db, strict).webhooks
    for url, problem in (
        ("ftp://hooks.test/", "http or https"),
        ("https://user:pw@hooks.test/", "user name or password"),
        ("https://hooks.test/#frag", "fragment"),
        ("http://127.0.0.1:9000/", "loopback"),
        ("http://[::ffff:10.0.0.1]/", "private"),
        ("http://169.254.169.254/latest/meta-data", "metadata"),
    ):
        with pytest.raises(InvalidRequest, match=problem):
            await admin.create(ACME, url=url)
    with pytest.raises(InvalidRequest, match="unknown webhook event type 'job.started'"):
        await admin.create(ACME, url="https://hooks.test/", events=["job.started"])
    with pytest.raises(InvalidRequest, match="principal"):
        await admin.create(ACME, url="https://hooks.test/", principals=["bad,name"])
    await admin.create(ACME, url="https://hooks.test/1")
    await admin.create(ACME, url="https://hooks.test/2")
    with pytest.raises(Conflict, match="already has 2 webhooks"):
        await admin.create(ACME, url="https://hooks.test/3")
    # The sealed secret is written but never readable by the app role.
    async with db.session(ACME) as session:
        with pytest.raises(Exception, match="permission denied"):
            await session.execute(text("SELECT sealed_secret FROM ragsage_webhooks"))


async def test_old_events_are_purged_once_delivered_and_past_retention(
    db: Database, settings: Settings, receiver: Receiver, running: Callable[[Dispatcher], None]
) -> None:
    admin = build_management(db, settings).webhooks
    await admin.create(ACME, url=f"{receiver.url}/kept")
    running(Dispatcher(db, settings))
    await _succeed(db, ACME, await _upload(db, ACME, "old.md"))
    await _until(lambda: len(receiver.delivered("/kept")) == 1)
    async with db.system_session() as system:
        assert await store.purge_events(system, 3600.0, 86400.0) == 0
    await asyncio.sleep(0.2)
    async with db.system_session() as system:
        assert await store.purge_events(system, 0.1, 86400.0) == 1
    async with db.session(ACME) as session:
        assert await session.scalar(text("SELECT count(*) FROM ragsage_webhook_events")) == 0
    body = receiver.delivered("/kept")[0]["event"]
    assert json.dumps(body)  # what was delivered stays with the receiver


async def _claim(db: Database, wanted: int, **busy: Any) -> list[store.Claimed]:
    async with db.system_session() as system:
        return await store.claim_deliveries(
            system,
            wanted,
            per_endpoint=busy.get("per_endpoint", 4),
            per_namespace=busy.get("per_namespace", 8),
            busy_hooks=busy.get("hooks", {}),
            busy_namespaces=busy.get("namespaces", {}),
            lease=60.0,
        )


async def test_a_claim_bounds_each_endpoint_and_each_namespace_and_takes_turns(
    db: Database, settings: Settings
) -> None:
    admin = build_management(db, settings).webhooks
    hooks = [await admin.create(ACME, url=f"http://hooks.test/{n}") for n in range(3)]
    other = await admin.create(OTHER, url="http://hooks.test/other")
    for number in range(6):
        await _succeed(db, ACME, await _upload(db, ACME, f"acme-{number}.md"))
    await _succeed(db, OTHER, await _upload(db, OTHER, "other.md"))
    first = uuid.UUID(hooks[0].webhook.id)
    # An endpoint with three sends in flight gets one more, never four more.
    one = await _claim(db, 100, hooks={first: 3}, per_namespace=100, namespaces={"acme": 3})
    assert sum(1 for c in one if c.webhook_id == first) == 1
    # A namespace with six in flight gets two more of its eight; the other namespace's
    # first delivery comes before any namespace's second.
    for claimed in one:
        await _record(db, claimed, "retry", 0.0)
    taken = await _claim(db, 2, namespaces={"acme": 6})
    assert sorted(c.namespace for c in taken) == ["acme", "other"]  # older acme rows wait
    assert {c.webhook_id for c in taken if c.namespace == "other"} == {uuid.UUID(other.webhook.id)}
    for claimed in taken:
        await _record(db, claimed, "retry", 0.0)
    capped = await _claim(db, 100, namespaces={"acme": 6})
    assert sorted(c.namespace for c in capped) == ["acme", "acme", "other"]
    for claimed in capped:
        await _record(db, claimed, "retry", 0.0)
    # A namespace at its share gets nothing more; another one still does.
    assert [c.namespace for c in await _claim(db, 100, namespaces={"acme": 8})] == ["other"]


async def _record(db: Database, claimed: store.Claimed, outcome: str, retry_in: float) -> str:
    async with db.system_session() as system:
        return await store.record_delivery(
            system,
            claimed,
            outcome=outcome,
            status=None,
            latency_ms=1.0,
            error="HTTP 503",
            retry_in=retry_in,
        )


async def test_narrowing_an_endpoint_stops_what_it_may_no_longer_see(
    db: Database, settings: Settings
) -> None:
    admin = build_management(db, settings).webhooks
    made = await admin.create(ACME, url="http://hooks.test/narrowed")
    hook = uuid.UUID(made.webhook.id)
    await _succeed(db, ACME, await _upload(db, ACME, "open.md"))
    await _succeed(db, ACME, await _upload(db, ACME, "hr.md", ["group:hr"]))
    await _succeed(db, ACME, await _upload(db, ACME, "sales.md", ["group:sales"]))
    narrowed = await admin.update(ACME, hook, principals=["group:sales"])
    assert narrowed is not None and narrowed.principals == ("group:sales",)
    listed = await admin.deliveries(ACME, hook)
    assert listed is not None
    states = sorted(d.state for d in listed)
    assert states == ["failed", "pending", "pending"]
    sent = {c.data["filename"] for c in await _claim(db, 100)}
    assert sent == {"open.md", "sales.md"}
    # A replay sends again only what the endpoint may see now.
    for claimed in await _claim(db, 100):
        await _record(db, claimed, "failed", 0.0)
    assert await admin.replay(ACME, hook) == 0


async def test_a_worker_that_cannot_sign_hands_deliveries_back_uncounted(
    db: Database, settings: Settings, receiver: Receiver, running: Callable[[Dispatcher], None]
) -> None:
    admin = build_management(db, settings).webhooks
    made = await admin.create(ACME, url=f"{receiver.url}/unsigned")
    hook = uuid.UUID(made.webhook.id)
    await _succeed(db, ACME, await _upload(db, ACME, "unsigned.md"))
    # A worker without the operator's keys claims nothing at all.
    keyless = Dispatcher(db, replace(settings, sealing_keys=""))
    await asyncio.wait_for(keyless.run(), timeout=5)
    assert keyless.outcomes == {}
    # A worker whose keys cannot open the secret hands the delivery back, uncounted.
    from ragsage.adapters.sealing import new_operator_key

    stranger = Dispatcher(db, replace(settings, sealing_keys=new_operator_key()))
    running(stranger)
    await _until(lambda: stranger.outcomes["unsent"] >= 1)
    listed = await admin.deliveries(ACME, hook)
    assert listed is not None and [(d.state, d.attempts) for d in listed] == [("pending", 0)]
    found = await admin.get(ACME, hook)
    assert found is not None and found.enabled and found.failing_since is None
    assert receiver.records("/unsigned") == []


async def test_deleting_an_endpoint_takes_the_events_only_it_needed(
    db: Database, settings: Settings
) -> None:
    admin = build_management(db, settings).webhooks
    gone = await admin.create(ACME, url="http://hooks.test/gone")
    kept = await admin.create(ACME, url="http://hooks.test/kept", events=["job.failed"])
    await _succeed(db, ACME, await _upload(db, ACME, "only-gone.md"))
    failed = await _upload(db, ACME, "shared.md")
    await _fail(db, ACME, failed)
    assert await admin.delete(ACME, uuid.UUID(gone.webhook.id))
    assert await _events(db, ACME) == [
        ("http://hooks.test/kept", "job.failed", str(failed.id), "pending")
    ]
    async with db.session(ACME) as session:
        types = await session.scalars(text("SELECT type FROM ragsage_webhook_events"))
        assert list(types) == ["job.failed"]
    assert kept.webhook.url == "http://hooks.test/kept"


async def test_a_dispatcher_stops_when_cancelled_just_as_it_is_woken(
    db: Database, settings: Settings
) -> None:
    # A worker shutting down cancels its dispatcher; an event committing at that
    # moment sets the wake-up it waits on.  Each number of loop turns between the
    # two puts the cancellation at another step of the wake-up.
    for turns in range(5):
        dispatcher = Dispatcher(db, settings)
        task = asyncio.create_task(dispatcher.run())
        await asyncio.sleep(0.3)  # past its first round, waiting to be woken
        dispatcher._wake.set()
        for _ in range(turns):
            await asyncio.sleep(0)
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=10)
        assert done, f"the dispatcher ran on after its cancellation ({turns} turns)"
        assert dispatcher.finished.is_set()
