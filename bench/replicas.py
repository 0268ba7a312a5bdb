"""What a read replica costs a search, idle and while the primary ingests, on real pages.

    python bench/replicas.py --peer-script PATH [--doc-root /usr/share/doc] [--queries 100]
                             [--rounds 5]

Debian's HTML pages (the 242 of ``bench/real_corpus.py``) are ingested through the
queue into an embedded Postgres; ``pg_basebackup`` then makes a hot standby of it
on the same machine.  Two runtimes search the same sentences, sampled from the
pages by the peer's benchmark script (given with ``--peer-script``, as
``bench/real_corpus.py`` takes it), hybrid, top 10, in alternating rounds so
drift hits both alike:

* **primary alone**: no replica configured, the default;
* **with a replica**: every search marked as the API marks it, so the standby
  answers it while it is in rotation (within ``RAGSAGE_REPLICA_MAX_LAG`` of the
  primary), else the primary does.

Then the same pair while two worker processes ingest the pages again into a
second namespace, which keeps the primary writing: printed are the p50/p95 of
each, and the share of searches each server answered.

Both servers share this machine's two cores, so a replica here adds no capacity:
the figures are the price of the routing (two small position reads per search,
and the wait for replay), not the gain of a second machine.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import statistics
import threading
import time
from collections import Counter
from pathlib import Path

import corpus_search
import site_chrome
from real_corpus import NAMESPACE, ingest
from stack import local_stack

from ragsage.adapters.postgres.replicas import PRIMARY, ReadLog, replica_reads
from ragsage.core.scopes import Scope
from ragsage.jobs.enqueue import Enqueuer
from ragsage.query import RetrievalOptions
from ragsage.runtime import build_runtime
from ragsage.settings import Settings

TOP_K = 10


async def search_rounds(
    alone: Settings,
    replicated: Settings,
    sentences: list[str],
    *,
    rounds: int,
    until: threading.Event | None = None,
) -> tuple[dict[str, list[float]], Counter[str]]:
    """Latencies (ms) of each setup over alternating rounds, and who answered the marked ones."""
    runtimes = {"primary alone": build_runtime(alone), "with a replica": build_runtime(replicated)}
    engines = {name: runtime.query_engine() for name, runtime in runtimes.items()}
    scope, options = Scope(NAMESPACE), RetrievalOptions(top_k=TOP_K)
    times: dict[str, list[float]] = {name: [] for name in engines}
    servers: Counter[str] = Counter()
    for sentence in sentences[:20]:  # warm both servers' caches and both pools
        await engines["primary alone"].search(scope, sentence, options)
        with replica_reads():
            await engines["with a replica"].search(scope, sentence, options)
    number = 0
    while True:
        order = list(engines) if number % 2 == 0 else list(reversed(engines))
        for name in order:
            for sentence in sentences:
                log = ReadLog()
                started = time.perf_counter()
                if name == "with a replica":
                    with replica_reads(log):
                        await engines[name].search(scope, sentence, options)
                    servers[log.servers[-1] if log.servers else PRIMARY] += 1
                else:
                    await engines[name].search(scope, sentence, options)
                times[name].append((time.perf_counter() - started) * 1000)
        number += 1
        if until.is_set() if until is not None else number >= rounds:
            break
    for runtime in runtimes.values():
        await runtime.aclose()
    return times, servers


def report(title: str, times: dict[str, list[float]], servers: Counter[str]) -> None:
    print(title)
    for name, values in times.items():
        print(
            f"  {name:<16} p50 {statistics.median(values):6.2f} ms  "
            f"p95 {corpus_search.percentile(values, 0.95):6.2f} ms  ({len(values)} searches)"
        )
    ratio = statistics.median(times["with a replica"]) / statistics.median(times["primary alone"])
    total = sum(servers.values())
    shares = ", ".join(f"{server} {count / total:.1%}" for server, count in servers.most_common())
    print(f"  with a replica / primary alone p50: {ratio:.2f}; answered by: {shares}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--doc-root", type=Path, default=Path("/usr/share/doc"))
    parser.add_argument(
        "--peer-script",
        type=Path,
        required=True,
        help="the peer's benchmark script, whose sampled sentences are the queries",
    )
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    pages = site_chrome.html_pages(args.doc_root)
    sentences = corpus_search.query_sentences(pages, args.peer_script)[: args.queries]
    print(f"{len(pages)} pages under {args.doc_root}; {len(sentences)} sampled sentences")
    unlimited = {
        f"rate_limit_{kind}_{who}": "none"
        for kind in ("search", "other")
        for who in ("key", "namespace")
    }
    with local_stack("replicas", **unlimited) as stack:
        alone = stack.settings
        migrator = Enqueuer(alone)
        migrator.run(migrator.database.migrate())
        migrator.close()
        wall = ingest(alone, pages, args.doc_root, 2, stack.directory / "worker.log")[0]
        print(f"ingested in {wall:.1f} s")
        assert stack.postgres is not None
        started = time.perf_counter()
        standby = stack.postgres.standby(stack.directory / "standby")
        print(f"standby made by pg_basebackup and started in {time.perf_counter() - started:.1f} s")
        try:
            replicated = dataclasses.replace(
                alone, replica_database_urls=standby.url("replicas", user="ragsage_app")
            )
            times, servers = asyncio.run(
                search_rounds(alone, replicated, sentences, rounds=args.rounds)
            )
            report("idle, hybrid top 10:", times, servers)
            done = threading.Event()
            during: dict[str, tuple[dict[str, list[float]], Counter[str]]] = {}

            def search_while_ingesting() -> None:
                during["figures"] = asyncio.run(
                    search_rounds(alone, replicated, sentences, rounds=1, until=done)
                )

            searcher = threading.Thread(target=search_while_ingesting)
            searcher.start()
            try:
                ingest(
                    alone, pages, args.doc_root, 2, stack.directory / "load.log", "replicas-load"
                )
            finally:
                done.set()
                searcher.join()
            report("while two worker processes ingest the pages again:", *during["figures"])
        finally:
            standby.stop()


if __name__ == "__main__":
    main()
