"""What checking a restricted key adds to an HTTP search, on real text.

    python bench/restricted_keys.py [--share 0.2] [--queries 200] [--passes 5]

Debian's HTML documentation (the 242 pages ``real_corpus.py`` ingests) goes in
through the queue (2 worker processes, hashing embedder, offline defaults);
documents are then drawn at random (seed 47) until they hold ``--share`` of
the chunks, and get the list ``group:sales``, the others ``group:hr``
(``access_lists.assign_lists``).  The API runs under gunicorn (2 workers x 8
threads, rate limits far above what one client sends, so every request is
counted but none refused).  One client sends ``POST /v1/search`` (the default
options, top 10) with sentences of the readable chunks as queries, the same
query with each credential in turn (``corpus_search.interleaved``: 20 warm-up
queries, 3 rounds, the first credential rotating per query):

* an API key bound to ``group:sales`` (looked up in Postgres on every request,
  beside the search);
* a restricted key for ``group:sales``, issued by ``POST /v1/restricted-keys``
  under an unbound delegate key (checked against its parent as last read);
* the same with ``filters`` naming every readable source, so the filters are
  applied too (the results are the same documents).

Each of ``--passes`` passes prints p50/p95/p99 of each credential; then the
median over the passes of each restricted key's p50 less the API key's (the
machine's noise moves single passes by a few tenths of a millisecond), and
what ``verify`` alone costs in this process (PyJWT's HS256 check and the
claims; a key presented again within the recheck is not parsed again).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import timeit
from pathlib import Path

import httpx
from access_lists import listed_corpus, real_files, sample_queries
from corpus_search import interleaved, line, summary
from sqlalchemy import text
from stack import local_stack, serve_api

from ragsage.adapters.postgres.keys import create_key
from ragsage.adapters.sealing import Sealer
from ragsage.core.keys import NewKey, Role, Signer
from ragsage.core.scopes import Scope
from ragsage.management.restricted_keys import grant_of, mint, verify
from ragsage.runtime import build_database

NAMESPACE = "corpus"
SALES = ["group:sales"]
LIMIT = "100000/second"


async def keys(settings) -> tuple[NewKey, NewKey]:
    database = build_database(settings)
    scope = Scope(NAMESPACE)
    try:
        async with database.session(scope) as session:
            bound = await create_key(session, scope, Role.READ, "bench", SALES)
            sealer = Sealer(settings.sealing_keys)
            delegate = await create_key(session, scope, Role.DELEGATE, "bench", (), sealer)
    finally:
        await database.dispose()
    return bound, delegate


async def sources_of(settings, readable: set[str]) -> list[str]:
    database = build_database(settings)
    try:
        async with database.session(Scope(NAMESPACE)) as session:
            found = await session.scalars(
                text("SELECT DISTINCT source FROM ragsage_documents WHERE id = ANY(:d)"),
                {"d": sorted(readable)},
            )
            return sorted(found)
    finally:
        await database.dispose()


def verify_cost(delegate: NewKey) -> float:
    """Microseconds one ``verify`` takes here: the signature and the claims, no I/O."""
    signer = Signer(NAMESPACE, delegate.id, None, delegate.signing_secret)
    token = mint(delegate.id, NAMESPACE, delegate.signing_secret, grant_of(SALES, 600))
    runs = 2000
    spent = timeit.timeit(lambda: verify(token, signer, max_lifetime=86400), number=runs)
    return spent / runs * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--share", type=float, default=0.2)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--passes", type=int, default=5, help="interleaved passes; medians")
    args = parser.parse_args()
    limits = {
        f"rate_limit_{kind}_{per}": LIMIT
        for kind in ("search", "other")
        for per in ("key", "namespace")
    }
    with local_stack("restricted_keys", **limits) as stack, tempfile.TemporaryDirectory() as tmp:
        settings = stack.settings
        readable = listed_corpus(stack, real_files(0), args.share, args.processes, Path(tmp))
        queries = asyncio.run(sample_queries(settings, readable, args.queries))
        sources = asyncio.run(sources_of(settings, readable))
        bound, delegate = asyncio.run(keys(settings))
        process, url = serve_api(settings, Path(tmp) / "api.log")
        try:
            with httpx.Client(base_url=url, timeout=30) as client:
                issuing = {"Authorization": f"Bearer {delegate.key}"}
                plain = {"principals": SALES, "expires_in": 3600}
                filtered = {**plain, "filters": {"sources": sources}}
                restricted = client.post("/v1/restricted-keys", json=plain, headers=issuing)
                narrowed = client.post("/v1/restricted-keys", json=filtered, headers=issuing)
                credentials = {
                    "API key (bound)": bound.key,
                    "restricted key": restricted.json()["key"],
                    "restricted key + filters": narrowed.json()["key"],
                }

                def path(credential: str):
                    headers = {"Authorization": f"Bearer {credential}"}

                    async def run(i: int) -> list[tuple[str, int]]:
                        reply = client.post(
                            "/v1/search", json={"query": queries[i], "top_k": 10}, headers=headers
                        )
                        reply.raise_for_status()
                        return [
                            (r["chunk"]["document_id"], r["chunk"]["ordinal"])
                            for r in reply.json()["results"]
                        ]

                    return run

                paths = {name: path(credential) for name, credential in credentials.items()}
                differences: dict[str, list[float]] = {}
                for number in range(1, args.passes + 1):
                    started = time.perf_counter()
                    rounds, last = asyncio.run(interleaved(paths, len(queries)))
                    spent = time.perf_counter() - started
                    figures = {name: summary(times) for name, times in rounds.items()}
                    print(
                        f"pass {number}: {len(queries)} queries x 3 rounds over HTTP "
                        f"({spent:.0f} s), figures in ms:"
                    )
                    for name, figure in figures.items():
                        print(line(name, figure))
                    base = figures["API key (bound)"]["p50"]
                    for name in ("restricted key", "restricted key + filters"):
                        differences.setdefault(name, []).append(figures[name]["p50"] - base)
                    same = sum(
                        a == b
                        for a, b in zip(
                            last["API key (bound)"], last["restricted key"], strict=True
                        )
                    )
                    print(f"  same results as the API key's: {same} of {len(queries)}")
        finally:
            process.terminate()
            process.wait(30)
        for name, spread in differences.items():
            each = ", ".join(f"{d:+.3f}" for d in spread)
            print(
                f"{name}: p50 {statistics.median(spread):+.3f} ms against the API key "
                f"(median of {len(spread)} passes: {each})"
            )
        print(f"verify() alone, in this process: {verify_cost(delegate):.0f} µs")


if __name__ == "__main__":
    main()
