"""The command line the dataset builders have in common.

Each builder writes one dataset directory (``--out``, replaced whole), most
download pinned archives first (``--cache``), and those that sample questions
cap how many one document gives and draw them with a fixed ``--seed`` so two
runs write the same dataset.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ragsage.evaluation.writing import positive_int


def builder_parser(
    name: str,
    doc: str | None,
    *,
    out: Path,
    cache: Path | None = None,
    cache_help: str = "where archives are downloaded and unpacked",
) -> argparse.ArgumentParser:
    """The parser of ``python -m evaluation_data <name>``: ``--out``, ``--cache`` to download."""
    parser = argparse.ArgumentParser(
        prog=f"python -m evaluation_data {name}",
        description=doc.splitlines()[0] if doc else None,
    )
    if cache is not None:
        parser.add_argument(
            "--cache", type=Path, default=cache, help=f"{cache_help} (default {cache})"
        )
    parser.add_argument(
        "--out", type=Path, default=out, help=f"dataset directory, replaced (default {out})"
    )
    return parser


def add_sampling(parser: argparse.ArgumentParser, *, per_document: int, unit: str) -> None:
    """``--max-per-document`` (questions of one kind from one ``unit``) and ``--seed``."""
    parser.add_argument(
        "--max-per-document",
        type=positive_int,
        default=per_document,
        help=f"questions of one kind from one {unit} (default {per_document})",
    )
    parser.add_argument("--seed", type=int, default=11)
