"""Embedding throughput: the local MiniLM model against the hashing fake.

    python bench/embed.py [--short 1000] [--long 200] [--long-words 400] [--batch-size 32]

Embeds seeded, generated texts — short ones (a sentence, like a query) and long
ones (``--long-words`` words, about a 512-token chunk, so the local model embeds
each in several 256-piece windows) — through ``LocalEmbedder`` and
``FakeEmbedder`` and prints texts/s for each.  The local model needs
``ragsage[local]``; without it only the fake is measured.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import time
from collections.abc import Sequence

from ragsage.core.errors import ConfigurationError
from ragsage.core.ports import Embedder
from ragsage.testing import FakeEmbedder

VOCABULARY = (
    "invoice ledger refund policy warranty shipment warehouse carrier customs tariff "
    "contract clause renewal notice payment schedule audit compliance retention backup "
    "encryption access role namespace tenant query index vector lexical ranking answer "
    "citation source chunk heading table page scan vision model embedding latency "
    "the a of to and in is for on with as by at from that this be are was it or"
).split()


def texts(rng: random.Random, count: int, words: tuple[int, int]) -> list[str]:
    return [" ".join(rng.choices(VOCABULARY, k=rng.randint(*words))) + "." for _ in range(count)]


async def measure(embedder: Embedder, batch: Sequence[str], batch_size: int) -> float:
    """Texts per second, embedding ``batch`` in calls of ``batch_size`` like ingestion does."""
    await embedder.embed(batch[:batch_size])  # warm-up: first-call allocations
    started = time.perf_counter()
    for first in range(0, len(batch), batch_size):
        await embedder.embed(batch[first : first + batch_size])
    return len(batch) / (time.perf_counter() - started)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", type=int, default=1000)
    parser.add_argument("--long", type=int, default=200)
    parser.add_argument("--long-words", type=int, default=400)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()

    rng = random.Random(7)
    corpora = {
        f"{args.short} short (8-16 words)": texts(rng, args.short, (8, 16)),
        f"{args.long} long ({args.long_words} words)": texts(
            rng, args.long, (args.long_words, args.long_words)
        ),
    }
    embedders: dict[str, Embedder] = {"hashing fake (1024-d)": FakeEmbedder(dimension=1024)}
    try:
        from ragsage.adapters.providers import LocalEmbedder

        started = time.perf_counter()
        embedders["local all-MiniLM-L6-v2 int8"] = LocalEmbedder(batch_size=args.batch_size)
        print(f"local model loaded in {time.perf_counter() - started:.2f} s")
    except ConfigurationError as exc:
        print(f"local model skipped: {exc}")

    print(f"{os.cpu_count()} CPUs; batches of {args.batch_size} texts")
    print(f"{'embedder':32} {'corpus':28} {'texts/s':>10}")
    for name, embedder in embedders.items():
        for corpus, batch in corpora.items():
            rate = await measure(embedder, batch, args.batch_size)
            print(f"{name:32} {corpus:28} {rate:10.1f}")


if __name__ == "__main__":
    asyncio.run(main())
