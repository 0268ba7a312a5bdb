"""Ingestion throughput through the offline engine (fakes), on a generated corpus.

    python bench/ingest_offline.py [--megabytes 6] [--documents 60] [--chunk-size 512]

Generates Markdown documents with headings and paragraphs drawn from a fixed
vocabulary (seeded, so every run ingests the same text), ingests them one by one
through ``IngestionPipeline`` on ``FakeEngineKit`` — parse, classify, chunk,
contextualize, embed, store — and prints chunks/s, MB/s, per-document latency
percentiles and peak resident memory.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import resource
import statistics
import time

from ragsage.core.documents import RawSource
from ragsage.core.scopes import Scope
from ragsage.ingestion import IngestionConfig
from ragsage.testing import FakeEngineKit

VOCABULARY = (
    "invoice ledger refund policy warranty shipment warehouse carrier customs tariff "
    "contract clause renewal notice payment schedule audit compliance retention backup "
    "encryption access role namespace tenant query index vector lexical ranking answer "
    "citation source chunk heading table page scan vision model embedding latency "
    "throughput replica failover quorum snapshot migration schema column constraint "
    "the a of to and in is for on with as by at from that this be are was it or"
).split()


def make_document(rng: random.Random, target_bytes: int, number: int) -> str:
    parts = [f"# Report {number}\n"]
    size = 0
    section = 0
    while size < target_bytes:
        section += 1
        parts.append(f"\n## Section {section}: {' '.join(rng.choices(VOCABULARY[:60], k=3))}\n")
        for _ in range(rng.randint(2, 6)):
            sentences = []
            for _ in range(rng.randint(3, 7)):
                words = rng.choices(VOCABULARY, k=rng.randint(8, 20))
                sentences.append(" ".join(words).capitalize() + ".")
            paragraph = " ".join(sentences)
            parts.append("\n" + paragraph + "\n")
            size += len(paragraph) + 1
    return "".join(parts)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def run(megabytes: float, documents: int, chunk_size: int) -> None:
    rng = random.Random(7)
    per_document = int(megabytes * 1_000_000 / documents)
    corpus = [make_document(rng, per_document, n).encode() for n in range(documents)]
    total_bytes = sum(len(doc) for doc in corpus)
    kit = FakeEngineKit()
    pipeline = kit.ingestion(IngestionConfig(chunk_size=chunk_size, chunk_overlap=chunk_size // 8))
    scope = Scope("bench")

    latencies: list[float] = []
    chunks = 0
    started = time.perf_counter()
    for number, content in enumerate(corpus):
        t0 = time.perf_counter()
        result = await pipeline.ingest(scope, RawSource(content, f"report-{number}.md"))
        latencies.append((time.perf_counter() - t0) * 1000)
        chunks += result.chunks
    elapsed = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    print(f"corpus: {documents} documents, {total_bytes / 1e6:.2f} MB, chunk_size={chunk_size}")
    print(f"chunks: {chunks} in {elapsed:.2f} s")
    print(f"throughput: {chunks / elapsed:,.0f} chunks/s, {total_bytes / 1e6 / elapsed:.2f} MB/s")
    print(
        f"per-document ms: p50 {statistics.median(latencies):.1f}, "
        f"p95 {percentile(latencies, 0.95):.1f}, max {max(latencies):.1f}"
    )
    print(f"peak RSS: {peak_mb:.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=6.0)
    parser.add_argument("--documents", type=int, default=60)
    parser.add_argument("--chunk-size", type=int, default=512)
    args = parser.parse_args()
    asyncio.run(run(args.megabytes, args.documents, args.chunk_size))


if __name__ == "__main__":
    main()
