"""The seven attacks of docs/security.md, replayed against a fresh ``make run`` stack.

    python bench/hostile_replay.py [--port 8765] [--questions 12]

Starts ``ragsage up`` (what ``make run`` runs) in a temporary data directory,
with no samples, then plays each attack over HTTP as a hostile user would (the
signing secret as SQL in the app role) and prints what came back.  Two figures
are measured, not only checked:

* attack 4: a ``group:eng`` reader's ``POST /v1/search`` time for questions a
  ``group:hr`` reader asked first, against questions nobody asked (medians of
  ``--questions`` each, interleaved);
* attack 7: 1,000 made-up credentials of every shape, and how many key
  lookups Postgres ran for them (``pg_stat_user_functions``, with
  ``track_functions`` turned on for the run, read once every backend has
  reported).

Each line ends in ``held`` or ``BROKEN``; the exit status is 1 if any broke.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg

from ragsage.adapters.postgres.keys import create_key
from ragsage.adapters.sealing import Sealer
from ragsage.core.keys import Role
from ragsage.core.scopes import Scope
from ragsage.runtime import build_database
from ragsage.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
# The attacks' samples are the hostile-user tests' own.
sys.path.insert(0, str(ROOT))
from tests.fixtures.credentials import made_up_credentials  # noqa: E402
from tests.fixtures.pictures import gif_claiming  # noqa: E402

NAMESPACE = "default"
LOOKUPS = ("ragsage_find_api_key", "ragsage_find_signer")
PAY = (
    "# Pay and leave\n\n## Bands\n\nSalary bands are reviewed every April by the pay board.\n\n"
    "## Leave\n\nEvery employee takes twenty-five days of paid leave a year.\n"
)
ASKED = [
    "when are salary bands reviewed",
    "who reviews the pay bands",
    "how many days of paid leave",
    "what does the pay board do",
    "salary review month",
    "annual leave allowance",
    "paid holiday days per year",
    "pay band review schedule",
    "who decides salary ranges",
    "leave entitlement for employees",
    "april pay review",
    "how much leave do I get",
    "board that sets pay",
    "yearly salary bands",
    "days off each year",
    "when do pay ranges change",
]
NEW = [
    "parental leave rules",
    "expense claim deadline",
    "remote work policy",
    "laptop replacement cycle",
    "travel booking tool",
    "pension contribution rate",
    "overtime compensation",
    "sick day reporting",
    "security badge lost",
    "conference budget",
    "train or plane for short trips",
    "bonus payment date",
    "probation period length",
    "notice period resignation",
    "office opening hours",
    "desk booking app",
]
broken: list[str] = []


def verdict(name: str, held: bool, detail: str) -> None:
    print(f"{name:<58} {detail:<58} {'held' if held else 'BROKEN'}", flush=True)
    if not held:
        broken.append(name)


class Stack:
    """``ragsage up`` in a temporary directory, and how to reach its database."""

    def __init__(self, data: Path, port: int) -> None:
        self.data, self.port = data, port
        self.url = f"http://127.0.0.1:{port}"
        self.log = data.parent / "up.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> str:
        ragsage = str(Path(sys.executable).with_name("ragsage"))
        argv = [ragsage, "up", "--data-dir", str(self.data), "--port", str(self.port)]
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAGSAGE_")}
        with self.log.open("wb") as handle:
            self.process = subprocess.Popen(
                [*argv, "--no-samples"], cwd=ROOT, env=env, stdout=handle, stderr=handle
            )
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            text = self.log.read_text(errors="replace")
            if "Serving on" in text:
                return text
            if self.process.poll() is not None:
                raise SystemExit(f"ragsage up stopped:\n{text[-2000:]}")
            time.sleep(0.5)
        raise SystemExit("ragsage up did not start in 10 minutes")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(60)

    @property
    def admin_key(self) -> str:
        return (self.data / "api-key").read_text().strip()

    def owner_url(self, user: str = "postgres") -> str:
        # The embedded server listens on a socket in its data directory.
        return f"postgresql://{user}@/ragsage?host={self.data / 'postgres'}"

    def settings(self) -> Settings:
        return Settings.from_env(
            {},
            database_url=self.owner_url(),
            app_database_url=self.owner_url("ragsage_app"),
            sealing_keys=(self.data / "webhook.key").read_text().strip(),
        )

    def key(self, role: Role, principals: tuple[str, ...] = ()) -> tuple[str, str]:
        """A new key of the stack's namespace: (key, signing secret or "")."""
        settings = self.settings()

        async def create() -> tuple[str, str]:
            database = build_database(settings)
            try:
                async with database.session(Scope(NAMESPACE)) as session:
                    made = await create_key(
                        session,
                        Scope(NAMESPACE),
                        role,
                        "hostile replay",
                        principals,
                        Sealer(settings.sealing_keys),
                    )
                return made.key, made.signing_secret
            finally:
                await database.dispose()

        return asyncio.run(create())


def wait_job(client: httpx.Client, job_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        job: dict[str, Any] = client.get(f"/v1/jobs/{job_id}").json()
        if job["state"] in ("succeeded", "failed", "cancelled"):
            return job
        time.sleep(0.3)
    raise SystemExit(f"job {job_id} did not finish")


def upload(client: httpx.Client, name: str, data: bytes, media: str, **form: str) -> Any:
    return client.post("/v1/documents", files={"file": (name, data, media)}, data=form)


def attack_1(writer: httpx.Client) -> None:
    for name, data in (("gif.png", gif_claiming(1, 1)), ("bomb.png", gif_claiming(20000, 20000))):
        reply = upload(writer, name, data, "image/png")
        job = wait_job(writer, reply.json()["job_id"])
        page = writer.get(f"/v1/documents/{reply.json()['document_id']}/pages/1/image")
        held = job["state"] == "failed" and 400 <= page.status_code < 500
        verdict(
            f"1. page picture of {name} (GIF bytes)",
            held,
            f"job {job['state']}, page {page.status_code}",
        )


def attack_2(up_log: str, anonymous: httpx.Client) -> None:
    link = re.search(r"(http://\S+/#\S+)", up_log)
    shown = link.group(1) if link else ""
    carries_key = "#key=" in shown or "rsk_" in shown
    code = shown.partition("#code=")[2]
    first = anonymous.post("/v1/sign-in", json={"code": code}) if code else None
    second = anonymous.post("/v1/sign-in", json={"code": code}) if code else None
    held = (
        not carries_key
        and first is not None
        and first.status_code == 200
        and second is not None
        and second.status_code >= 400
    )
    statuses = f"{first.status_code if first else '-'} then {second.status_code if second else '-'}"
    verdict(
        "2. make run's link: a key in a URL, or a code used twice", held, f"exchanges: {statuses}"
    )


def attack_3(writer: httpx.Client) -> None:
    def chunks(total: int) -> Iterator[bytes]:
        yield b'{"query": "x", "padding": "'
        for _ in range(total // 65536):
            yield b"a" * 65536
        yield b'"}'

    for path, size in (("/v1/search", 6 * 1024 * 1024), ("/v1/documents", 160 * 1024 * 1024)):
        try:
            reply = writer.post(
                path, content=chunks(size), headers={"Content-Type": "application/json"}
            )
            answer = str(reply.status_code)
        except (httpx.RemoteProtocolError, httpx.WriteError):
            # Far past its limit a body is answered at once and the connection cut;
            # a client still sending may see the cut before the 413.
            answer = "cut off while sending"
        held = answer in ("413", "cut off while sending")
        verdict(f"3. chunked {size >> 20} MiB JSON body to {path}", held, answer)


def attack_4(stack: Stack, writer: httpx.Client, questions: int) -> None:
    wait_job(writer, upload(writer, "pay.md", PAY.encode(), "text/markdown").json()["job_id"])
    hr = httpx.Client(base_url=stack.url, headers=bearer(stack.key(Role.READ, ("group:hr",))[0]))
    eng = httpx.Client(base_url=stack.url, headers=bearer(stack.key(Role.READ, ("group:eng",))[0]))
    asked, new = ASKED[:questions], NEW[:questions]
    for question in asked:
        hr.post("/v1/search", json={"query": question})
    times: dict[str, list[float]] = {"asked": [], "new": []}
    for one, other in zip(asked, new, strict=True):
        for kind, question in (("asked", one), ("new", other)):
            started = time.perf_counter()
            reply = eng.post("/v1/search", json={"query": question})
            times[kind].append((time.perf_counter() - started) * 1000)
            assert reply.status_code == 200, reply.text
    asked_ms, new_ms = statistics.median(times["asked"]), statistics.median(times["new"])
    held = abs(asked_ms - new_ms) <= 1.0
    verdict(
        f"4. eng's search time, {questions} hr-asked vs {questions} new",
        held,
        f"medians {asked_ms:.2f} ms vs {new_ms:.2f} ms",
    )


def attack_5(stack: Stack, writer: httpx.Client) -> None:
    for name, public in (("open.md", True), ("numeric.md", 1)):
        text = f"# {name}\n\nThe quarterly wombat census counts {name} burrows.\n".encode()
        reply = upload(writer, name, text, "text/markdown", metadata=json.dumps({"public": public}))
        wait_job(writer, reply.json()["job_id"])
    found = writer.post("/v1/search", json={"query": "wombat census", "top_k": 10}).json()
    ids = {hit["chunk"]["source"]: hit["chunk"]["id"] for hit in found["results"]}
    delegate_key, _ = stack.key(Role.DELEGATE)
    issued = httpx.post(
        f"{stack.url}/v1/restricted-keys",
        headers=bearer(delegate_key),
        json={
            "principals": ["user:kim"],
            "expires_in": 600,
            "filters": {"metadata": {"public": True}},
        },
    ).json()["key"]
    kim = httpx.Client(base_url=stack.url, headers=bearer(issued))
    chunk = kim.get(f"/v1/chunks/{ids['numeric.md']}").status_code
    sources = kim.get("/v1/sources").json()["sources"]
    held = chunk == 404 and "numeric.md" not in sources
    verdict("5. a filter on true, a document tagged 1", held, f"chunk {chunk}, sources {sources}")


def attack_6(stack: Stack) -> None:
    _, secret = stack.key(Role.DELEGATE)
    with psycopg.connect(stack.owner_url(), autocommit=True) as owner:
        owner.execute("SET ROLE ragsage_system")
        key_ids = [
            r[0] for r in owner.execute("SELECT id FROM ragsage_api_keys WHERE role = 'delegate'")
        ]
    with psycopg.connect(stack.owner_url("ragsage_app"), autocommit=True) as app:
        handed = [
            str(
                app.execute(
                    "SELECT * FROM ragsage_find_signer(%s, %s)", (NAMESPACE, key_id)
                ).fetchone()
            )
            for key_id in key_ids
        ]
    held = all(secret not in row and "rss_" not in row for row in handed)
    verdict(
        "6. signing secrets via ragsage_find_signer as the app role",
        held,
        f"{len(handed)} delegate keys, none in plaintext" if held else "plaintext returned",
    )


def lookups(stack: Stack) -> int:
    with psycopg.connect(stack.owner_url(), autocommit=True) as owner:
        owner.execute("SELECT pg_stat_clear_snapshot()")
        row = owner.execute(
            "SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions WHERE funcname = ANY(%s)",
            (list(LOOKUPS),),
        ).fetchone()
    return int(row[0]) if row else 0


def settled_lookups(stack: Stack) -> int:
    """Once idle backends have reported their counts (Postgres does so within ~10 s)."""
    time.sleep(12)
    return lookups(stack)


def attack_7(stack: Stack) -> None:
    with psycopg.connect(stack.owner_url(), autocommit=True) as owner:
        owner.execute("ALTER SYSTEM SET track_functions = 'all'")
        owner.execute("SELECT pg_reload_conf()")
    time.sleep(1)
    delegate_key, _ = stack.key(Role.DELEGATE)
    parent = delegate_key.split("_")[1]
    before = settled_lookups(stack)
    statuses: Counter[int] = Counter()
    started = time.perf_counter()
    with httpx.Client(base_url=stack.url) as client:
        for credential in made_up_credentials(1000, NAMESPACE, parent):
            statuses[client.get("/v1/sources", headers=bearer(credential)).status_code] += 1
    seconds = time.perf_counter() - started
    spent = settled_lookups(stack) - before
    budget = 30  # RAGSAGE_RATE_LIMIT_UNKNOWN_KEYS's default, per minute
    held = spent <= budget * (1 + int(seconds // 60)) and set(statuses) <= {401, 429}
    verdict(
        "7. 1,000 made-up credentials of every shape",
        held,
        f"{dict(statuses)} in {seconds:.1f} s, {spent} lookups",
    )


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--questions", type=int, default=12)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ragsage-hostile-") as tmp:
        stack = Stack(Path(tmp) / "stack", args.port)
        up_log = stack.start()
        try:
            writer = httpx.Client(base_url=stack.url, headers=bearer(stack.admin_key), timeout=120)
            anonymous = httpx.Client(base_url=stack.url, timeout=60)
            attack_1(writer)
            attack_2(up_log, anonymous)
            attack_3(writer)
            attack_4(stack, writer, args.questions)
            attack_5(stack, writer)
            attack_6(stack)
            attack_7(stack)
        finally:
            stack.stop()
    print("all seven held" if not broken else f"broken: {', '.join(broken)}")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
