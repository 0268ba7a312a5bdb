"""Turning command-line paths into the files they name."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def collect_files(paths: Sequence[str]) -> list[Path]:
    """Files named directly, plus every file below named directories, sorted.

    Hidden files and folders below a named directory (``.git``, ``.DS_Store``)
    are skipped; the directory's own location may be anywhere.
    """
    found: list[Path] = []
    for name in paths:
        path = Path(name)
        if not path.is_dir():
            found.append(path)
            continue
        found.extend(
            sorted(
                p
                for p in path.rglob("*")
                if p.is_file()
                and not any(part.startswith(".") for part in p.relative_to(path).parts)
            )
        )
    return found
