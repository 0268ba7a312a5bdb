"""The ``ragsage`` command."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence

from ragsage.cli import api, mcp, up, worker
from ragsage.cli.evaluation.command import register as register_eval
from ragsage.cli.local import ingest_command, query_command, search_command
from ragsage.cli.namespaces import register_namespaces
from ragsage.cli.service import graphs_command, migrate_command, register_keys
from ragsage.cli.webhooks import register_webhooks
from ragsage.core.errors import RagsageError


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--state", help="corpus file (default $RAGSAGE_STATE or .ragsage/state.json)"
    )
    parser.add_argument(
        "--namespace", default="default", help="tenant namespace (default: default)"
    )


def _retrieval(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("question")
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument(
        "--alpha",
        type=float,
        help="1 = dense only, 0 = lexical only (default: the engine's choice, 0.3 or, "
        "for a question about code that names none of it, 0.5)",
    )
    parser.add_argument("--no-rerank", action="store_true")
    parser.add_argument("--context", type=int, default=0, help="neighbouring chunks to add")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ragsage", description="Retrieval-augmented answers over your documents."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    ingest = commands.add_parser("ingest", help="ingest files or directories")
    ingest.add_argument("paths", nargs="+")
    ingest.add_argument("--chunk-size", type=int, default=512, help="tokens per chunk")
    ingest.add_argument("--chunk-overlap", type=int, default=64, help="tokens of overlap")
    ingest.add_argument("--no-contextualize", action="store_true")
    _common(ingest)
    ingest.set_defaults(handler=ingest_command)

    query = commands.add_parser("query", help="answer a question with citations")
    _retrieval(query)
    _common(query)
    query.set_defaults(handler=query_command)

    search = commands.add_parser("search", help="show ranked passages and their scores")
    _retrieval(search)
    _common(search)
    search.set_defaults(handler=search_command)

    migrate = commands.add_parser("migrate", help="create or upgrade the database schema")
    migrate.set_defaults(handler=migrate_command)
    graphs = commands.add_parser(
        "graphs",
        help="give namespaces of RAGSAGE_GRAPH_ROWS chunks or more an HNSW graph of their own",
    )
    graphs.set_defaults(handler=graphs_command)
    register_keys(commands)
    register_webhooks(commands)
    register_namespaces(commands)
    register_eval(commands)
    for module in (worker, api, up, mcp):
        module.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if not getattr(args, "asynchronous", True):
            return int(args.handler(args))
        return int(asyncio.run(args.handler(args)))
    except (RagsageError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
