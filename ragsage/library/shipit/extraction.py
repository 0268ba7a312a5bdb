"""Reading files to text for the shipit API, and its two errors."""

from __future__ import annotations

import mimetypes
from pathlib import Path

from ragsage.adapters.parsing import HeuristicBackend
from ragsage.core.documents import RawSource
from ragsage.core.errors import DocumentError


class RAGDependencyError(RuntimeError):
    """An optional package that reading this file needs is not installed."""


class RAGIngestError(RuntimeError):
    """A file could not be read or parsed; ``path`` names it and ``cause`` says why."""

    def __init__(self, path: str | Path, cause: BaseException | str) -> None:
        self.path = str(path)
        self.cause = cause
        super().__init__(f"cannot ingest {self.path}: {cause}")


class TextExtractor:
    """A file's text, read by ragsage's parsers (PDF, DOCX, PPTX, HTML, Markdown, text).

    The text is Markdown: headings and tables survive, so the chunker can
    follow them.  Scanned pages need the OCR the full service runs; here they
    come back empty.
    """

    def __init__(self) -> None:
        self._backend = HeuristicBackend()

    def extract(self, path: str | Path) -> str:
        """The file's text; raises :class:`RAGIngestError` when it cannot be read or parsed."""
        location = Path(path)
        try:
            data = location.read_bytes()
        except OSError as exc:
            raise RAGIngestError(location, exc) from exc
        media_type, _ = mimetypes.guess_type(location.name)
        try:
            parsed = self._backend.parse(RawSource(data, location.name, media_type))
        except ImportError as exc:
            raise RAGDependencyError(
                f"reading {location.name} needs the package {exc.name or exc}; install it"
            ) from exc
        except DocumentError as exc:
            raise RAGIngestError(location, exc) from exc
        return parsed.full_text
