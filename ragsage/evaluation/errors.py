"""Errors of the evaluation harness, placed in ragsage's one error tree.

InputError
└── DatasetError        a dataset file is malformed (names the file and line)
RagsageError
└── EvalBackendError    indexing or searching through a backend failed
"""

from __future__ import annotations

from pathlib import Path

from ragsage.core.errors import InputError, RagsageError


class DatasetError(InputError):
    """A dataset cannot be read; the message names the file (and line) at fault."""

    def __init__(self, path: Path | str, reason: str, *, line: int | None = None) -> None:
        self.path, self.reason, self.line = str(path), reason, line
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {reason}")


class EvalBackendError(RagsageError):
    """The backend could not index the dataset or answer a search."""
