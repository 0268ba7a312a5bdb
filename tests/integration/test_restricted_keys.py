"""Restricted keys over real HTTP: issued by a delegate key or minted offline, refused when
they should be, within the bound the docs state, and never reading past their filters."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest

from ragsage.adapters.postgres.keys import create_key, revoke_key
from ragsage.adapters.sealing import Sealer
from ragsage.core.keys import NewKey, Role
from ragsage.core.scopes import Scope
from ragsage.management.restricted_keys import grant_of, mint

from .api_harness import ApiServer, ingested, serve, with_database
from .gunicorn_harness import start_gunicorn
from .worker_harness import POLL, Deployment

ACME = Scope("acme")
RECHECK = 1.0
MAX_LIFETIME = 3600
HANDBOOK = (
    b"# Handbook\n\n## Holidays\n\nEvery employee takes twenty-five days of paid holiday a "
    b"year, booked through the rota at least two weeks ahead.\n"
)
PAYROLL = (
    b"# Payroll\n\n## Holidays\n\nUnused holiday days are paid out at the daily rate when an "
    b"employee leaves, at most ten of them.\n"
)


@pytest.fixture
def server(deployment: Deployment) -> Iterator[ApiServer]:
    settings = deployment.settings.replace(
        restricted_key_recheck=RECHECK, restricted_key_max_lifetime=MAX_LIFETIME
    )
    yield from serve(replace(deployment, settings=settings))


def _key(deployment: Deployment, role: Role, principals: tuple[str, ...] = ()) -> NewKey:
    async def create(database: Any) -> NewKey:
        async with database.session(ACME) as session:
            sealer = Sealer(deployment.settings.sealing_keys)
            return await create_key(session, ACME, role, "test", principals, sealer)

    return with_database(deployment.settings, create)


def _revoke(deployment: Deployment, key_id: str) -> None:
    async def revoke(database: Any) -> None:
        async with database.session(ACME) as session:
            assert await revoke_key(session, key_id)

    with_database(deployment.settings, revoke)


def _issue(client: httpx.Client, **body: Any) -> httpx.Response:
    return client.post("/v1/restricted-keys", json={"expires_in": 600, **body})


def _refused(reply: httpx.Response, status: int, words: str) -> None:
    assert reply.status_code == status, reply.text
    assert reply.headers["content-type"].startswith("application/json")
    error = reply.json()["error"]
    assert error["code"] == ("unauthorized" if status == 401 else "forbidden")
    assert words in error["message"], error["message"]
    if status == 401:
        assert reply.headers["WWW-Authenticate"].startswith("Bearer")


def _until_refused(client: httpx.Client, bound: float) -> float:
    """Seconds until ``client``'s key is refused, failing past ``bound``."""
    started = time.monotonic()
    while time.monotonic() - started < bound + 2:
        if client.get("/v1/key").status_code == 401:
            return time.monotonic() - started
        time.sleep(0.05)
    raise AssertionError(f"still accepted {bound + 2:.1f} s later")


@pytest.fixture
def delegate(deployment: Deployment, server: ApiServer) -> NewKey:
    return _key(deployment, Role.DELEGATE)


@pytest.fixture
def admin(deployment: Deployment, server: ApiServer) -> httpx.Client:
    """An admin's client, with a worker running and the open handbook ingested."""
    client = server.client(_key(deployment, Role.ADMIN).key)
    deployment.worker().start(pool="solo")
    ingested(client, "handbook.md", HANDBOOK)
    return client


def test_an_issued_key_reads_as_its_principals_and_says_what_it_is(
    deployment: Deployment, server: ApiServer, delegate: NewKey, admin: httpx.Client
) -> None:
    payroll = admin.post(
        "/v1/documents",
        files={"file": ("payroll.md", PAYROLL, "text/markdown")},
        data={"access": json.dumps(["group:finance"])},
    )
    assert payroll.status_code == 202
    issuer = server.client(delegate.key)
    issued = _issue(issuer, principals=["user:ana"], subject="user:ana")
    assert issued.status_code == 201, issued.text
    body = issued.json()
    assert body["parent"] == delegate.id and body["role"] == "read"
    assert body["principals"] == ["user:ana"] and issued.headers["Cache-Control"] == "no-store"
    ana = server.client(body["key"])
    me = ana.get("/v1/key").json()
    assert me["key_id"] == delegate.id and me["role"] == "read"
    assert me["principals"] == ["user:ana"] and me["restricted"]["subject"] == "user:ana"
    assert datetime.fromisoformat(me["restricted"]["expires_at"]) > datetime.now(UTC)
    # It reads the open handbook, not the finance payroll, and may not write.
    while admin.get(f"/v1/jobs/{payroll.json()['job_id']}").json()["state"] != "succeeded":
        time.sleep(POLL)
    found = ana.post("/v1/search", json={"query": "holiday days", "top_k": 10}).json()
    assert {r["chunk"]["source"] for r in found["results"]} == {"handbook.md"}
    assert ana.get("/v1/sources").json()["sources"] == ["handbook.md"]
    _refused(ana.delete(f"/v1/documents/{payroll.json()['document_id']}"), 403, "write role")
    finance = server.client(_issue(issuer, principals=["group:finance"]).json()["key"])
    sources = finance.get("/v1/sources").json()["sources"]
    assert sources == ["handbook.md", "payroll.md"]
    # A restricted key issues nothing, and neither does any key but a delegate.
    _refused(_issue(ana, principals=["user:ana"]), 403, "only a delegate key")
    _refused(_issue(admin, principals=["user:ana"]), 403, "only a delegate key")


def test_a_key_minted_offline_works_and_every_bad_one_is_refused(
    deployment: Deployment, server: ApiServer, delegate: NewKey
) -> None:
    def offline(secret: str = delegate.signing_secret, **claims: Any) -> httpx.Client:
        payload = {"ns": "acme", "exp": int(time.time()) + 600, "principals": ["user:bo"]}
        token = jwt.encode(
            {**payload, **claims}, secret, algorithm="HS256", headers={"kid": delegate.id}
        )
        return server.client(token)

    assert offline().get("/v1/key").json()["principals"] == ["user:bo"]
    grant = grant_of(["user:bo"], 600, subject="user:bo")
    assert server.client(mint(delegate.id, "acme", delegate.signing_secret, grant)).get(
        "/v1/key"
    ).json()["restricted"]["subject"] == ("user:bo")

    _refused(offline(exp=int(time.time()) - 1).get("/v1/key"), 401, "expired at")
    _refused(offline(secret="rss_" + "x" * 43).get("/v1/key"), 401, "signature does not match")
    _refused(offline(ns="globex").get("/v1/key"), 401, "not a live delegate key")
    _refused(offline(filter={"sources": ["a.md"]}).get("/v1/key"), 401, "claims are not valid")
    _refused(offline(principals=[]).get("/v1/key"), 401, "claims are not valid")
    _refused(offline(exp=None).get("/v1/key"), 401, "not a well-formed token")
    lifetime = offline(exp=int(time.time()) + MAX_LIFETIME + 600)
    _refused(lifetime.get("/v1/key"), 403, f"at most {MAX_LIFETIME} seconds")
    # Changing one claim of a valid token, its signature kept, is caught.
    header, claims, signature = str(offline().headers["Authorization"])[7:].split(".")
    wider = json.loads(base64.urlsafe_b64decode(claims + "=="))
    wider["principals"] = ["group:finance"]
    forged = base64.urlsafe_b64encode(json.dumps(wider).encode()).rstrip(b"=").decode()
    _refused(server.client(f"{header}.{forged}.{signature}").get("/v1/key"), 401, "signature")
    # A valid key's claims under another signature are refused, though the valid key
    # was just accepted (what this process remembers is the whole token).
    valid = offline()
    assert valid.get("/v1/key").status_code == 200
    signed_part = str(valid.headers["Authorization"])[7:].rpartition(".")[0]
    other = jwt.encode({"x": 1}, "rss_" + "y" * 43, algorithm="HS256").rpartition(".")[2]
    _refused(server.client(f"{signed_part}.{other}").get("/v1/key"), 401, "signature")
    # A key id of a key that is not a delegate signs nothing.
    reader = _key(deployment, Role.READ)
    token = jwt.encode(
        {"ns": "acme", "exp": int(time.time()) + 60, "principals": ["user:bo"]},
        delegate.signing_secret,
        algorithm="HS256",
        headers={"kid": reader.id},
    )
    _refused(server.client(token).get("/v1/key"), 401, "not a live delegate key")
    # Nor is a token of some other shape taken for one.
    _refused(server.client("eyJ.e30.x").get("/v1/key"), 401, "not a well-formed token")


def test_a_key_never_grants_more_than_its_parent(deployment: Deployment, server: ApiServer) -> None:
    bound = _key(deployment, Role.DELEGATE, ("group:sales", "user:cy"))
    issuer = server.client(bound.key)
    assert _issue(issuer, principals=["user:cy"]).status_code == 201
    _refused(_issue(issuer, principals=["user:cy", "group:hr"]), 403, "group:hr is not among")
    _refused(_issue(issuer, principals=["user:cy"], expires_in=MAX_LIFETIME + 600), 403, "at most")
    refused = _issue(issuer, principals=["user:cy"], role="admin")
    assert refused.status_code == 422, refused.text
    filtered = _issue(issuer, principals=["user:cy"], role="write", filters={"sources": ["a"]})
    assert filtered.status_code == 400 and "read-only" in filtered.json()["error"]["message"]
    grant = grant_of(["group:hr"], 600)
    minted = server.client(mint(bound.id, "acme", bound.signing_secret, grant))
    _refused(minted.get("/v1/key"), 403, "group:hr is not among")


def test_revoking_or_rotating_the_parent_refuses_its_keys_within_the_recheck(
    deployment: Deployment, server: ApiServer, delegate: NewKey
) -> None:
    issuer = server.client(delegate.key)
    first = server.client(_issue(issuer, principals=["user:di"]).json()["key"])
    assert first.get("/v1/key").status_code == 200
    rotated = issuer.post("/v1/key/signing-secret")
    assert rotated.status_code == 200 and rotated.headers["Cache-Control"] == "no-store"
    secret = rotated.json()["signing_secret"]
    assert secret.startswith("rss_") and secret != delegate.signing_secret
    # The new secret works at once, though this process read the parent moments ago.
    grant = grant_of(["user:di"], 600)
    second = server.client(mint(delegate.id, "acme", secret, grant))
    assert second.get("/v1/key").status_code == 200
    assert _until_refused(first, RECHECK) <= RECHECK + 0.5
    issued = server.client(_issue(issuer, principals=["user:di"]).json()["key"])
    assert issued.get("/v1/key").status_code == 200
    _revoke(deployment, delegate.id)
    for client in (second, issued):
        assert _until_refused(client, RECHECK) <= RECHECK + 0.5
    _refused(client.get("/v1/key"), 401, "not a live delegate key")


def test_filters_bind_every_read_of_the_key(
    deployment: Deployment, server: ApiServer, delegate: NewKey, admin: httpx.Client
) -> None:
    ingested(admin, "payroll.md", PAYROLL)
    payroll = admin.post("/v1/search", json={"query": "paid out daily rate"}).json()["results"]
    payroll_chunk = payroll[0]["chunk"]["id"]
    issued = _issue(
        server.client(delegate.key), principals=["user:ed"], filters={"sources": ["handbook.md"]}
    )
    assert issued.json()["filters"] == {"sources": ["handbook.md"]}
    ed = server.client(issued.json()["key"])
    asked = {"query": "holiday days paid", "top_k": 10, "filters": {"sources": ["payroll.md"]}}
    assert ed.post("/v1/search", json=asked).json()["results"] == []
    found = ed.post("/v1/search", json={"query": "holiday days paid", "top_k": 10}).json()
    assert {r["chunk"]["source"] for r in found["results"]} == {"handbook.md"}
    answer = ed.post("/v1/query", json={"question": "How are unused holiday days paid?"}).json()
    assert {c["source"] for c in answer["citations"]} <= {"handbook.md"}
    assert ed.get("/v1/sources").json()["sources"] == ["handbook.md"]
    assert ed.get(f"/v1/chunks/{payroll_chunk}").status_code == 404
    assert ed.get("/v1/key").json()["restricted"]["filters"] == {"sources": ["handbook.md"]}
    for path in ("/v1/documents", "/v1/jobs"):
        _refused(ed.get(path), 403, "may only search, answer")


def test_a_restricted_key_is_counted_as_a_key_of_its_own(
    deployment: Deployment, tmp_path: Path
) -> None:
    limited = deployment.settings.replace(rate_limit_other_key="3/minute")
    env = {**deployment.env, **limited.to_env()}
    served = start_gunicorn(env, tmp_path / "gunicorn.log", workers=1, threads=2)
    try:
        delegate = _key(deployment, Role.DELEGATE)
        with httpx.Client(base_url=served.url) as client:
            issuing = {"Authorization": f"Bearer {delegate.key}"}
            body = {"principals": ["user:fay"], "expires_in": 60}
            tokens = [
                client.post("/v1/restricted-keys", json=body, headers=issuing).json()["key"]
                for _ in range(2)
            ]
            statuses = [
                [
                    client.get("/v1/key", headers={"Authorization": f"Bearer {token}"}).status_code
                    for _ in range(4)
                ]
                for token in tokens
            ]
        # Each key has its own three a minute, the delegate's own spent on issuing.
        assert statuses == [[200, 200, 200, 429], [200, 200, 200, 429]]
        log = served.logs()
        assert f"{delegate.id}/restricted/" in log
        assert all(token not in log for token in tokens) and delegate.key not in log
    finally:
        served.stop()


def test_the_app_role_may_write_a_signing_secret_but_never_read_one(
    deployment: Deployment,
) -> None:
    from sqlalchemy import text
    from sqlalchemy.exc import ProgrammingError

    made = _key(deployment, Role.DELEGATE)

    async def read(database: Any) -> list[str]:
        async with database.session(ACME) as session:
            listed = list(await session.scalars(text("SELECT id FROM ragsage_api_keys")))
        with pytest.raises(ProgrammingError, match="permission denied"):
            async with database.session(ACME) as session:
                await session.execute(text("SELECT signing_secret FROM ragsage_api_keys"))
        with pytest.raises(ProgrammingError, match="permission denied"):
            async with database.session(ACME) as session:
                await session.execute(text("SELECT * FROM ragsage_api_keys"))
        return listed

    assert made.id in with_database(deployment.settings, read)
