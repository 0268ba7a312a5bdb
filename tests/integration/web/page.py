"""Driving the web page: what to upload, how to sign in, and what a check reads."""

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from ..api_harness import ApiServer

AXE = Path(__file__).resolve().parents[1] / "vendor" / "axe-4.14.1.min.js"
EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "docs"
WAIT = 60
HOSTILE = "<img src=x onerror=alert(1)>"

POLICY = """# Travel policy

## Hotels

Hotels in Paris are booked through the travel desk, at most 180 euros a night.
Receipts go to the finance team within two weeks of the trip.
"""

NOTES = f"""Meeting notes from the security review.

The attacker pasted {HOSTILE} into the wiki; the page showed it as text.
"""


def wait_for(driver: WebDriver, what: Callable[[WebDriver], Any], message: str) -> Any:
    return WebDriverWait(driver, WAIT, poll_frequency=0.2).until(what, message)


def stored_key(driver: WebDriver) -> str | None:
    """The key the tab is signed in with (its ``sessionStorage``), or None."""
    found: str | None = driver.execute_script("return sessionStorage.getItem('ragsage.key')")
    return found


def signed_in(driver: WebDriver, api: ApiServer, key: str, link: str | None = None) -> None:
    """Sign the tab in with ``key`` through a sign-in link (``#key=``, or ``link``'s fragment).

    A tab already signed in with another key asks first (never switching on
    its own); the answer here is "switch", as a person meaning it would give.
    """
    driver.get(f"{api.url}/{link or f'#key={key}'}")
    wait_for(
        driver,
        lambda d: (
            d.find_element(By.ID, "offer").is_displayed()
            or (stored_key(d) == key and d.find_element(By.ID, "app").is_displayed())
        ),
        "the app shows, or the page asks whether to switch",
    )
    if driver.find_element(By.ID, "offer").is_displayed():
        driver.find_element(By.ID, "offer-switch").click()
    wait_for(
        driver,
        lambda d: stored_key(d) == key and d.find_element(By.ID, "app").is_displayed(),
        "the app shows, signed in with the key",
    )


def upload_files(driver: WebDriver, paths: list[Path]) -> None:
    chooser = driver.find_element(By.ID, "files")
    chooser.send_keys("\n".join(str(p) for p in paths))


def texts(driver: WebDriver, css: str) -> list[str]:
    """The visible text of every element ``css`` selects, read at one instant."""
    found: list[str] = driver.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map(e => e.innerText)", css
    )
    return found


def clicked(driver: WebDriver, css: str, label: str) -> bool:
    """Click, inside the page, the first ``css`` element whose text is ``label``.

    Found and clicked at one instant: a list redrawn by a finishing job cannot
    leave the test holding a stale element.
    """
    done: bool = driver.execute_script(
        "const b = [...document.querySelectorAll(arguments[0])]"
        "  .find(b => b.textContent === arguments[1]);"
        "if (b) b.click(); return Boolean(b);",
        css,
        label,
    )
    return done


def upload_states(driver: WebDriver) -> dict[str, str]:
    names = texts(driver, "#uploads li strong")
    states = texts(driver, "#uploads li span")
    return dict(zip(names, states, strict=False))


def finished(states: dict[str, str], names: list[str]) -> bool:
    return all(
        any(word in states.get(name, "") for word in ("succeeded", "failed")) for name in names
    )


def tab(driver: WebDriver, name: str) -> None:
    driver.find_element(By.ID, f"tab-{name}").click()
    wait_for(driver, lambda d: d.find_element(By.ID, f"panel-{name}").is_displayed(), name)


def accessibility_problems(driver: WebDriver) -> list[dict[str, Any]]:
    driver.execute_script(AXE.read_text())
    found = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {resultTypes: ['violations']}).then("
        "  r => done(JSON.stringify(r.violations)), e => done(JSON.stringify([{id: String(e)}])));"
    )
    violations: list[dict[str, Any]] = json.loads(found)
    return [v for v in violations if v.get("impact") in ("serious", "critical", None)]


def console_errors(driver: WebDriver) -> list[str]:
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def failed_requests(driver: WebDriver, origin: str) -> list[str]:
    """Requests to ``origin`` that failed or got an error status since the log was last read.

    The browser's own traffic to other hosts (which this machine blocks) is
    left out.
    """
    urls: dict[str, str] = {}
    failures = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        params = message.get("params", {})
        if message["method"] == "Network.requestWillBeSent":
            urls[params["requestId"]] = params["request"]["url"]
        elif message["method"] == "Network.loadingFailed":
            url = urls.get(params["requestId"], "")
            if url.startswith(origin):
                failures.append(f"{params['errorText']} {url}")
        elif message["method"] == "Network.responseReceived":
            response = params["response"]
            if response["url"].startswith(origin) and response["status"] >= 400:
                failures.append(f"{response['status']} {response['url']}")
    return failures


def request_bodies(driver: WebDriver, url: str) -> list[Any]:
    """The JSON bodies the page sent to ``url`` since the performance log was last read."""
    bodies = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            request = message["params"]["request"]
            if request["url"] == url and request.get("postData"):
                bodies.append(json.loads(request["postData"]))
    return bodies


def foreign_requests(driver: WebDriver, origin: str) -> list[str]:
    """What the page itself fetched from anywhere but ``origin`` (fonts, CDNs, trackers)."""
    kinds = {"Document", "Script", "Stylesheet", "Image", "Font", "Fetch", "XHR", "Media"}
    found = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] != "Network.requestWillBeSent":
            continue
        params = message["params"]
        url = params["request"]["url"]
        # Only what our page asked for: the browser's own new-tab page is not ours.
        ours = params.get("documentURL", "").startswith(origin)
        if ours and params.get("type") in kinds and not url.startswith((origin, "data:")):
            found.append(url)
    return found


def asked_with_citation(driver: WebDriver, question: str) -> str:
    """Ask ``question`` on the Ask tab and wait for the whole answer with a citation; its text."""
    tab(driver, "ask")
    driver.find_element(By.ID, "question").send_keys(question)
    driver.find_element(By.ID, "ask-button").click()
    # The Ask button comes back when the stream has ended: the answer is whole.
    wait_for(
        driver,
        lambda d: (
            d.find_element(By.ID, "ask-button").is_enabled()
            and d.find_elements(By.CSS_SELECTOR, "#conversation .answer button.link")
        ),
        "an answer with a citation",
    )
    text: str = driver.find_element(By.CSS_SELECTOR, "#conversation .answer").text
    return text
