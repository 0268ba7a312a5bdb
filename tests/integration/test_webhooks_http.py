"""The webhook admin routes over real HTTP, and ``ragsage webhooks`` in a real process."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

from ragsage.adapters.postgres import Database
from ragsage.adapters.postgres.jobs import store
from ragsage.core.keys import Role
from ragsage.core.scopes import Scope

from .api_harness import ApiServer, make_key, with_database
from .worker_harness import ROOT, Deployment


def test_admin_routes_create_list_change_rotate_and_delete(
    deployment: Deployment, api: ApiServer
) -> None:
    admin = api.client(make_key(deployment.settings, "acme", Role.ADMIN))
    stranger = api.client(make_key(deployment.settings, "other", Role.ADMIN))
    made = admin.post(
        "/v1/webhooks",
        json={"url": "https://hooks.test/in", "events": ["job.failed", "job.succeeded"]},
    )
    assert made.status_code == 201, made.text
    hook = made.json()
    # Stored in the order the documentation lists the types, whatever order was asked.
    assert hook["events"] == ["job.succeeded", "job.failed"] and hook["principals"] is None
    path = f"/v1/webhooks/{hook['id']}"

    changed = admin.patch(path, json={"principals": ["group:hr"], "enabled": False})
    assert changed.status_code == 200, changed.text
    assert changed.json()["principals"] == ["group:hr"] and not changed.json()["enabled"]
    unbound = admin.patch(path, json={"principals": None, "description": "ops"})
    assert unbound.json()["principals"] is None and unbound.json()["enabled"] is False
    assert unbound.json()["description"] == "ops"

    rotated = admin.post(f"{path}/secret")
    assert rotated.status_code == 200 and rotated.json()["secret"].startswith("whsec_")
    assert rotated.json()["secret"] != hook["secret"]
    assert rotated.json()["previous_secret_until"] is not None
    assert rotated.headers["Cache-Control"] == "no-store"
    assert admin.get(path).json()["previous_secret_until"] is not None

    deliveries = admin.get(f"{path}/deliveries")
    assert deliveries.status_code == 200 and deliveries.json() == {"deliveries": []}
    assert admin.post(f"{path}/replay").json() == {"scheduled": 0}
    assert admin.post(f"{path}/replay", json={"since": "2026-01-01T00:00:00Z"}).status_code == 200

    # Another namespace's admin sees nothing of it.
    assert stranger.get("/v1/webhooks").json() == {"webhooks": []}
    for method, suffix in (("GET", ""), ("PATCH", ""), ("DELETE", ""), ("POST", "/secret")):
        reply = stranger.request(method, f"{path}{suffix}", json={} if method == "PATCH" else None)
        assert reply.status_code == 404, (method, suffix, reply.text)
    assert admin.delete(path).status_code == 204
    assert admin.get(path).status_code == 404
    assert admin.get("/v1/webhooks").json() == {"webhooks": []}


def test_admin_routes_refuse_what_they_cannot_store(deployment: Deployment, api: ApiServer) -> None:
    admin = api.client(make_key(deployment.settings, "acme", Role.ADMIN))
    for body, status, words in (
        ({"url": "ftp://hooks.test/"}, 400, "http or https"),
        ({"url": "https://a:b@hooks.test/"}, 400, "user name or password"),
        ({"url": "https://hooks.test/", "events": ["job.started"]}, 422, "reindex.failed"),
        ({"url": "https://hooks.test/", "events": []}, 422, "events"),
        ({"url": "https://hooks.test/", "principals": ["a,b"]}, 422, "principals"),
        ({"url": "https://hooks.test/", "secret": "mine"}, 422, "secret"),
        ({"url": "x" * 3000}, 422, "url"),
    ):
        reply = admin.post("/v1/webhooks", json=body)
        assert reply.status_code == status, (body, reply.text)
        assert words in reply.text
    assert admin.get("/v1/webhooks/not-a-uuid").status_code == 404
    assert admin.get("/v1/webhooks/00000000-0000-0000-0000-000000000000").status_code == 404
    made = admin.post("/v1/webhooks", json={"url": "https://hooks.test/"}).json()
    bad_state = admin.get(f"/v1/webhooks/{made['id']}/deliveries?state=lost")
    assert bad_state.status_code == 400 and "pending" in bad_state.text
    for role in (Role.READ, Role.WRITE, Role.DELEGATE):
        other = api.client(make_key(deployment.settings, "acme", role))
        assert other.get("/v1/webhooks").status_code == 403
        assert other.post("/v1/webhooks", json={"url": "https://hooks.test/"}).status_code == 403


def test_the_cli_manages_endpoints_and_prints_the_secret_once(deployment: Deployment) -> None:
    command = str(Path(sys.executable).with_name("ragsage"))

    def ragsage(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [command, "webhooks", *args],
            cwd=ROOT,
            env=deployment.env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    made = ragsage(
        "create", "--namespace", "acme", "--url", "https://hooks.test/cli", "--event",
        "job.succeeded,document.deleted", "--principal", "group:ops",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    secret = made.stdout.strip()
    assert secret.startswith("whsec_") and "shown only once" in made.stderr
    listed = ragsage("list", "--namespace", "acme")
    assert "https://hooks.test/cli" in listed.stdout and "group:ops" in listed.stdout
    assert secret not in listed.stdout
    hook_id = listed.stdout.split()[0]
    disabled = ragsage("update", hook_id, "--namespace", "acme", "--disable", "--unbind")
    assert disabled.returncode == 0 and '"enabled": false' in disabled.stdout
    assert '"principals": null' in disabled.stdout
    rotated = ragsage("rotate-secret", hook_id, "--namespace", "acme")
    assert rotated.returncode == 0 and rotated.stdout.strip() not in ("", secret)
    assert ragsage("deliveries", hook_id, "--namespace", "acme").returncode == 0
    assert "scheduled 0" in ragsage("replay", hook_id, "--namespace", "acme").stdout
    refused = ragsage("create", "--namespace", "acme", "--url", "gopher://hooks.test/")
    assert refused.returncode == 2 and "http or https" in refused.stderr
    assert ragsage("delete", hook_id, "--namespace", "other").returncode == 1
    assert ragsage("delete", hook_id, "--namespace", "acme").returncode == 0
    assert ragsage("list", "--namespace", "acme").stdout == ""


def test_metrics_show_how_many_deliveries_wait_and_for_how_long(
    deployment: Deployment, api: ApiServer
) -> None:
    admin = api.client(make_key(deployment.settings, "acme", Role.ADMIN))
    assert admin.post("/v1/webhooks", json={"url": "https://hooks.test/"}).status_code == 201
    outcome = deployment.enqueuer.enqueue_document("acme", "waiting.md", data=b"# Waiting\n")
    assert outcome.job_id is not None
    job_id = outcome.job_id

    async def finish(database: Database) -> None:
        async with database.session(Scope("acme")) as session:
            await store.succeed(session, job_id, timings={}, result={})

    with_database(deployment.settings, finish)  # no worker runs: the delivery waits
    time.sleep(1.2)
    metrics = api.client().get("/metrics").text
    assert "ragsage_webhook_pending_deliveries 1.0" in metrics
    age = re.search(r"^ragsage_webhook_oldest_undelivered_seconds (\S+)$", metrics, re.M)
    assert age is not None and float(age.group(1)) >= 1.0
