"""The shared directory where a unit's processes keep their Prometheus counts.

A gunicorn master with several workers, or a Celery worker with pool children,
is one deployment unit that must be scraped as one.  prometheus_client's
multiprocess mode does that: every process writes its metrics to memory-mapped
files in one directory, and the process that answers a scrape sums them.  The
library decides the mode when it is first imported, so the directory is made
and named here, in the command that starts the unit, before the process that
imports prometheus_client exists.

Counts start again with each start of a unit, so the directory is emptied
first; a directory made here (none was configured) is removed when the unit
stops.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

ENV = "PROMETHEUS_MULTIPROC_DIR"
# Marks a directory this module created, so only those are ever removed whole.
_MADE_HERE = ".ragsage-temporary"


def prepare(unit: str, configured: str | None = None) -> Path:
    """Create (or empty) ``unit``'s metrics directory and name it in the environment.

    ``configured`` (``RAGSAGE_METRICS_DIR``) is used as given; without it a new
    private directory under the temp root is made.  Child processes inherit the
    variable, so they write their counts to the same place.
    """
    if configured:
        path = Path(configured)
        path.mkdir(parents=True, exist_ok=True)
        for stale in path.glob("*.db"):
            stale.unlink()
    else:
        path = Path(tempfile.mkdtemp(prefix=f"ragsage-{unit}-metrics-"))
        (path / _MADE_HERE).touch()
    os.environ[ENV] = str(path)
    return path


def active() -> Path | None:
    """This process's metrics directory, when its unit runs in multiprocess mode."""
    named = os.environ.get(ENV)
    return Path(named) if named else None


def finish() -> None:
    """At the unit's stop: remove a directory :func:`prepare` made (a configured one stays)."""
    path = active()
    if path is not None and (path / _MADE_HERE).exists():
        shutil.rmtree(path, ignore_errors=True)


def process_exited(pid: int) -> None:
    """Tell the library a process of the unit is gone (its live gauges stop counting)."""
    if active() is None:
        return
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(pid)  # type: ignore[no-untyped-call]
