"""Refresh the web page's picture in the README: ``make screenshot`` (not a test).

Starts ``ragsage up`` on a free port with a throwaway data folder (the
samples ingested), opens its one-time sign-in link in Debian's headless
Chromium, asks the sample question, opens its citation (the quoted sentence
marked, its section named) and saves ``docs/web-page.png``; then a question
answered from the sample PDF, whose citation shows the page with the cited
lines marked, saved as ``docs/page-citation.png``.  Needs the
``chromium`` and ``chromium-driver`` packages and the dev extra (Selenium).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TARGET = ROOT / "docs" / "web-page.png"
# The passage that answers it joins small sections: the citation names the one
# holding the quoted sentence, which the page marks.
QUESTION = "How does row-level security isolate namespaces?"
# Answered from the sample PDF: the citation shows its page, the lines marked.
PDF_QUESTION = "What happens to a job when its worker dies mid-job?"
PDF_TARGET = ROOT / "docs" / "page-citation.png"
ANSWER_LINK = "#conversation .answer button"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_for_link(log: Path, process: subprocess.Popen[bytes], seconds: float) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = re.search(r"(http://127\.0\.0\.1:\d+/#code=\S+)", log.read_text(errors="replace"))
        if found and "Serving on" in log.read_text(errors="replace"):
            return found.group(1)
        if process.poll() is not None:
            raise SystemExit(f"ragsage up stopped:\n{log.read_text(errors='replace')}")
        time.sleep(0.5)
    raise SystemExit(f"ragsage up did not get ready in {seconds:.0f} s")


def _shows(css: str) -> Any:
    from selenium.webdriver.common.by import By

    return lambda driver: driver.find_elements(By.CSS_SELECTOR, css)


def capture(link: str, shots: list[tuple[str, Path, str]]) -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    with tempfile.TemporaryDirectory() as profile:
        for flag in (
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            "--window-size=1200,800",
        ):
            options.add_argument(flag)
        driver = webdriver.Chrome(
            options=options, service=Service(shutil.which("chromedriver") or "chromedriver")
        )
        try:
            driver.get(link)
            wait = WebDriverWait(driver, 60)
            wait.until(lambda d: d.find_element(By.ID, "app").is_displayed())
            driver.find_element(By.ID, "tab-ask").click()
            for question, target, shown in shots:
                driver.find_element(By.ID, "new-conversation").click()
                driver.find_element(By.ID, "question").send_keys(question)
                driver.find_element(By.ID, "ask-button").click()
                wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ANSWER_LINK))
                driver.find_elements(By.CSS_SELECTOR, ANSWER_LINK)[0].click()  # [1]
                wait.until(lambda d: d.find_element(By.ID, "chunk-view").is_displayed())
                wait.until(_shows(shown))
                time.sleep(0.5)
                target.parent.mkdir(parents=True, exist_ok=True)
                driver.save_screenshot(str(target))
                driver.find_element(By.ID, "chunk-close").click()
        finally:
            driver.quit()


def main() -> None:
    port = free_port()
    with tempfile.TemporaryDirectory() as data:
        log = Path(data) / "up.log"
        argv = [str(Path(sys.executable).parent / "ragsage"), "up", "--port", str(port)]
        with log.open("wb") as output:
            process = subprocess.Popen(
                [*argv, "--data-dir", str(Path(data) / "stack")],
                cwd=ROOT,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            capture(
                wait_for_link(log, process, 600),
                [
                    (QUESTION, TARGET, "#chunk-body mark.quote"),
                    (PDF_QUESTION, PDF_TARGET, "#chunk-body .page-mark"),
                ],
            )
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGINT)  # Ctrl-C, as in a terminal
                process.wait(90)
    print(f"saved {TARGET.relative_to(ROOT)} and {PDF_TARGET.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
