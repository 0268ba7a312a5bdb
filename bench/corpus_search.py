"""Search latency and the own-sentence rate over a corpus that ``real_corpus.py`` ingested.

Used by ``bench/real_corpus.py`` once the pages are in: the query sentences are
the ones the peer's benchmark script (given with ``--peer-script``) samples from
the same pages (its own HTML-to-text and sampling, loaded from that file), so
both sides ask the very same 200 questions.

Every path gets 20 warm-up queries, then 3 rounds over every query; the paths
are interleaved per query so machine noise falls on all of them alike, and
each figure is the median over the rounds of that round's percentile.

* ``hybrid``: ``QueryEngine.search`` with the default options, top 10;
* ``dense store``: ``PgVectorStore.search`` with the query vector made beforehand;
* ``dense raw SQL``: the statement that store sends, sent by plain psycopg in
  a transaction with the same ``SET LOCAL`` preamble as the app role (RLS on);
* ``HTTP``: ``POST /v1/search`` against gunicorn (2 workers x 8 threads), one client.

The own-sentence rate is the share of query sentences found in one of the
top 10 chunks, compared with Markdown marks taken off and whitespace
collapsed; a sentence cut across a chunk and its neighbour counts as found.
Sentences found nowhere in the stored text are reported apart: those that sit
in a page's navigation (``site_chrome.py``) are left out of the rate, the rest
count as misses.
"""

from __future__ import annotations

import importlib.util
import re
import statistics
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import psycopg
import site_chrome
from sqlalchemy import create_engine, text

from ragsage.adapters.postgres.config import PostgresConfig
from ragsage.adapters.postgres.dense_function import dense_function_name
from ragsage.adapters.postgres.dense_statements import DensePath, dense_statement, vector_literal
from ragsage.adapters.postgres.isolation import isolation_preamble
from ragsage.core.scopes import Scope
from ragsage.query import RetrievalOptions
from ragsage.runtime import Runtime, build_runtime
from ragsage.settings import Settings

QUERIES, SEED, WARMUPS, ROUNDS, TOP_K = 200, 20261130, 20, 3, 10
_INLINE_MARKS = re.compile(r"[*`\\]+|\[([^\]]*)\]\([^)]*\)")
_BLOCK_MARKS = re.compile(r"[#|>]+")
_SPACE = re.compile(r"\s+")
# One search path: the query's number in, the (document, ordinal) of each result out.
Path_ = Callable[[int], Awaitable[list[tuple[str, int]]]]


def peer_module(script: Path) -> ModuleType:
    """The peer's benchmark script, loaded as a module for its text conversion and sampling."""
    if not script.is_file():
        raise SystemExit(f"error: {script}: no such file (--peer-script names the peer's script)")
    spec = importlib.util.spec_from_file_location("peer_bench", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def query_sentences(pages: list[Path], peer_script: Path) -> list[str]:
    peer = peer_module(peer_script)
    docs = [{"text": peer.html_to_text(path.read_bytes())} for path in pages]
    return list(peer.build_queries(docs, QUERIES, SEED))


def flat(body: str) -> str:
    """Text with Markdown marks and link targets taken off and whitespace collapsed."""
    inline = _INLINE_MARKS.sub(lambda m: m.group(1) or "", body)
    return _SPACE.sub(" ", _BLOCK_MARKS.sub(" ", inline)).strip()


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


class Corpus:
    """The stored chunks, flattened, to check where a sentence was found."""

    def __init__(self, owner_url: str, namespace: str) -> None:
        engine = create_engine(owner_url.replace("postgresql://", "postgresql+psycopg://", 1))
        with engine.connect() as connection:
            rows = connection.execute(
                text(
                    "SELECT document_id, ordinal, text FROM ragsage_chunks c WHERE namespace = :n "
                    "AND generation = (SELECT id FROM ragsage_generations g WHERE g.namespace = :n "
                    "AND g.state = 'active') ORDER BY document_id, ordinal"
                ),
                {"n": namespace},
            )
            self.chunks = {(str(d), int(o)): flat(str(t)) for d, o, t in rows}
        engine.dispose()
        documents: dict[str, list[str]] = {}
        for (document, _), body in self.chunks.items():
            documents.setdefault(document, []).append(body)
        self.whole = "\n".join(" ".join(parts) for parts in documents.values())

    def holds(self, sentence: str, document: str, ordinal: int) -> bool:
        here = self.chunks.get((document, ordinal), "")
        before = self.chunks.get((document, ordinal - 1), "")
        after = self.chunks.get((document, ordinal + 1), "")
        return sentence in here or sentence in f"{before} {here}" or sentence in f"{here} {after}"


def navigation_sentences(doc_root: Path, pages: list[Path], sentences: list[str]) -> set[str]:
    chrome = site_chrome.chrome_lines(doc_root, pages)
    lines = [flat(line) for menus in chrome.values() for line in menus.lines]
    return {s for s in sentences if any(s in line or line in s for line in lines if len(line) > 3)}


def own_sentence_rate(
    corpus: Corpus, sentences: list[str], found: list[list[tuple[str, int]]], nav: set[str]
) -> tuple[float, int, int]:
    """(rate, sentences in navigation only, sentences absent for another reason)."""
    hits = counted = navigation = absent = 0
    for sentence, results in zip(sentences, found, strict=True):
        wanted = flat(sentence)
        if wanted not in corpus.whole:
            if sentence in nav:
                navigation += 1
                continue
            absent += 1
        counted += 1
        hits += any(corpus.holds(wanted, document, ordinal) for document, ordinal in results)
    return (hits / counted if counted else 0.0), navigation, absent


class RawDense:
    """What the dense store sends, sent by psycopg as the app role: the floor for that path.

    A ``walk`` or ``exact`` search calls the width's search function (storage
    ``dense_function``), as the store does; a ``choose`` one sends the statement.
    """

    def __init__(
        self,
        config: PostgresConfig,
        settings: Settings,
        namespace: str,
        generation: int,
        path: DensePath,
    ) -> None:
        self.preamble = isolation_preamble(config, Scope(namespace))[0]
        # As the service connects: no server-side prepared statements.
        self.connection = psycopg.connect(
            settings.app_database_url or settings.database_url, prepare_threshold=None
        )
        self.generation, self.dim = generation, settings.embedding_dim
        self.namespace = namespace
        if path == "choose":
            sql, _ = dense_statement(self.dim, None, namespace=namespace, path=path)
            self.key = 5
        else:
            exact = "true" if path == "exact" else "false"
            sql = (
                f"SELECT * FROM {dense_function_name(self.dim)}(CAST(:query AS vector), :k, :k, "
                f"{exact}, NULL)"
            )
            self.key = 4
        self.sql = re.sub(r"(?<!:):(\w+)", r"%(\1)s", sql)

    def search(self, vector: str) -> list[tuple[str, int]]:
        with self.connection.transaction(), self.connection.cursor() as cursor:
            cursor.execute(self.preamble.sql)
            cursor.execute(
                self.sql,
                {
                    "query": vector,
                    "generation": self.generation,
                    "k": TOP_K,
                    "namespace": self.namespace,
                },
            )
            key = self.key
            return [(str(row[key]), int(row[key + 1])) for row in cursor.fetchall() if row[key]]

    def close(self) -> None:
        self.connection.close()


def summary(rounds: list[list[float]]) -> dict[str, float]:
    return {
        name: statistics.median(percentile(r, share) for r in rounds)
        for name, share in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))
    }


def line(label: str, figures: dict[str, float], extra: str = "") -> str:
    return (
        f"  {label:<28} p50 {figures['p50']:6.2f} ms  p95 {figures['p95']:6.2f} ms  "
        f"p99 {figures['p99']:6.2f} ms{extra}"
    )


async def measure(
    settings: Settings,
    namespace: str,
    sentences: list[str],
    http: tuple[str, str] | None,
) -> tuple[dict[str, dict[str, float]], dict[str, list[list[tuple[str, int]]]]]:
    """Latency figures per path, and each path's results from the last round."""
    scope = Scope(namespace)
    runtime: Runtime = build_runtime(settings)
    engine = runtime.query_engine()
    store = runtime.stores()[0]
    vectors = [tuple(v) for v in await runtime.embedder.embed(sentences, input_type="query")]
    async with runtime.database.session(scope) as session:
        generation = int(
            await session.scalar(text("SELECT id FROM ragsage_generations WHERE state = 'active'"))
            or 0
        )
    # The store decides once how to search the namespace and then sends that
    # path's statement; the raw figure sends the same one.
    await store.search(scope, vectors[0], k=TOP_K)
    path = store.paths.path(namespace, None)
    raw = RawDense(runtime.database.config, settings, namespace, generation, path)
    literals = [vector_literal(v) for v in vectors]
    client = (
        httpx.Client(base_url=http[0], headers={"Authorization": f"Bearer {http[1]}"}, timeout=60)
        if http
        else None
    )

    def ids(hits: Any) -> list[tuple[str, int]]:
        return [(h.chunk.document_id, h.chunk.ordinal) for h in hits]

    async def over_http(i: int) -> list[tuple[str, int]]:
        assert client is not None
        response = client.post("/v1/search", json={"query": sentences[i], "top_k": TOP_K})
        response.raise_for_status()
        results = response.json()["results"]
        return [(r["chunk"]["document_id"], r["chunk"]["ordinal"]) for r in results]

    async def search(i: int, options: RetrievalOptions) -> list[tuple[str, int]]:
        return ids((await engine.search(scope, sentences[i], options)).hits)

    async def dense(i: int) -> list[tuple[str, int]]:
        found = await store.search(scope, vectors[i], k=TOP_K)
        return [(c.chunk.document_id, c.chunk.ordinal) for c in found]

    async def raw_dense(i: int) -> list[tuple[str, int]]:
        return raw.search(literals[i])

    paths: dict[str, Path_] = {
        "hybrid (default)": lambda i: search(i, RetrievalOptions(top_k=TOP_K)),
        "keyword only": lambda i: search(i, RetrievalOptions(top_k=TOP_K, hybrid_alpha=0.0)),
        "dense store": dense,
        "dense raw SQL": raw_dense,
    }
    if client is not None:
        paths["HTTP /v1/search x1"] = over_http
    rounds, last = await interleaved(paths, len(sentences))
    raw.close()
    if client is not None:
        client.close()
    await runtime.aclose()
    return {name: summary(times) for name, times in rounds.items()}, last


async def interleaved(
    paths: dict[str, Path_], count: int
) -> tuple[dict[str, list[list[float]]], dict[str, list[list[tuple[str, int]]]]]:
    """Per-round latencies of every path, rotating which path goes first per query."""
    names = list(paths)
    for i in range(WARMUPS):
        for name in names:
            await paths[name](i % count)
    rounds: dict[str, list[list[float]]] = {name: [] for name in names}
    last: dict[str, list[list[tuple[str, int]]]] = {name: [] for name in names}
    for number in range(ROUNDS):
        times: dict[str, list[float]] = {name: [] for name in names}
        for i in range(count):
            for name in names[i % len(names) :] + names[: i % len(names)]:
                started = time.perf_counter()
                got = await paths[name](i)
                times[name].append((time.perf_counter() - started) * 1000)
                if number == ROUNDS - 1:
                    last[name].append(got)
        for name in names:
            rounds[name].append(times[name])
    return rounds, last


async def under_load(
    settings: Settings,
    namespace: str,
    sentences: list[str],
    *,
    passes: int = 1,
    until: threading.Event | None = None,
) -> list[float]:
    """Hybrid p50 of each pass over ``sentences``, all through one runtime.

    ``passes`` passes, or with ``until`` as many as run before it is set (at
    least one): the run during ingestion and the idle run it is compared with
    search alike, on connections that stay open.
    """
    runtime = build_runtime(settings)
    engine = runtime.query_engine()
    medians: list[float] = []
    while True:
        times = []
        for sentence in sentences:
            started = time.perf_counter()
            await engine.search(Scope(namespace), sentence, RetrievalOptions(top_k=TOP_K))
            times.append((time.perf_counter() - started) * 1000)
        medians.append(statistics.median(times))
        if until.is_set() if until is not None else len(medians) >= passes:
            break
    await runtime.aclose()
    return medians


def peer_figures(results: dict[str, Any]) -> dict[str, dict[str, float]]:
    query = results.get("query") or {}
    out = {}
    for name in ("li_hybrid", "li_dense", "raw_dense_li_table", "raw_sparse_li_table"):
        rounds = (query.get("rounds") or {}).get(name) or []
        if rounds:
            out[name] = {
                share: statistics.median(r[f"{share}_ms"] for r in rounds)
                for share in ("p50", "p95", "p99")
            }
    return out
