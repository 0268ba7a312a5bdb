"""How large a file of each format a worker can read within its memory limit.

A job's peak memory grows with its file: every stage (parse, chunk,
contextualize, embed) holds the text in its own shapes at once.  The growth per
byte of input was measured per format with ``bench/job_memory.py`` on files
shaped like real ones (for text, which covers Markdown, CSV, JSON and one-line
dumps, the worst of those shapes) and is kept here with a quarter of margin.
A file larger than what the limit leaves room for fails its job at once, on
its first delivery, with a message naming the file and the limit, instead of
growing the worker until it is killed (by the lease keeper's watch, or by the
kernel).
"""

from __future__ import annotations

import os

from ragsage.adapters.parsing.formats import DocumentFormat, route
from ragsage.core.documents import RawSource
from ragsage.core.errors import DocumentError

# Peak growth of a worker process per byte of the file (measured slope x 1.25).
BYTES_PER_INPUT_BYTE: dict[DocumentFormat, float] = {
    DocumentFormat.TEXT: 20.0,  # Markdown 15.6, CSV 14.1, prose 11.7, JSON 10.3, one line 9.9
    DocumentFormat.HTML: 20.0,  # 16
    DocumentFormat.PYTHON: 83.0,  # 66: the syntax tree of the whole module
    DocumentFormat.DOCX: 50.0,  # 40
    DocumentFormat.PPTX: 50.0,  # read like DOCX (zip of XML)
    DocumentFormat.PDF: 10.0,  # 7; the page limit bounds it as well
    DocumentFormat.IMAGE: 10.0,  # the pixel limit bounds the decoded picture
}
_MIB = 1024 * 1024


def resident_bytes(pid: int | None = None) -> int:
    """The resident memory of process ``pid`` (this one by default); 0 if unknown."""
    try:
        with open(f"/proc/{pid or os.getpid()}/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def largest_readable(kind: DocumentFormat, limit: int, in_use: int) -> int | None:
    """The largest file of ``kind`` (bytes) that fits beside ``in_use``; None if unmeasured."""
    cost = BYTES_PER_INPUT_BYTE.get(kind)
    if cost is None:
        return None
    return max(0, int((limit - in_use) / cost))


def check_fits(source: RawSource, limit: int, in_use: int) -> None:
    """Refuse ``source`` if reading it would take this process past ``limit`` bytes."""
    kind = route(source)
    largest = largest_readable(kind, limit, in_use)
    size = len(source.content)
    if largest is None or size <= largest:
        return
    raise DocumentError(
        source.filename,
        f"{size / _MIB:,.1f} MiB is more than a worker can read as {kind.value} within its "
        f"memory limit of {limit / _MIB:,.0f} MiB (RAGSAGE_JOB_MEMORY_LIMIT): at most "
        f"{largest / _MIB:,.1f} MiB; split the file or raise the limit",
    )
