"""``ragsage eval``: index a dataset, ask its questions, print (and save) the figures.

Registering the command imports nothing beyond argparse; the handler loads the
engine, and the backend it was asked for, only when it runs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragsage.cli.evaluation.backends import IndexConfig, IndexedCorpus
    from ragsage.evaluation.datasets import Dataset

# Hybrid leaves the dense weight to the engine, as a request that sets none does.
RETRIEVAL_ALPHA: dict[str, float | None] = {"hybrid": None, "dense": 1.0, "lexical": 0.0}
BACKENDS = ("memory", "postgres", "api", "baseline")


def register(commands: Any) -> None:
    """Add ``eval`` to the ``ragsage`` subcommands."""
    from ragsage.adapters.parsing.languages import CODE_CHUNKING

    parser = commands.add_parser(
        "eval",
        help="measure retrieval quality on a dataset (nDCG, recall, MRR, Pass, tokens, budgets)",
        description="Index a QA-span or BEIR dataset, ask its questions, and print the metrics.",
    )
    parser.add_argument("dataset", nargs="?", help="dataset folder (QA spans or BEIR layout)")
    parser.add_argument("--split", help="question split (QA: dev/test, default all; BEIR: test)")
    parser.add_argument(
        "--family",
        action="append",
        default=[],
        metavar="NAME",
        help="ask only this family of QA questions (repeatable; default all)",
    )
    parser.add_argument(
        "--k", type=int, nargs="+", default=[1, 5, 10, 20], metavar="K", help="cut-offs"
    )
    parser.add_argument("--retrieval", choices=tuple(RETRIEVAL_ALPHA), default="hybrid")
    parser.add_argument("--alpha", type=float, help="dense weight, overriding --retrieval")
    parser.add_argument("--rerank", action="store_true", help="rerank candidates (default off)")
    parser.add_argument("--mrr-depth", type=int, help="cut MRR at this rank (default: all)")
    parser.add_argument("--backend", choices=BACKENDS, default="memory")
    parser.add_argument("--api-url", help="API base URL (key from RAGSAGE_API_KEY)")
    parser.add_argument(
        "--api-timeout", type=float, default=900.0, help="seconds to wait for upload jobs"
    )
    parser.add_argument(
        "--embedder",
        choices=("hashing", "local"),
        help="default: hashing in memory, RAGSAGE_EMBEDDER with postgres",
    )
    parser.add_argument(
        "--chunk-size", type=int, help="tokens per chunk (default 512, or RAGSAGE_CHUNK_SIZE)"
    )
    parser.add_argument(
        "--chunk-overlap", type=int, help="tokens of overlap (default 64, or RAGSAGE_CHUNK_OVERLAP)"
    )
    parser.add_argument("--no-contextualize", action="store_true")
    parser.add_argument(
        "--code-chunking",
        choices=CODE_CHUNKING,
        help="how source files are read (default definitions, or RAGSAGE_CODE_CHUNKING)",
    )
    parser.add_argument(
        "--code-window",
        type=int,
        help="tokens above which a definition is cut into windows, 0 for never "
        "(default RAGSAGE_CODE_WINDOW)",
    )
    parser.add_argument(
        "--upload-as-text",
        action="store_true",
        help="upload every document as text/plain, its extension replaced by .txt",
    )
    parser.add_argument("--cache-dir", default=".ragsage/eval-cache", help="embedding cache folder")
    parser.add_argument("--no-cache", action="store_true", help="do not cache embeddings")
    parser.add_argument("--keep", action="store_true", help="keep the postgres namespace")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--save", metavar="RUN.json", help="write the run to a file")
    parser.add_argument(
        "--compare", nargs=2, metavar=("A.json", "B.json"), help="compare two saved runs"
    )
    parser.set_defaults(handler=eval_command)


async def eval_command(args: argparse.Namespace) -> int:
    if args.compare:
        return _compare(args)
    if not args.dataset:
        raise ValueError("name a dataset folder, or --compare two saved runs")
    from ragsage.adapters.parsing.tokens import make_token_counter
    from ragsage.evaluation.datasets import load_dataset
    from ragsage.evaluation.runner import check_ks, evaluate
    from ragsage.query import RetrievalOptions

    alpha = RETRIEVAL_ALPHA[args.retrieval] if args.alpha is None else args.alpha
    options = RetrievalOptions(hybrid_alpha=alpha, rerank=args.rerank)
    ks = check_ks(args.k)
    dataset = load_dataset(args.dataset, split=args.split, families=args.family)
    if args.upload_as_text:
        from ragsage.evaluation.datasets import as_plain_text

        dataset = as_plain_text(dataset)
    if not dataset.questions:
        raise ValueError(f"{dataset.path}: no questions in split {args.split!r}")
    print(
        f"indexing {len(dataset.documents)} documents of {dataset.name} ({args.backend})...",
        file=sys.stderr,
    )
    async with _backend(args, dataset) as corpus:
        for failure in corpus.failures:
            print(f"warning: not indexed: {failure}", file=sys.stderr)
        report = await evaluate(
            corpus.search,
            dataset.questions,
            ks=ks,
            options=options,
            mrr_depth=args.mrr_depth,
            document_ids=corpus.document_ids,
            config=_config(args, dataset, corpus),
            count_tokens=make_token_counter(),
        )
    indexed = {"index_s": round(corpus.index_seconds, 3), "documents": len(dataset.documents)}
    if corpus.chunks is not None:
        indexed["chunks"] = corpus.chunks
    report = report.with_timing(**{name: float(value) for name, value in indexed.items()})
    if args.save:
        from ragsage.evaluation.runs import save_run

        print(f"saved {save_run(report, args.save)}", file=sys.stderr)
    if args.json:
        print(json.dumps(report.to_dict(), indent=1, sort_keys=True))
    else:
        from ragsage.evaluation.tables import report_table

        print(report_table(report))
    return 0


def _compare(args: argparse.Namespace) -> int:
    from ragsage.evaluation.runs import compare, comparison_table, load_run

    first, second = (load_run(path) for path in args.compare)
    result = compare(first, second)
    if args.json:
        body = {
            "metrics": {
                name: {"a": first.metrics[name], "b": second.metrics[name]}
                for name in result.metric_names
            },
            "wins": [c.question.id for c in result.wins],
            "losses": [c.question.id for c in result.losses],
            "ties": result.ties,
        }
        print(json.dumps(body, indent=1, sort_keys=True))
    else:
        print(comparison_table(result))
    return 0


def _index_config(args: argparse.Namespace) -> IndexConfig:
    from ragsage.cli.evaluation.backends import IndexConfig

    return IndexConfig(
        embedder=args.embedder,
        chunk_size=args.chunk_size,
        chunk_overlap=args.chunk_overlap,
        contextualize=not args.no_contextualize,
        code_chunking=args.code_chunking,
        code_window=args.code_window,
        cache_dir=None if args.no_cache else Path(args.cache_dir),
        keep=args.keep,
    )


def _backend(
    args: argparse.Namespace, dataset: Dataset
) -> AbstractAsyncContextManager[IndexedCorpus]:
    if args.backend == "memory":
        from ragsage.cli.evaluation.backends import in_memory

        return in_memory(dataset, _index_config(args))
    if args.backend == "postgres":
        from ragsage.cli.evaluation.backends import in_postgres

        return in_postgres(dataset, _index_config(args))
    if args.backend == "baseline":
        from ragsage.cli.evaluation.baseline import plain_baseline

        if (
            args.embedder
            or args.chunk_size
            or args.chunk_overlap
            or args.code_chunking
            or args.code_window is not None
        ):
            raise ValueError(
                "--backend baseline has its own windows and model: drop --embedder, "
                "--chunk-size, --chunk-overlap and --code-chunking"
            )
        return plain_baseline(dataset, _index_config(args))
    from ragsage.cli.evaluation.api_backend import through_api

    if not args.api_url:
        raise ValueError("--backend api needs --api-url")
    key = os.environ.get("RAGSAGE_API_KEY", "")
    if not key:
        raise ValueError("--backend api needs a write key in RAGSAGE_API_KEY")
    if (
        args.embedder
        or args.chunk_size
        or args.chunk_overlap
        or args.no_contextualize
        or args.code_chunking
        or args.code_window is not None
    ):
        raise ValueError(
            "--embedder, --chunk-size, --chunk-overlap, --no-contextualize and "
            "--code-chunking are the server's settings with --backend api"
        )
    return through_api(dataset, args.api_url, key, timeout=args.api_timeout)


def _config(args: argparse.Namespace, dataset: Dataset, corpus: IndexedCorpus) -> dict[str, Any]:
    return {
        "dataset": dataset.name,
        "dataset_path": str(dataset.path),
        "format": dataset.format,
        "split": dataset.split,
        "families": list(args.family),
        "backend": args.backend,
        "where": corpus.where,
        "embedding_model": corpus.embedding_model,
        "retrieval": args.retrieval if args.alpha is None else "custom",
        "chunk_size": corpus.chunk_size,
        "chunk_overlap": corpus.chunk_overlap,
        "contextualize": not args.no_contextualize,
        "code_chunking": args.code_chunking,
        "code_window": args.code_window,
        "upload_as_text": bool(args.upload_as_text),
        "documents_failed": len(corpus.failures),
    }
