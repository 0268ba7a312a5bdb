"""Sign-in links: a link never plants its key in a signed-in tab, and a code signs in once.

The attack (issue 75): send a colleague a link carrying your own restricted
write key for ``user:you``.  If their open tab took it silently, every file
they then dropped on the page would be stored for you, readable by you alone.
A signed-in tab must instead ask, naming whose key the link offers, and keep
its own key unless the person chooses to switch.

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
from pathlib import Path

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver

from ragsage.adapters.sealing import Sealer, new_operator_key
from ragsage.core.keys import Role
from ragsage.management.sign_in import CODE_LIFETIME_SECONDS, SignInCodes
from tests.integration.api_harness import ApiServer, make_key, serve
from tests.integration.web.page import (
    POLICY,
    accessibility_problems,
    console_errors,
    finished,
    upload_files,
    upload_states,
    wait_for,
)
from tests.integration.worker_harness import Deployment

NAMESPACE = "acme"


# True once the page has either asked (the dialog is open) or taken another key.
_ASKED_OR_SWITCHED = (
    "const asked = document.getElementById('offer');"
    "return Boolean(asked && asked.open)"
    "  || sessionStorage.getItem('ragsage.key') !== arguments[0];"
)


def _stored_key(browser: WebDriver) -> str | None:
    found: str | None = browser.execute_script("return sessionStorage.getItem('ragsage.key')")
    return found


def _shown(browser: WebDriver, element_id: str) -> bool:
    return bool(browser.find_element(By.ID, element_id).is_displayed())


def _restricted_write_key(api: ApiServer, deployment: Deployment, user: str) -> str:
    """A restricted write key for ``user:<user>``, as a product would hand its user one."""
    delegate = api.client(make_key(deployment.settings, NAMESPACE, Role.DELEGATE))
    issued = delegate.post(
        "/v1/restricted-keys",
        json={
            "principals": [f"user:{user}"],
            "expires_in": 3600,
            "role": "write",
            "subject": f"{user}@example.com",
        },
    )
    assert issued.status_code == 201, issued.text
    key: str = issued.json()["key"]
    return key


def _names(client: httpx.Client) -> list[str]:
    reply = client.get("/v1/documents")
    assert reply.status_code == 200, reply.text
    return [document["filename"] for document in reply.json()["documents"]]


def test_a_signed_in_tab_asks_before_a_link_replaces_its_key(
    running: Deployment, api: ApiServer, browser: WebDriver, tmp_path: Path
) -> None:
    alice = make_key(running.settings, NAMESPACE, Role.WRITE, ["user:alice"])
    mallory = _restricted_write_key(api, running, "mallory")

    # A tab that is not signed in may sign in from a link.
    browser.get(f"{api.url}/#key={alice}")
    wait_for(browser, lambda d: _shown(d, "app") and _stored_key(d) == alice, "signed in")

    # Mallory's link, opened in that tab: only the fragment changes (hashchange).
    browser.get(f"{api.url}/#key={mallory}")
    wait_for(
        browser,
        lambda d: d.execute_script(_ASKED_OR_SWITCHED, alice),
        "the page asks, or (the attack) switches",
    )
    assert _stored_key(browser) == alice, "the link planted its key in a signed-in tab"
    asked = browser.find_element(By.ID, "offer").text
    for named in (NAMESPACE, "write", "user:mallory", "mallory@example.com", "user:alice"):
        assert named in asked, (named, asked)
    # Nothing is switched while the question is open, and the key left the address.
    assert _stored_key(browser) == alice
    assert browser.execute_script("return location.hash") == ""
    assert mallory not in browser.current_url
    # The safe answer has the focus; the question passes the accessibility checks.
    assert browser.switch_to.active_element.get_attribute("id") == "offer-keep"
    assert accessibility_problems(browser) == []

    # Declining keeps Alice's key: her next upload is hers, not Mallory's.
    browser.find_element(By.ID, "offer-keep").click()
    wait_for(browser, lambda d: not _shown(d, "offer"), "the question closes")
    assert _stored_key(browser) == alice
    # The bar says whose the tab's key is, at all times.
    assert "user:alice" in browser.find_element(By.ID, "who").text
    assert "not used" in browser.find_element(By.ID, "link-notice").text
    policy = tmp_path / "travel.md"
    policy.write_text(POLICY)
    upload_files(browser, [policy])
    wait_for(browser, lambda d: finished(upload_states(d), ["travel.md"]), "the upload ends")
    assert "succeeded" in upload_states(browser)["travel.md"]
    assert _names(api.client(alice)) == ["travel.md"]
    assert _names(api.client(mallory)) == []

    # The same link loaded afresh (a reload keeps the tab's storage) asks again;
    # Escape is a "no" too.
    browser.get(f"{api.url}/?again#key={mallory}")
    wait_for(browser, lambda d: _shown(d, "offer"), "the page asks on load too")
    assert _stored_key(browser) == alice
    browser.find_element(By.ID, "offer-keep").send_keys(Keys.ESCAPE)
    wait_for(browser, lambda d: not _shown(d, "offer"), "Escape keeps the sign-in")
    assert _stored_key(browser) == alice

    # Choosing to switch does switch, and the page says whose key it now uses.
    browser.get(f"{api.url}/?again#key={mallory}")
    wait_for(browser, lambda d: _shown(d, "offer"), "asked once more")
    browser.find_element(By.ID, "offer-switch").click()
    wait_for(browser, lambda d: _stored_key(d) == mallory, "switched")
    wait_for(browser, lambda d: "user:mallory" in d.find_element(By.ID, "who").text, "named")
    assert "mallory@example.com" in browser.find_element(By.ID, "link-notice").text
    # Nothing of Alice's session is left on the page.
    assert browser.find_elements(By.CSS_SELECTOR, "#uploads li") == []
    assert console_errors(browser) == []


def test_a_code_link_signs_in_once_and_asks_before_replacing_a_key(
    running: Deployment, api: ApiServer, browser: WebDriver
) -> None:
    codes = SignInCodes(Sealer(running.settings.sealing_keys))
    admin = make_key(running.settings, NAMESPACE, Role.ADMIN)
    reader = make_key(running.settings, NAMESPACE, Role.READ, ["group:hr"])

    # A fresh tab signs in from the code, which never stays in the address bar.
    code = codes.make(admin)
    browser.get(f"{api.url}/#code={code}")
    wait_for(browser, lambda d: _stored_key(d) == admin, "signed in from the code")
    wait_for(browser, lambda d: _shown(d, "app"), "the app shows")
    assert code not in browser.current_url and admin not in browser.current_url
    assert "admin key" in browser.find_element(By.ID, "link-notice").text

    # A second code, for another key, in the signed-in tab: asked, not switched.
    browser.get(f"{api.url}/#code={codes.make(reader)}")
    wait_for(browser, lambda d: _shown(d, "offer"), "the page asks")
    asked = browser.find_element(By.ID, "offer").text
    assert "read key" in asked and "group:hr" in asked
    assert _stored_key(browser) == admin
    browser.find_element(By.ID, "offer-keep").click()
    wait_for(browser, lambda d: not _shown(d, "offer"), "kept")
    assert _stored_key(browser) == admin

    # The first link again, in a tab that signed out: used up, and the page says so.
    browser.find_element(By.ID, "sign-out").click()
    browser.get(f"{api.url}/?again#code={code}")
    wait_for(
        browser,
        lambda d: "already been used" in d.find_element(By.ID, "sign-in-message").text,
        "the used link is refused in words",
    )
    assert _stored_key(browser) is None
    assert accessibility_problems(browser) == []


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
