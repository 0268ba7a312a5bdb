"""Attack 7: credentials made up by the thousand, each once.

Before, every fresh random ``rsk_`` key and every restricted key naming a
made-up parent cost a database lookup, and per-key limits (keyed on the
credential presented) bounded nothing for a caller who varies it.  Now a key
carrying the sealing key's check is refused unread when forged, and what the
API cannot check itself is looked up only within its client address's
failed-key budget.  The lookups are counted by Postgres itself
(``track_functions``: the calls of the two functions that read keys).
"""

from __future__ import annotations

import secrets
import time
from collections import Counter
from dataclasses import replace

import psycopg
import pytest

from ragsage.core.keys import Role
from tests.fixtures.credentials import made_up_credentials
from tests.integration.api_harness import ApiServer, make_key, serve
from tests.integration.worker_harness import Deployment

BUDGET = 20
# Made-up credentials sent: enough to spend the budget many times over (bench/hostile_replay.py
# sends 1,000 to a real `make run`).
CREDENTIALS = 360
LOOKUPS = ("ragsage_find_api_key", "ragsage_find_signer")


def _lookups(database_url: str) -> Counter[str]:
    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.execute("SELECT pg_stat_clear_snapshot()")
        rows = connection.execute(
            "SELECT funcname, calls FROM pg_stat_user_functions WHERE funcname = ANY(%s)",
            (list(LOOKUPS),),
        ).fetchall()
    return Counter({name: calls for name, calls in rows})


def _settled_lookups(database_url: str) -> Counter[str]:
    """The counts once every backend that ran a lookup has exited and reported them."""
    latest, since = _lookups(database_url), time.monotonic()
    while time.monotonic() - since < 1.5:
        time.sleep(0.3)
        now = _lookups(database_url)
        if now != latest:
            latest, since = now, time.monotonic()
    return latest


@pytest.fixture
def counted(deployment: Deployment, database_url: str) -> Deployment:
    with psycopg.connect(database_url, autocommit=True) as connection:
        name = connection.execute("SELECT current_database()").fetchone()
        assert name is not None
        connection.execute(f"ALTER DATABASE \"{name[0]}\" SET track_functions = 'all'")
    settings = deployment.settings.replace(rate_limit_unknown_keys=f"{BUDGET}/minute")
    return replace(deployment, settings=settings)


def test_made_up_credentials_by_the_hundred_cost_no_more_lookups_than_the_budget(
    counted: Deployment, database_url: str
) -> None:
    accepted = make_key(counted.settings, "acme", Role.READ)
    delegate_key = make_key(counted.settings, "acme", Role.DELEGATE)
    delegate_id = delegate_key.split("_")[1]
    served = serve(counted)
    api: ApiServer = next(served)
    try:
        # A key and a parent this process has accepted before spend no budget.
        assert api.client(accepted).get("/v1/key").status_code == 200
        issued = api.client(delegate_key).post(
            "/v1/restricted-keys", json={"principals": ["u:x"], "expires_in": 600}
        )
        assert issued.status_code == 201, issued.text
        before = _lookups(database_url)
        statuses: Counter[int] = Counter()
        with api.client() as anonymous:
            for credential in made_up_credentials(CREDENTIALS, "acme", delegate_id):
                reply = anonymous.get(
                    "/v1/sources", headers={"Authorization": f"Bearer {credential}"}
                )
                statuses[reply.status_code] += 1
                assert reply.headers["content-type"].startswith("application/json")
        assert set(statuses) <= {401, 429} and statuses[429] > 0, statuses
        # Never locked out: the accepted key, a restricted key of the known parent and a
        # key made now (its check proves it) all still pass from the flooding address.
        assert api.client(accepted).get("/v1/key").status_code == 200
        assert api.client(issued.json()["key"]).get("/v1/key").status_code == 200
        fresh = make_key(counted.settings, "acme", Role.READ)
        assert api.client(fresh).get("/v1/key").status_code == 200
    finally:
        next(served, None)  # stops the server and closes its pool: backends report their counts
    spent = _settled_lookups(database_url) - before
    # Besides the budget, only the genuine requests looked anything up (counts are
    # reported late, so those made before the flood may fall in): one lookup per
    # request of an API key (four), the delegate key read afresh to issue, and its
    # restricted key's parent once more.  Without the budget: about 240.
    genuine = 4 + 2
    assert sum(spent.values()) <= BUDGET + genuine, spent


def test_metrics_can_require_the_operators_token(deployment: Deployment) -> None:
    token = secrets.token_urlsafe(24)
    served = serve(replace(deployment, settings=deployment.settings.replace(metrics_token=token)))
    api = next(served)
    try:
        refused = api.client().get("/metrics")
        assert refused.status_code == 401 and "RAGSAGE_METRICS_TOKEN" in refused.text
        assert token not in refused.text
        assert (
            api.client().get("/metrics", headers={"Authorization": "Bearer nope"}).status_code
            == 401
        )
        shown = api.client(token).get("/metrics")
        assert shown.status_code == 200 and "ragsage_" in shown.text
    finally:
        next(served, None)
