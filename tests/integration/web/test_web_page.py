"""The web page, driven in a real headless Chromium against a running stack.

Debian's ``chromium`` and ``chromium-driver`` (``.ci/run`` installs them) with
Selenium from PyPI; nothing is downloaded at run time.  axe-core is vendored
under ``vendor/`` for the accessibility checks.
"""

from pathlib import Path

import httpx
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from api.web import CONTENT_SECURITY_POLICY, STATIC
from ragsage.adapters.postgres import Database
from ragsage.adapters.postgres.keys import revoke_key
from ragsage.adapters.sealing import Sealer
from ragsage.core.keys import Role
from ragsage.core.scopes import Scope
from ragsage.management.sign_in import SignInCodes
from tests.fixtures.page_boxes import two_page_manual

from ..api_harness import ApiServer, make_key, with_database
from ..worker_harness import Deployment
from .page import (
    HOSTILE,
    NOTES,
    POLICY,
    accessibility_problems,
    asked_with_citation,
    clicked,
    console_errors,
    failed_requests,
    finished,
    foreign_requests,
    request_bodies,
    signed_in,
    tab,
    texts,
    upload_files,
    upload_states,
    wait_for,
)


def test_the_page_is_served_with_a_strict_policy(api: ApiServer) -> None:
    # Every module of the page's script: a screen's new file left unserved fails here.
    scripts = [f"/web/{script.name}" for script in sorted(STATIC.glob("*.js"))]
    assert "/web/app.js" in scripts
    for path in ("/", *scripts, "/web/app.css", "/favicon.ico"):
        response = httpx.get(f"{api.url}{path}")
        assert response.status_code == 200, path
        assert response.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
        assert "'unsafe-inline'" not in CONTENT_SECURITY_POLICY
        assert "'unsafe-eval'" not in CONTENT_SECURITY_POLICY
        # A module is run only when served as JavaScript (nosniff forbids guessing).
        if path.endswith(".js"):
            kind = response.headers["Content-Type"].split(";")[0]
            assert kind in ("text/javascript", "application/javascript"), path
    # Only the page's own files: no way up out of the folder, nothing else in it.
    for path in ("/web/%2E%2E%2F__init__.py", "/web/..%2Fscreenshot.py", "/web/__init__.py"):
        assert httpx.get(f"{api.url}{path}").status_code == 404, path
    # A refusal from the page's own route carries the same headers.
    refused = httpx.get(f"{api.url}/web/__init__.py")
    assert refused.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    icon = httpx.get(f"{api.url}/web/favicon.svg")
    assert icon.status_code == 200 and icon.headers["Content-Type"].startswith("image/svg+xml")


def test_sign_in_upload_ask_cite_search_and_delete(
    running: Deployment, api: ApiServer, browser: WebDriver, tmp_path: Path
) -> None:
    # A refused key says so, and stays out of the tab.
    browser.get(api.url)
    wait_for(browser, lambda d: d.find_element(By.ID, "sign-in").is_displayed(), "sign-in")
    browser.find_element(By.ID, "key").send_keys("rsk_not_a_real_key")
    browser.find_element(By.CSS_SELECTOR, "#sign-in-form button").click()
    wait_for(
        browser,
        lambda d: "refused" in d.find_element(By.ID, "sign-in-message").text,
        "the refusal is shown",
    )
    assert browser.execute_script("return sessionStorage.length") == 0
    refusals = console_errors(browser)  # reading a log empties it
    assert refusals and all("401" in line for line in refusals)
    assert failed_requests(browser, api.url) == [f"401 {api.url}/v1/key"]

    # The one-click link (make run's: a one-time code) signs in, and the code leaves
    # the address bar at once; the page says whose key it took.
    key = make_key(running.settings, "acme", Role.ADMIN)
    code = SignInCodes(Sealer(running.settings.sealing_keys)).make(key)
    signed_in(browser, api, key, link=f"#code={code}")
    assert browser.execute_script("return location.hash") == ""
    assert code not in browser.current_url and key not in browser.current_url
    assert "admin key" in browser.find_element(By.ID, "link-notice").text
    assert console_errors(browser) == []

    policy, notes, broken = tmp_path / "travel.md", tmp_path / "notes.txt", tmp_path / "scan.pdf"
    policy.write_text(POLICY)
    notes.write_text(NOTES)
    broken.write_bytes(b"%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\ntruncated")
    upload_files(browser, [policy, notes, broken])
    names = ["travel.md", "notes.txt", "scan.pdf"]
    wait_for(browser, lambda d: finished(upload_states(d), names), "three jobs end")
    states = upload_states(browser)
    assert "succeeded" in states["travel.md"] and "chunks" in states["travel.md"]
    assert "succeeded" in states["notes.txt"]
    assert (
        states["scan.pdf"].strip() == "— failed: scan.pdf: not a valid PDF (corrupt or truncated)"
    )

    # The list shows them, and the name filter asks the server.
    browser.find_element(By.ID, "filter").send_keys("TRAVEL")
    browser.find_element(By.CSS_SELECTOR, "#filter-form button").click()
    wait_for(
        browser,
        lambda d: texts(d, "#documents tbody td:first-child") == ["travel.md"],
        "the filter keeps travel.md alone",
    )

    # Ask: the answer streams in with a citation that opens the right chunk.
    answer = asked_with_citation(browser, "How much can a hotel in Paris cost a night?")
    assert "180 euros" in answer
    browser.find_element(By.CSS_SELECTOR, "#conversation .answer button.link").click()
    wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#chunk-body .cited"), "source")
    cited = browser.find_element(By.CSS_SELECTOR, "#chunk-body .cited").text
    assert "180 euros a night" in cited
    # The sentence the answer quoted is marked, and its section named.
    quoted = browser.find_element(By.CSS_SELECTOR, "#chunk-body .cited mark.quote").text
    assert quoted.startswith("Hotels in Paris are booked") and " ".join(quoted.split()) in answer
    where = browser.find_element(By.ID, "chunk-where").text
    assert "travel.md" in where and "Hotels" in where
    # With a conversation and the passage open, at desktop and at phone width.
    assert accessibility_problems(browser) == []
    browser.set_window_size(390, 844)
    assert accessibility_problems(browser) == []
    browser.set_window_size(1280, 900)
    browser.find_element(By.ID, "chunk-close").click()

    # A question the documents cannot answer is shown as not found.
    browser.find_element(By.ID, "question").send_keys("Which submarine sank in the storm?")
    browser.find_element(By.ID, "ask-button").click()
    wait_for(
        browser,
        lambda d: d.find_elements(By.CSS_SELECTOR, "#conversation .not-found .label"),
        "the honest not-found",
    )

    # A document's markup is text: shown literally, never run.
    tab(browser, "search")
    browser.find_element(By.ID, "search-query").send_keys("attacker pasted wiki")
    browser.find_element(By.CSS_SELECTOR, "#search-form button").click()
    wait_for(
        browser,
        lambda d: HOSTILE in d.find_element(By.ID, "results").text,
        "the markup shown as text",
    )
    assert browser.find_elements(By.CSS_SELECTOR, "#results img") == []
    browser.execute_script("document.querySelector('#results button.link').click()")
    wait_for(browser, lambda d: HOSTILE in d.find_element(By.ID, "chunk-body").text, "as text")
    assert browser.find_elements(By.CSS_SELECTOR, "#chunk-view img") == []
    assert accessibility_problems(browser) == []  # results listed, a passage open
    browser.find_element(By.ID, "chunk-close").click()
    scores = browser.find_element(By.CSS_SELECTOR, "#results .scores").text
    assert "score" in scores and "keyword" in scores

    # Delete the travel policy and it is gone from search.
    tab(browser, "documents")
    wait_for(
        browser,
        lambda d: d.find_elements(By.CSS_SELECTOR, "#documents tbody button"),
        "a delete button",
    )
    assert accessibility_problems(browser) == []  # the lists filled: uploads, documents, jobs
    # Clicked in the page itself: the list may be redrawn by a job finishing meanwhile.
    browser.execute_script(
        "document.querySelector('#documents tbody td:last-child button').click()"
    )
    browser.switch_to.alert.accept()
    wait_for(
        browser,
        lambda d: "Deleted travel.md" in d.find_element(By.ID, "documents-message").text,
        "the deletion confirmed",
    )
    tab(browser, "search")
    query = browser.find_element(By.ID, "search-query")
    query.clear()
    query.send_keys("hotel Paris euros night")
    browser.find_element(By.CSS_SELECTOR, "#search-form button").click()
    wait_for(browser, lambda d: "passages" in d.find_element(By.ID, "search-message").text, "found")
    assert "180 euros" not in browser.find_element(By.ID, "results").text

    # The admin key sees the re-index status.
    tab(browser, "reindex")
    wait_for(
        browser,
        lambda d: d.find_elements(By.CSS_SELECTOR, "#generations tbody tr"),
        "the active generation",
    )
    assert "active" in browser.find_element(By.ID, "generations").text

    assert console_errors(browser) == []
    assert failed_requests(browser, api.url) == []


def test_accessible_at_desktop_and_phone_widths(
    running: Deployment, api: ApiServer, browser: WebDriver
) -> None:
    key = make_key(running.settings, "acme", Role.READ)
    browser.get(api.url)
    wait_for(browser, lambda d: d.find_element(By.ID, "sign-in").is_displayed(), "sign-in")
    assert accessibility_problems(browser) == []
    signed_in(browser, api, key)
    for width, height in ((1280, 900), (390, 844)):
        browser.set_window_size(width, height)
        for name in ("documents", "ask", "search", "reindex"):
            tab(browser, name)
            assert accessibility_problems(browser) == [], (width, name)
    # The checker does find problems when there are some: an image with no text.
    browser.execute_script(
        "const i = document.createElement('img'); i.src = '/favicon.ico';"
        "document.querySelector('main').append(i);"
    )
    assert "image-alt" in [v["id"] for v in accessibility_problems(browser)]
    # A read-only key is told what it lacks, not shown an error page.
    assert "admin" in browser.find_element(By.ID, "reindex-message").text
    assert all("403" in line for line in console_errors(browser))


def test_folders_retries_pages_follow_ups_and_the_keyboard(
    running: Deployment, api: ApiServer, browser: WebDriver, tmp_path: Path
) -> None:
    key = make_key(running.settings, "acme", Role.WRITE)
    client = api.client(key)
    # More documents than one page holds (20), added through the API.
    for number in range(21):
        client.post(
            "/v1/documents",
            files={"file": (f"memo-{number:02}.md", f"# Memo {number}\n\nFiling note {number}.")},
        )
    signed_in(browser, api, key)

    # A folder: every file inside is uploaded, each followed to its end.
    folder = tmp_path / "handbook"
    (folder / "teams").mkdir(parents=True)
    (folder / "parking.md").write_text("# Parking\n\nVisitors park on level minus two.")
    (folder / "teams" / "support.md").write_text("# Support\n\nSupport answers within a day.")
    (folder / "broken.pdf").write_bytes(b"%PDF-1.7\ntruncated")
    browser.find_element(By.ID, "folder").send_keys(str(folder))
    names = ["handbook/parking.md", "handbook/teams/support.md", "handbook/broken.pdf"]
    wait_for(browser, lambda d: finished(upload_states(d), names), "the folder's jobs end")
    states = upload_states(browser)
    assert "succeeded" in states["handbook/parking.md"]
    assert "succeeded" in states["handbook/teams/support.md"]
    assert "failed" in states["handbook/broken.pdf"]

    # The failed job is retried from the jobs list, and fails again with its reason.
    browser.find_element(By.ID, "refresh-jobs").click()
    wait_for(
        browser, lambda d: clicked(d, "#jobs button", "Retry"), "a retry button on the failed job"
    )
    wait_for(
        browser,
        lambda d: any(
            "broken.pdf" in line and "failed: broken.pdf: not a valid PDF" in line
            for line in texts(d, "#uploads li")[:1]
        ),
        "the retried job followed to its end",
    )

    # Pages follow the API's cursor: 24 documents, 20 on the first page.
    browser.find_element(By.ID, "filter-form").find_element(By.TAG_NAME, "button").click()
    # The table already held 20 rows before the click: the list's answer is in when the
    # next-page button, disabled while it is asked for, comes back (a click before is lost).
    wait_for(
        browser,
        lambda d: (
            len(texts(d, "#documents tbody tr")) == 20
            and d.find_element(By.ID, "next-page").is_enabled()
        ),
        "a full first page",
    )
    first = texts(browser, "#documents tbody td:first-child")
    browser.find_element(By.ID, "next-page").click()
    wait_for(browser, lambda d: len(texts(d, "#documents tbody tr")) == 4, "the second page")
    second = texts(browser, "#documents tbody td:first-child")
    assert not set(first) & set(second) and len(set(first) | set(second)) == 24
    assert not browser.find_element(By.ID, "next-page").is_enabled()
    browser.find_element(By.ID, "prev-page").click()
    wait_for(
        browser, lambda d: texts(d, "#documents tbody td:first-child") == first, "back to page one"
    )

    # The keyboard moves between tabs.
    documents_tab = browser.find_element(By.ID, "tab-documents")
    documents_tab.click()
    documents_tab.send_keys("\ue014")  # arrow right
    assert browser.switch_to.active_element.get_attribute("id") == "tab-ask"
    assert browser.find_element(By.ID, "panel-ask").is_displayed()

    # A follow-up question carries the conversation so far.
    browser.get_log("performance")
    for question in ("Where do visitors park?", "And on which level exactly?"):
        browser.find_element(By.ID, "question").send_keys(question)
        browser.find_element(By.ID, "ask-button").click()
        wait_for(
            browser,
            lambda d, q=question: (
                q in d.find_element(By.ID, "conversation").text
                and d.find_element(By.ID, "ask-button").is_enabled()
            ),
            "the answer",
        )
    sent = request_bodies(browser, f"{api.url}/v1/query")
    assert [body["history"] for body in sent][0] == []
    follow_up = sent[1]["history"]
    assert [turn["role"] for turn in follow_up] == ["user", "assistant"]
    assert follow_up[0]["content"] == "Where do visitors park?"
    assert "level minus two" in follow_up[1]["content"]
    assert console_errors(browser) == []

    # A key revoked mid-session: back to the sign-in with the reason, and the next
    # person in this tab inherits nothing (no conversation, no lists).
    async def revoke(database: Database) -> None:
        async with database.session(Scope("acme")) as session:
            await revoke_key(session, key.split("_")[1])

    with_database(running.settings, revoke)
    browser.find_element(By.ID, "tab-documents").click()  # lists the jobs: refused
    wait_for(
        browser,
        lambda d: "refused" in d.find_element(By.ID, "sign-in-message").text,
        "the sign-in, saying the key was refused",
    )
    assert browser.execute_script("return sessionStorage.length") == 0
    assert texts(browser, "#conversation .turn") == texts(browser, "#documents tbody tr") == []


def test_cancel_a_running_job_and_filter_a_search(
    deployment: Deployment, api: ApiServer, browser: WebDriver, tmp_path: Path
) -> None:
    # Embedding takes three seconds here: long enough to cancel the job mid-way.
    deployment.worker(
        RAGSAGE_ADAPTERS="tests.integration.adapters:flaky",
        TEST_EMBED_DELAY="3",
        TEST_EMBED_COUNTER=str(tmp_path / "calls"),
    ).start()
    key = make_key(deployment.settings, "acme", Role.WRITE)
    browser.get(api.url)  # the page's own start, then the link as a user would paste it
    signed_in(browser, api, key)
    slow = tmp_path / "slow.md"
    slow.write_text(POLICY)
    upload_files(browser, [slow])
    # The upload says where its job stands: the stage, and chunks embedded of all.
    wait_for(
        browser,
        lambda d: "running (embed 0 of 1 chunks)" in upload_states(d).get("slow.md", ""),
        "embedding, with its count of chunks",
    )
    browser.find_element(By.ID, "refresh-jobs").click()
    wait_for(
        browser,
        lambda d: clicked(d, "#jobs button", "Cancel"),
        "a cancel button on the running job",
    )
    wait_for(
        browser, lambda d: "cancelled" in upload_states(d).get("slow.md", ""), "the job cancelled"
    )
    assert console_errors(browser) == [] and failed_requests(browser, api.url) == []

    # Search filters go to the API: a source the passage is not in finds nothing of it.
    client = api.client(key)
    quick = client.post("/v1/documents", files={"file": ("parking.md", b"# Parking\n\nLevel -2.")})
    assert quick.status_code == 202
    tab(browser, "search")
    browser.find_element(By.ID, "search-query").send_keys("parking level")
    browser.find_element(By.ID, "search-sources").send_keys("other.md")
    browser.find_element(By.CSS_SELECTOR, "#search-form button").click()
    wait_for(
        browser,
        lambda d: d.find_element(By.ID, "search-message").text.startswith("0 of 0"),
        "nothing from other sources",
    )
    assert foreign_requests(browser, api.url) == []
    # And were the page to try, the policy would stop it before it left the browser.
    browser.execute_script("fetch('http://example.invalid/font.woff2').catch(() => null)")
    refused = wait_for(browser, lambda d: console_errors(d), "the policy's refusal")
    assert "Content Security Policy" in refused[0] and "example.invalid" in refused[0]
    assert foreign_requests(browser, api.url) == []


def test_change_who_may_read_a_document(
    running: Deployment, api: ApiServer, browser: WebDriver, tmp_path: Path
) -> None:
    key = make_key(running.settings, "acme", Role.WRITE)
    browser.get(api.url)
    signed_in(browser, api, key)
    policy = tmp_path / "travel.md"
    policy.write_text(POLICY)
    upload_files(browser, [policy])
    wait_for(browser, lambda d: finished(upload_states(d), ["travel.md"]), "the job ends")
    wait_for(
        browser,
        lambda d: texts(d, "#documents tbody td.readers span") == ["Everyone"],
        "a new document is open to the namespace",
    )
    assert clicked(browser, "#documents td.readers button", "Change readers of travel.md")
    field = wait_for(
        browser,
        lambda d: d.find_element(By.ID, "documents").find_element(
            By.CSS_SELECTOR, "td.readers input"
        ),
        "the readers field",
    )
    assert accessibility_problems(browser) == []
    field.send_keys("group:hr, user:ana@example.com")
    browser.find_element(By.CSS_SELECTOR, "td.readers button[type=submit]").click()
    wait_for(
        browser,
        lambda d: (
            texts(d, "#documents tbody td.readers span") == ["group:hr, user:ana@example.com"]
        ),
        "the new list shows",
    )
    client = api.client(key)
    (stored,) = client.get("/v1/documents").json()["documents"]
    assert stored["access"] == ["group:hr", "user:ana@example.com"]
    # A key bound to another principal no longer sees it; one bound to hr does.
    for principal, shown in (("group:sales", []), ("group:hr", ["travel.md"])):
        bound = with_database(
            running.settings,
            lambda database, p=principal: _bound_key(database, p),
        )
        signed_in(browser, api, bound)
        wait_for(
            browser,
            lambda d, s=shown: (
                texts(d, "#documents tbody td:first-child") == s
                and (s or "No documents" in d.find_element(By.ID, "documents-message").text)
            ),
            f"what a key bound to {principal} sees",
        )
    assert console_errors(browser) == [] and failed_requests(browser, api.url) == []


async def _bound_key(database: Database, principal: str) -> str:
    from ragsage.adapters.postgres.keys import create_key

    scope = Scope("acme")
    async with database.session(scope) as session:
        return (await create_key(session, scope, Role.READ, "bound", [principal])).key


def test_a_restricted_key_opens_a_read_only_page_that_keeps_to_its_filters(
    running: Deployment, api: ApiServer, browser: WebDriver, tmp_path: Path
) -> None:
    admin = api.client(make_key(running.settings, "acme", Role.ADMIN))
    for name, text in (("travel.md", POLICY), ("notes.txt", NOTES)):
        reply = admin.post("/v1/documents", files={"file": (name, text.encode())})
        assert reply.status_code == 202, reply.text
        job = reply.json()["job_id"]
        wait_for(
            browser,
            lambda _, j=job: admin.get(f"/v1/jobs/{j}").json()["state"] == "succeeded",
            name,
        )
    delegate = api.client(make_key(running.settings, "acme", Role.DELEGATE))
    issued = delegate.post(
        "/v1/restricted-keys",
        json={"principals": ["user:ana"], "expires_in": 600, "filters": {"sources": ["notes.txt"]}},
    )
    assert issued.status_code == 201, issued.text
    signed_in(browser, api, issued.json()["key"])
    who = browser.find_element(By.ID, "who").text
    assert "read-only" in who and "restricted key until" in who
    # Only what the key may do is offered: no documents to manage, no re-index.
    assert not browser.find_element(By.ID, "tab-documents").is_displayed()
    assert not browser.find_element(By.ID, "tab-reindex").is_displayed()
    assert browser.find_element(By.ID, "panel-ask").is_displayed()
    tab(browser, "search")
    browser.find_element(By.ID, "search-query").send_keys("hotel Paris euros night")
    browser.find_element(By.CSS_SELECTOR, "#search-form button").click()
    wait_for(browser, lambda d: d.find_element(By.ID, "search-message").text, "searched")
    assert "180 euros" not in browser.find_element(By.ID, "results").text
    assert accessibility_problems(browser) == []
    assert console_errors(browser) == [] and failed_requests(browser, api.url) == []

    # A plain read key sees the documents, but nothing to upload, delete or change.
    signed_in(browser, api, make_key(running.settings, "acme", Role.READ))
    wait_for(browser, lambda d: len(texts(d, "#documents tbody tr")) == 2, "two documents")
    assert not browser.find_element(By.ID, "drop").is_displayed()
    assert browser.find_elements(By.CSS_SELECTOR, "#documents tbody button") == []
    assert "read-only" in browser.find_element(By.ID, "who").text
    assert console_errors(browser) == [] and failed_requests(browser, api.url) == []


def test_a_pdf_citation_shows_its_page_with_the_cited_lines_marked(
    running: Deployment, api: ApiServer, browser: WebDriver, tmp_path: Path
) -> None:
    signed_in(browser, api, make_key(running.settings, "acme", Role.ADMIN))
    manual = tmp_path / "manual.pdf"
    manual.write_bytes(two_page_manual())
    upload_files(browser, [manual])
    wait_for(browser, lambda d: finished(upload_states(d), ["manual.pdf"]), "the job ends")
    asked_with_citation(browser, "At what pressure does the relief valve open?")
    browser.find_element(By.CSS_SELECTOR, "#conversation .answer button.link").click()
    picture = wait_for(
        browser,
        lambda d: [
            img
            for img in d.find_elements(By.CSS_SELECTOR, "#chunk-body img.page-image")
            if d.execute_script("return arguments[0].complete && arguments[0].naturalWidth", img)
        ],
        "the page's picture",
    )[0]
    assert "page 2" in browser.find_element(By.ID, "chunk-where").text
    marks = browser.find_elements(By.CSS_SELECTOR, "#chunk-body .page-mark")
    assert len(marks) == 2  # the sentence's two lines
    shown = picture.rect
    # The marks sit over the lines the sentence was drawn on: 703 and 689 pt up
    # an 842 pt page, from 72 pt in; nowhere near the control sentence (743 pt).
    for mark, baseline in zip(marks, (700, 686), strict=True):
        box = mark.rect
        middle = (box["y"] + box["height"] / 2 - shown["y"]) / shown["height"]
        assert abs(middle - (841.89 - baseline - 3) / 841.89) < 0.01
        assert box["x"] >= shown["x"] + 0.1 * shown["width"] - 2
        assert box["x"] + box["width"] <= shown["x"] + shown["width"]
    assert accessibility_problems(browser) == []
