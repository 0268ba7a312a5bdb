"""Moved to :mod:`ragsage.library.enqueue`; this name works, with a warning, for one release."""

from __future__ import annotations

import warnings

from ragsage.library.enqueue import (
    BROKER_DOWN,
    Enqueuer,
    JobState,
    Upload,
    default_enqueuer,
    enqueue_document,
    enqueue_documents,
    job_status,
    upload_from_path,
)

__all__ = [
    "BROKER_DOWN",
    "Enqueuer",
    "JobState",
    "Upload",
    "default_enqueuer",
    "enqueue_document",
    "enqueue_documents",
    "job_status",
    "upload_from_path",
]

warnings.warn(
    "worker.enqueue has moved to ragsage.library.enqueue; import it from there",
    DeprecationWarning,
    stacklevel=2,
)
