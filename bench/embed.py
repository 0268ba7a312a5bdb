"""The local embedding model through the runtime's embedder, on real passages.

    python bench/embed.py [--doc-root /usr/share/doc] [--processes 2] [--rounds 3]
    python bench/embed.py --select       # rewrite bench/embed_passages.json

The passages are a fixed selection, committed in ``bench/embed_passages.json``:
the visible text of the Debian HTML pages under ``--doc-root`` (menus and other
lines that are mostly link text dropped, whitespace collapsed), cut into
windows of 240 words every 600 words of each page, and 96 of those windows
taken at even steps through the whole list (pages in path order).  The file
names each passage by page and first word and holds its SHA-256, so a machine
whose pages differ says so instead of measuring other text.

Printed, for the embedder ``RAGSAGE_EMBEDDER=local`` builds (the worker's own
factory and settings, so this is what ingestion runs):

* chunks/s in one process, the passages embedded in the pipeline's batches;
* chunks/s of the machine with ``--processes`` processes embedding at once,
  each with the share of the cores a worker pool child gets;
* the latency of embedding one short query (p50/p95);
* the model's arithmetic: multiply-adds per passage, this machine's measured
  single-core float32 and int8 matrix rates, and the chunks/s the products alone
  would allow at those rates (the limit the product is measured against).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import hashlib
import json
import multiprocessing
import os
import queue
import statistics
import subprocess
import sys
import time
from pathlib import Path

from site_chrome import html_pages, visible_lines

from ragsage.adapters.providers.local_embedder import LocalEmbedder
from ragsage.adapters.providers.local_model import MODEL_NAME
from ragsage.core.ports import Embedder
from ragsage.ingestion.batching import embed_texts
from ragsage.ingestion.config import IngestionConfig
from ragsage.runtime.models import make_embedder
from ragsage.settings import Settings

SELECTION = Path(__file__).with_name("embed_passages.json")
PASSAGES, WORDS, EVERY = 96, 240, 600
# all-MiniLM-L6-v2: 6 layers of hidden width 384, feed-forward width 1,536.
LAYERS, HIDDEN, FEED_FORWARD = 6, 384, 1536


def page_words(path: Path) -> list[str]:
    """The words of a page's visible text, lines that are mostly link text left out."""
    lines = visible_lines(path.read_bytes())
    return " ".join(line.text for line in lines if not line.is_link).split()


def select(doc_root: Path) -> list[dict[str, object]]:
    candidates: list[tuple[Path, int]] = []
    for path in html_pages(doc_root):
        words = page_words(path)
        candidates.extend((path, start) for start in range(0, len(words) - WORDS + 1, EVERY))
    step = len(candidates) / PASSAGES
    chosen = [candidates[int(index * step)] for index in range(PASSAGES)]
    return [
        {
            "page": str(path.relative_to(doc_root)),
            "word": start,
            "sha256": hashlib.sha256(passage(path, start).encode()).hexdigest(),
        }
        for path, start in chosen
    ]


def passage(path: Path, start: int) -> str:
    return " ".join(page_words(path)[start : start + WORDS])


def load_passages(doc_root: Path) -> list[str]:
    texts = []
    for entry in json.loads(SELECTION.read_text())["passages"]:
        path = doc_root / str(entry["page"])
        if not path.is_file():
            sys.exit(f"{path} is missing: this machine's pages differ from the selection's")
        text = passage(path, int(entry["word"]))
        if hashlib.sha256(text.encode()).hexdigest() != entry["sha256"]:
            sys.exit(f"{path} word {entry['word']}: the text differs from the selection's")
        texts.append(text)
    return texts


def build_embedder() -> Embedder:
    settings = Settings.from_env({}, embedder="local", embedding_dim=384)
    return make_embedder(settings, "local", MODEL_NAME, 384)


async def embed_all(embedder: Embedder, texts: list[str]) -> None:
    config = IngestionConfig()
    await embed_texts(embedder, texts, config.embed_batch_size, config.concurrency)


def one_process(embedder: Embedder, texts: list[str], rounds: int) -> list[float]:
    asyncio.run(embed_all(embedder, texts[:8]))  # first-call allocations
    rates = []
    for _ in range(rounds):
        started = time.perf_counter()
        asyncio.run(embed_all(embedder, texts))
        rates.append(len(texts) / (time.perf_counter() - started))
    return rates


def _pool_child(texts: list[str], rounds: int, processes: int, start: object, out: object) -> None:
    from ragsage.core.cores import share_cores

    share_cores(processes)  # as the worker's main process does before its pool forks
    embedder = build_embedder()
    asyncio.run(embed_all(embedder, texts[:8]))
    start.wait()  # type: ignore[attr-defined]
    began = time.perf_counter()
    for _ in range(rounds):
        asyncio.run(embed_all(embedder, texts))
    out.put(time.perf_counter() - began)  # type: ignore[attr-defined]


def many_processes(texts: list[str], rounds: int, processes: int) -> float:
    context = multiprocessing.get_context("spawn")
    start, out = context.Barrier(processes), context.Queue()
    children = [
        context.Process(target=_pool_child, args=(texts, rounds, processes, start, out))
        for _ in range(processes)
    ]
    for child in children:
        child.start()
    elapsed = []
    while len(elapsed) < processes:
        try:
            elapsed.append(out.get(timeout=5))
        except queue.Empty:
            if any(child.exitcode not in (None, 0) for child in children):
                sys.exit("a measuring process failed; its error is above")
    for child in children:
        child.join()
    return processes * rounds * len(texts) / max(elapsed)


def query_latency(embedder: Embedder, queries: list[str]) -> tuple[float, float]:
    asyncio.run(embedder.embed(queries[:1], input_type="query"))
    took = []
    for query in queries:
        started = time.perf_counter()
        asyncio.run(embedder.embed([query], input_type="query"))
        took.append((time.perf_counter() - started) * 1000)
    took.sort()
    return statistics.median(took), took[int(len(took) * 0.95) - 1]


def macs(tokens: int) -> tuple[int, int]:
    """Multiply-adds of one pass over ``tokens`` pieces: (weight products, attention products).

    The weight products (query, key, value, output and the two feed-forward
    layers) are the ones the int8 model runs in int8; attention stays float.
    """
    weights = LAYERS * tokens * (4 * HIDDEN * HIDDEN + 2 * HIDDEN * FEED_FORWARD)
    attention = LAYERS * tokens * 2 * tokens * HIDDEN  # scores, then the weighted sum
    return weights, attention


_FLOAT_RATE = """
import time, numpy as np
a = np.random.default_rng(0).standard_normal((1024, 1024), dtype=np.float32)
a @ a
best = min(
    (lambda t: (a @ a, time.perf_counter() - t)[1])(time.perf_counter()) for _ in range(20)
)
print(1024 ** 3 / best / 1e9)
"""

# One int8 product of 236 x 384 by 384 x 1536, as the model's first feed-forward
# layer does it (onnxruntime's DynamicQuantizeMatMul), timed on one thread.
_INT8_RATE = """
import time, numpy as np, onnx, onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
rng = np.random.default_rng(0)
weights = numpy_helper.from_array(rng.integers(-127, 127, (384, 1536), dtype=np.int8), "w")
scale = numpy_helper.from_array(np.array([0.01], dtype=np.float32), "s")
node = helper.make_node("DynamicQuantizeMatMul", ["x", "w", "s"], ["y"], domain="com.microsoft")
graph = helper.make_graph(
    [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [236, 384])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [236, 1536])], [weights, scale],
)
model = helper.make_model(
    graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
)
options = ort.SessionOptions()
options.intra_op_num_threads = 1
session = ort.InferenceSession(model.SerializeToString(), options, ["CPUExecutionProvider"])
x = rng.standard_normal((236, 384), dtype=np.float32)
session.run(None, {"x": x})
best = min(
    (lambda t: (session.run(None, {"x": x}), time.perf_counter() - t)[1])(time.perf_counter())
    for _ in range(200)
)
print(236 * 384 * 1536 / best / 1e9)
"""


def core_rate(program: str) -> float:
    """GMAC/s of one core for the matrix product ``program`` times (one thread)."""
    one = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    result = subprocess.run(
        [sys.executable, "-c", program],
        env={**os.environ, **one},
        capture_output=True,
        text=True,
        check=True,
    )
    return float(result.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--doc-root", type=Path, default=Path("/usr/share/doc"))
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--select", action="store_true", help="rewrite the committed selection")
    args = parser.parse_args()
    if args.select:
        chosen = select(args.doc_root)
        SELECTION.write_text(
            json.dumps({"words": WORDS, "every": EVERY, "passages": chosen}, indent=1) + "\n"
        )
        print(f"wrote {len(chosen)} passages to {SELECTION}")
        return
    texts = load_passages(args.doc_root)
    embedder = build_embedder()
    if not isinstance(embedder, LocalEmbedder):
        sys.exit(
            "RAGSAGE_EMBEDDER=local did not build the local model: is ragsage[local] installed?"
        )
    pieces = [len(ids) for ids in embedder.word_pieces(texts)]
    windows = [len(embedder.window_lengths(count)) for count in pieces]
    cores = len(os.sched_getaffinity(0))
    print(
        f"{len(texts)} passages of {WORDS} words from {args.doc_root}: word pieces per "
        f"passage p50 {statistics.median(pieces):.0f}, max {max(pieces)}; "
        f"{sum(windows)} model passes ({sum(windows) / len(texts):.2f} per passage, long texts "
        f"read by {embedder.long_texts}, {embedder.precision} products); {cores} cores"
    )
    # One embedder for every figure of this process, as a worker has: a second
    # onnxruntime session beside it would keep threads of its own.
    rates = one_process(embedder, texts, args.rounds)
    print(
        f"one process: {statistics.median(rates):.1f} chunks/s "
        f"(rounds: {', '.join(f'{rate:.1f}' for rate in rates)})"
    )
    queries = [" ".join(text.split()[:10]) for text in texts]
    p50, p95 = query_latency(embedder, queries)
    print(f"one short query: p50 {p50:.1f} ms, p95 {p95:.1f} ms")
    passes = [length for count in pieces for length in embedder.window_lengths(count)]
    precision = embedder.precision
    del embedder  # its threads go before the measuring processes start
    gc.collect()
    if args.processes > 1:
        rate = many_processes(texts, args.rounds, args.processes)
        print(f"{args.processes} processes at once: {rate:.1f} chunks/s in all")
    weight_macs = sum(macs(length)[0] for length in passes) / len(texts)
    attention_macs = sum(macs(length)[1] for length in passes) / len(texts)
    floats, int8 = core_rate(_FLOAT_RATE), core_rate(_INT8_RATE)
    print(
        f"arithmetic per passage: {weight_macs / 1e9:.2f} G multiply-adds in weight products, "
        f"{attention_macs / 1e9:.2f} G in attention ({len(passes) / len(texts):.2f} passes of "
        f"{statistics.mean(passes):.0f} pieces on average)"
    )
    # The int8 file keeps the second feed-forward products in float32: a third
    # of the weight multiply-adds (local_int8's recipe).
    kept_float = (
        weight_macs * HIDDEN * FEED_FORWARD / (4 * HIDDEN * HIDDEN + 2 * HIDDEN * FEED_FORWARD)
    )

    def allowed(int8_macs: float) -> float:
        float_macs = weight_macs + attention_macs - int8_macs
        return cores / (int8_macs / (int8 * 1e9) + float_macs / (floats * 1e9))

    print(
        f"one core: float32 {floats:.0f} GMAC/s (numpy), int8 {int8:.0f} GMAC/s (onnxruntime); "
        f"products alone, on {cores} cores, would allow {allowed(0):.1f} chunks/s in float32, "
        f"{allowed(weight_macs - kept_float):.1f} as the int8 file is built (second feed-forward "
        f"in float32) and {allowed(weight_macs):.1f} with every weight product in int8 "
        f"(precision here: {precision})"
    )


if __name__ == "__main__":
    main()
