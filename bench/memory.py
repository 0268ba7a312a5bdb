"""Memory of a long-running API: RSS after 1,000 answers, and again after 10,000.

    python bench/memory.py [--first 1000] [--total 10000] [--clients 4]

An embedded Postgres and Redis start in a temporary folder; the bundled
samples (``examples/docs``: PDF, DOCX, PPTX, HTML, Markdown, text) are ingested
through the queue by one worker, and the API is served by gunicorn (2 workers
x 8 threads) on offline defaults (hashing embedder, overlap reranker,
extractive reader, term rewriter).  ``--clients`` threads then ask
``POST /v1/query`` questions built from the samples' own sentences, each one
different, some as follow-ups with a conversation.  After ``--first`` answers
and after ``--total`` the resident memory of each API worker process is read
from ``/proc``; printed are both readings and the growth between them.
Nothing a server keeps per answer should make that growth track the count.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import re
import sys
import threading
import time
from pathlib import Path

import httpx
from api_search import new_key
from real_corpus import ingest
from sqlalchemy import create_engine, text
from stack import local_stack, serve_api

from ragsage.core.scopes import Scope
from ragsage.jobs.enqueue import Enqueuer

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "examples" / "docs"
NAMESPACE = "memory"
_WORDS = re.compile(r"[A-Za-z][A-Za-z-]{3,}")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def api_workers(master: int) -> list[int]:
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    return sorted(int(pid) for pid in children)


def questions(owner_url: str) -> itertools.cycle[dict[str, object]]:
    """Questions from the stored chunks' words: every body differs, a third are follow-ups."""
    engine = create_engine(owner_url.replace("postgresql://", "postgresql+psycopg://", 1))
    with engine.connect() as connection:
        texts = [row[0] for row in connection.execute(text("SELECT text FROM ragsage_chunks"))]
    engine.dispose()
    words = sorted({word.lower() for body in texts for word in _WORDS.findall(body)})
    if len(words) < 20:
        raise SystemExit(f"the samples gave {len(words)} distinct words; ingestion failed?")
    bodies: list[dict[str, object]] = []
    for n in range(997):  # a prime, so the cycle never lines up with the client count
        picked = [words[(n * step) % len(words)] for step in (7, 31, 101, 211)]
        body: dict[str, object] = {"question": f"what does it say about {' and '.join(picked)}?"}
        if n % 3 == 0:
            body["history"] = [
                {"role": "user", "content": f"tell me about {picked[0]}"},
                {"role": "assistant", "content": f"{picked[0]} is covered in the guide."},
            ]
        bodies.append(body)
    return itertools.cycle(bodies)


def ask(url: str, key: str, count: int, clients: int, bodies: itertools.cycle) -> float:  # type: ignore[type-arg]
    """Send ``count`` questions from ``clients`` threads; seconds taken. Any failure stops."""
    lock = threading.Lock()
    left = [count]
    failures: list[str] = []

    def client() -> None:
        with httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60
        ) as http:
            while True:
                with lock:
                    if left[0] == 0 or failures:
                        return
                    left[0] -= 1
                    body = next(bodies)
                response = http.post("/v1/query", json=body)
                if response.status_code != 200 or "answer" not in response.json():
                    failures.append(f"{response.status_code}: {response.text[:200]}")

    started = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise SystemExit(f"a question failed: {failures[0]}")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description="API memory over many answers")
    parser.add_argument("--first", type=int, default=1000)
    parser.add_argument("--total", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args()
    samples = sorted(path for path in SAMPLES.iterdir() if path.is_file())
    with local_stack("memory") as stack:
        settings = stack.settings
        migrator = Enqueuer(settings)
        migrator.run(migrator.database.migrate())
        migrator.close()
        ingest(settings, samples, SAMPLES, 1, stack.directory / "worker.log", NAMESPACE)
        key = asyncio.run(new_key(settings, Scope(NAMESPACE)))
        bodies = questions(stack.owner_url)
        server, url = serve_api(settings, stack.directory / "api.log")
        try:
            workers = api_workers(server.pid)
            ask(url, key, 50, args.clients, bodies)  # warm both workers' pools and caches
            start = {pid: rss_mb(pid) for pid in workers}
            took = ask(url, key, args.first, args.clients, bodies)
            first = {pid: rss_mb(pid) for pid in workers}
            took += ask(url, key, args.total - args.first, args.clients, bodies)
            last = {pid: rss_mb(pid) for pid in workers}
        finally:
            server.terminate()
            server.wait(30)
    print(f"{args.total:,} answers over HTTP in {took:.0f} s ({args.total / took:.0f}/s)")
    for pid in workers:
        print(
            f"  API worker {pid}: RSS {start[pid]:.1f} MB warm, {first[pid]:.1f} MB after "
            f"{args.first:,}, {last[pid]:.1f} MB after {args.total:,}"
        )
    growth = sum(last.values()) - sum(first.values())
    print(
        f"growth from {args.first:,} to {args.total:,} answers, all workers: {growth:+.1f} MB "
        f"({'under' if growth < 10 else 'NOT under'} 10 MB)"
    )


if __name__ == "__main__":
    sys.exit(main())
