"""Sign-in links: a code signs in once.

``make run``'s link carries a one-time code instead of its admin key: it is
exchanged once (``POST /v1/sign-in``), within minutes, and a forged code is
refused by a MAC check before any Redis or database work.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import replace

import httpx
import pytest

from ragsage.adapters.postgres.keys import Role
from ragsage.adapters.sealing import Sealer, new_operator_key
from ragsage.library.sign_in import CODE_LIFETIME_SECONDS, SignInCodes
from tests.integration.api_harness import ApiServer, make_key, serve
from tests.integration.worker_harness import Deployment

NAMESPACE = "acme"


# ------------------------------------------------------------------ the exchange over HTTP


def _exchange(client: httpx.Client, code: str) -> httpx.Response:
    return client.post("/v1/sign-in", json={"code": code})


def test_a_code_is_exchanged_once(deployment: Deployment, api: ApiServer) -> None:
    key = make_key(deployment.settings, NAMESPACE, Role.ADMIN)
    codes = SignInCodes(Sealer(deployment.settings.sealing_keys))
    code = codes.make(key)
    anyone = api.client()

    first = _exchange(anyone, code)
    assert first.status_code == 200, first.text
    assert first.json() == {"key": key}
    assert first.headers["Cache-Control"] == "no-store"
    assert api.client(key).get("/v1/key").json()["namespace"] == NAMESPACE

    again = _exchange(anyone, code)
    assert again.status_code == 410, again.text
    assert again.json()["error"]["code"] == "sign_in_code_used"
    assert "already been used" in again.json()["error"]["message"]
    # The same sealed bytes written another way are the same code, still used.
    assert _exchange(anyone, code.rstrip("=")).status_code == 410


def test_an_expired_code_is_refused_in_words(deployment: Deployment, api: ApiServer) -> None:
    key = make_key(deployment.settings, NAMESPACE, Role.WRITE)
    codes = SignInCodes(Sealer(deployment.settings.sealing_keys))
    now = time.time()
    late = _exchange(api.client(), codes.make(key, now=now - CODE_LIFETIME_SECONDS - 5))
    assert late.status_code == 410, late.text
    assert late.json()["error"]["code"] == "sign_in_code_expired"
    assert "expired" in late.json()["error"]["message"]
    # One made just inside its lifetime still works.
    in_time = _exchange(api.client(), codes.make(key, now=now - CODE_LIFETIME_SECONDS + 30))
    assert in_time.status_code == 200 and in_time.json()["key"] == key


class _Doorbell:
    """A TCP listener that counts the connections made to it and drops each at once.

    Given as the address of Postgres and of Redis, it shows whether a request
    reached either: a count of zero is a request that never tried.
    """

    def __init__(self) -> None:
        self._socket = socket.create_server(("127.0.0.1", 0))
        self.port = self._socket.getsockname()[1]
        self.rings = 0
        self._thread = threading.Thread(target=self._answer, daemon=True)
        self._thread.start()

    def _answer(self) -> None:
        while True:
            try:
                connection, _ = self._socket.accept()
            except OSError:
                return
            self.rings += 1
            connection.close()

    def close(self) -> None:
        self._socket.close()


@pytest.fixture
def doorbells(deployment: Deployment) -> Iterator[tuple[ApiServer, _Doorbell, _Doorbell]]:
    """An API whose Postgres and Redis addresses are both doorbells."""
    postgres, redis = _Doorbell(), _Doorbell()
    settings = replace(
        deployment.settings,
        database_url=f"postgresql://postgres@127.0.0.1:{postgres.port}/ragsage",
        app_database_url=f"postgresql://ragsage_app@127.0.0.1:{postgres.port}/ragsage",
        redis_url=f"redis://127.0.0.1:{redis.port}/0",
        cache_redis_url=f"redis://127.0.0.1:{redis.port}/1",
        limits_redis_url=f"redis://127.0.0.1:{redis.port}/2",
    )
    serving = serve(replace(deployment, settings=settings))
    try:
        yield next(serving), postgres, redis
    finally:
        serving.close()
        postgres.close()
        redis.close()


def test_a_forged_code_is_refused_before_any_redis_or_database_work(
    deployment: Deployment,
    api: ApiServer,
    doorbells: tuple[ApiServer, _Doorbell, _Doorbell],
) -> None:
    cut_off, postgres, redis = doorbells
    key = make_key(deployment.settings, NAMESPACE, Role.ADMIN)
    keys = deployment.settings.sealing_keys
    codes = SignInCodes(Sealer(keys))
    real = codes.make(key)
    forged = {
        "garbage": "not-a-code",
        "shaped like one": "gAAAAAB" + "A" * 120,
        "cut short": real[: len(real) // 2],
        "one character changed": real[:40] + ("B" if real[40] != "B" else "C") + real[41:],
        "made with another operator key": SignInCodes(Sealer(new_operator_key())).make(key),
        # A stored secret's ciphertext (sealed with the very same operator key) is
        # no code: sign-in codes are sealed with a key derived for them alone.
        "a sealed secret of this deployment": Sealer(keys).seal(key),
    }
    for what, code in forged.items():
        refused = _exchange(cut_off.client(), code)
        assert refused.status_code == 401, (what, refused.text)
        assert refused.json()["error"]["code"] == "sign_in_code_invalid", what
        assert "not valid" in refused.json()["error"]["message"], what
    # An expired code is refused by its date alone, also without asking anyone.
    late = codes.make(key, now=time.time() - CODE_LIFETIME_SECONDS - 5)
    assert _exchange(cut_off.client(), late).status_code == 410
    assert (postgres.rings, redis.rings) == (0, 0)

    # A real code needs Redis to be marked used; with Redis away that is a 503,
    # the database is still never asked, and the code is not spent.
    away = _exchange(cut_off.client(), real)
    assert away.status_code == 503, away.text
    assert away.json()["error"]["code"] == "unavailable" and "Retry-After" in away.headers
    assert redis.rings > 0 and postgres.rings == 0
    assert _exchange(api.client(), real).json() == {"key": key}
