"""The local corpus file the offline CLI keeps between commands."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from ragsage.core.errors import ConfigurationError
from ragsage.runtime.memory_kit import MemoryKit

DEFAULT_STATE = Path(".ragsage") / "state.json"


def state_path(explicit: str | None) -> Path:
    """The state file: ``--state``, else ``$RAGSAGE_STATE``, else ``.ragsage/state.json``."""
    return Path(explicit or os.environ.get("RAGSAGE_STATE") or DEFAULT_STATE)


def load_state(kit: MemoryKit, path: Path) -> None:
    """Load ``path`` into ``kit``; a missing file is an empty corpus."""
    if not path.exists():
        return
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        kit.restore(data)
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"cannot read the corpus in {path}: {exc}") from exc


def save_state(kit: MemoryKit, path: Path) -> None:
    """Write the corpus atomically: readers see the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".state-", suffix=".json", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(kit.snapshot(), out, separators=(",", ":"))
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
