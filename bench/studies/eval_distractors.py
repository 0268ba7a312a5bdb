"""Grow a kept evaluation namespace with distractor documents, to measure at scale.

    RAGSAGE_DATABASE_URL=... ragsage eval DATASET --backend postgres --retrieval lexical --keep
    RAGSAGE_DATABASE_URL=... python bench/studies/eval_distractors.py --namespace eval-xxxx \\
        --chunks 97000 FILE_LIST

FILE_LIST names one file per line (HTML, Markdown, Python, ...); they are ingested
with the namespace's own embedder until about ``--chunks`` chunks were added.  Keep
the dataset's own documents out of the list: a copy under another id would count
as a wrong answer.  Then re-run the evaluation on the namespace, for instance with
``bench/studies/keyword_ablation.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

from ragsage.core.documents import RawSource
from ragsage.core.errors import RagsageError
from ragsage.core.scopes import Scope
from ragsage.jobs.versions import write_version
from ragsage.runtime import build_runtime
from ragsage.settings import Settings


async def grow(namespace: str, paths: list[Path], limit: int) -> None:
    runtime = build_runtime(Settings.from_env())
    scope = Scope(namespace)
    try:
        embedder = await runtime.embedder_for_scope(scope)
        pipeline = runtime.pipeline(embedder)
        added, started = 0, time.perf_counter()
        for number, path in enumerate(paths):
            if added >= limit:
                break
            source = RawSource(path.read_bytes(), f"distractor/{number}/{path.name}")
            try:
                prepared = await pipeline.prepare(scope, source)
            except RagsageError as exc:
                print(f"skipped {path}: {exc}")
                continue
            async with runtime.database.session(scope) as session:
                await write_version(session, runtime, scope, pipeline, prepared)
            added += len(prepared.records)
        elapsed = time.perf_counter() - started
        print(f"added {added:,} chunks in {elapsed:.0f} s ({added / elapsed:,.0f} chunks/s)")
    finally:
        await runtime.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description="Add distractor documents to a namespace")
    parser.add_argument("file_list")
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--chunks", type=int, default=97_000)
    args = parser.parse_args()
    paths = [Path(line) for line in Path(args.file_list).read_text().splitlines() if line]
    asyncio.run(grow(args.namespace, paths, args.chunks))


if __name__ == "__main__":
    main()
