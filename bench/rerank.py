"""What the offline reranker costs per answer, on real manuals.

    python bench/rerank.py [--dataset .ragsage/eval/plain-words] [--candidates 50]

Reads the plain-words set's manuals (``python -m evaluation_data plainwords``) with
the heuristic parser, cuts their text into passages of about a default chunk
(350 words), and for each of the set's questions reranks ``--candidates``
passages: those of the question's own manual first, then others drawn with a
fixed seed.  Prints p50/p95 milliseconds per rerank for the shipped reranker
(sentence scoring) and, beside it in the same run, for plain term coverage
(the signal it replaced), which is the floor any lexical reranker pays for
reading the text.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
from pathlib import Path

from ragsage.adapters.parsing import HeuristicBackend
from ragsage.core.chunks import Chunk, ScoredChunk
from ragsage.core.documents import RawSource
from ragsage.evaluation.datasets import Dataset, load_dataset
from ragsage.testing import FakeReranker
from ragsage.testing.models import overlap_score

PASSAGE_WORDS = 350


def pools(dataset: Dataset, count: int) -> list[tuple[str, list[ScoredChunk]]]:
    """Each question with ``count`` passages: its own manual's first, then others at random."""
    parser = HeuristicBackend()
    by_document: dict[str, list[str]] = {}
    for document in dataset.documents:
        source = RawSource(document.content, document.filename, document.media_type)
        split = parser.parse(source).full_text.split()
        by_document[document.id] = [
            " ".join(split[start : start + PASSAGE_WORDS])
            for start in range(0, len(split), PASSAGE_WORDS)
        ]
    everything = [text for texts in by_document.values() for text in texts]
    rng = random.Random(7)
    out = []
    for question in dataset.questions:
        own = [text for doc in question.relevant for text in by_document.get(doc, [])][:count]
        texts = own + rng.sample(everything, count - len(own))
        candidates = [
            ScoredChunk(
                chunk=Chunk(id=f"c{i}", document_id="d", ordinal=i, text=text, embed_text=text),
                score=1.0 - i / count,
            )
            for i, text in enumerate(texts)
        ]
        out.append((question.text, candidates))
    return out


def timed(work: list[tuple[str, list[ScoredChunk]]], rerank: bool) -> list[float]:
    reranker = FakeReranker()
    times = []
    for question, candidates in work:
        started = time.perf_counter()
        if rerank:
            asyncio.run(reranker.rerank(question, candidates, top_k=len(candidates)))
        else:
            [overlap_score(question, c.chunk.text) for c in candidates]
        times.append((time.perf_counter() - started) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, default=Path(".ragsage/eval/plain-words"))
    parser.add_argument("--candidates", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    work = pools(load_dataset(args.dataset), args.candidates)
    timed(work[:20], True)  # warm the stemmer's cache and the regexes
    for label, rerank in (("sentence reranker (shipped)", True), ("term coverage only", False)):
        rounds = [timed(work, rerank) for _ in range(args.rounds)]
        p50 = statistics.median(statistics.median(r) for r in rounds)
        p95 = statistics.median(statistics.quantiles(r, n=20)[18] for r in rounds)
        print(
            f"{label:30} {len(work)} questions x {args.candidates} passages of "
            f"{PASSAGE_WORDS} words: p50 {p50:.1f} ms, p95 {p95:.1f} ms (median of "
            f"{args.rounds} rounds)"
        )


if __name__ == "__main__":
    main()
