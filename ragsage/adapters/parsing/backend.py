"""The heuristic, model-free parser and chunker behind the DocumentParser and Chunker ports."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ragsage.adapters.parsing.chunking import chunk_pages
from ragsage.adapters.parsing.classifier import LayoutPageClassifier
from ragsage.adapters.parsing.formats import DocumentFormat, route, source_language
from ragsage.adapters.parsing.languages import BY_NAME, CODE_CHUNKING, CODE_WINDOW
from ragsage.adapters.parsing.limits import DEFAULT_LIMITS, ParseLimits
from ragsage.adapters.parsing.tokens import DEFAULT_ENCODING, make_token_counter
from ragsage.core.chunks import Chunk
from ragsage.core.documents import Document, RawSource
from ragsage.core.errors import EmptyDocument, ParseError, UnsupportedFormat
from ragsage.core.pages import Page, ParsedDocument


class HeuristicBackend:
    """Both the DocumentParser and the Chunker port, with no ML dependency.

    ``parse`` routes a source to its format's reader and returns per-page
    Markdown; PDF pages carry a measured layout, and the pages ``classifier``
    would send to vision also carry a rendered image.  ``chunk`` runs the
    two-pass structure-aware chunker over the pages the pipeline resolved, so a
    scanned page arrives with its transcription and is chunked like any other.

    ``encoding_name`` is the tiktoken encoding chunk budgets are counted in;
    it loads on the first ``chunk`` call, so constructing the backend is free.
    ``limits`` bounds the work one document may cause (see :class:`ParseLimits`).
    ``join_sections`` lets a chunk under that share of the budget take in the
    next small section, whose heading is written into the text (0 keeps every
    section apart; ``docs/parsing.md`` gives the figures behind the default of
    a quarter).  ``code_chunking`` is ``"definitions"`` (source files are read
    along their definitions) or ``"lines"`` (each file is one code block cut by
    lines: the plain reading, kept to measure the other against).
    """

    # Raised whenever parse output changes for bytes it already read, so cached
    # parses miss (version 2: Python source has its own reader, not plain text;
    # version 3: HTML loses its site chrome and reads layout tables as text;
    # version 4: source code in other languages is read along its definitions;
    # version 5: a source file's fenced blocks name the line they start on).
    _VERSION = 5

    def __init__(
        self,
        *,
        encoding_name: str = DEFAULT_ENCODING,
        limits: ParseLimits | None = None,
        classifier: LayoutPageClassifier | None = None,
        join_sections: float = 0.25,
        code_chunking: str = "definitions",
        code_window: int = CODE_WINDOW,
    ) -> None:
        if not 0.0 <= join_sections <= 1.0:
            raise ValueError(f"join_sections must be between 0 and 1, got {join_sections}")
        if code_chunking not in CODE_CHUNKING:
            raise ValueError(
                f"code_chunking must be one of {', '.join(CODE_CHUNKING)}, got {code_chunking!r}"
            )
        if code_window < 0:
            raise ValueError(f"code_window must not be negative, got {code_window}")
        self.code_chunking = code_chunking
        self.code_window = code_window
        self.join_sections = join_sections
        self.encoding_name = encoding_name
        self.limits = limits or DEFAULT_LIMITS
        self.classifier = classifier or LayoutPageClassifier()
        self._count = make_token_counter(encoding_name)

    @property
    def count_tokens(self) -> Callable[[str], int]:
        """The token counter chunk budgets are measured with."""
        return self._count

    @property
    def cache_version(self) -> str:
        """Parse output's version: cached parses of another version (or reading) miss."""
        return f"{self._VERSION}-{self.code_chunking}"

    def parse(self, source: RawSource) -> ParsedDocument:
        """Read a source into per-page Markdown, or raise an error naming the file."""
        size = len(source.content)
        if size == 0:
            raise EmptyDocument(source.filename, "the file is empty (0 bytes)")
        if size > self.limits.max_bytes:
            raise ParseError(
                source.filename,
                f"file of {size} bytes exceeds the limit of {self.limits.max_bytes} bytes",
            )
        document_format = route(source)
        reader = self._readers().get(document_format)
        if reader is None:
            raise UnsupportedFormat(
                source.filename,
                f"unsupported format (media type {source.media_type or 'not given'}); "
                "ragsage reads text, Markdown, PDF, DOCX, PPTX, HTML, PNG, JPEG, TIFF "
                "and source code",
            )
        try:
            parsed = reader(source)
        except RecursionError as exc:  # a library recursing on hostile input
            raise ParseError(source.filename, "document structure is too deeply nested") from exc
        except MemoryError as exc:
            raise ParseError(source.filename, "document needs too much memory to parse") from exc
        if not any(page.text.strip() or page.image is not None for page in parsed.pages):
            raise EmptyDocument(source.filename, "no text or images found in the document")
        return ParsedDocument(
            pages=parsed.pages,
            title=parsed.title,
            metadata={**parsed.metadata, "format": str(document_format)},
        )

    def chunk(
        self, document: Document, pages: Sequence[Page], *, size: int, overlap: int
    ) -> Sequence[Chunk]:
        """Structure-aware chunks of the resolved pages, ordinals dense across all of them."""
        return chunk_pages(
            document,
            pages,
            size=size,
            overlap=overlap,
            count=self._count,
            join_below=self.join_sections,
            window=self.code_window if self.code_chunking == "definitions" else 0,
        )

    def _readers(self) -> dict[DocumentFormat, Callable[[RawSource], ParsedDocument]]:
        # Readers are imported here, not at module top, so each format library
        # loads only when a file of that format arrives.
        from ragsage.adapters.parsing.readers.docx import read_docx
        from ragsage.adapters.parsing.readers.html import read_html
        from ragsage.adapters.parsing.readers.image import read_image
        from ragsage.adapters.parsing.readers.pdf import read_pdf
        from ragsage.adapters.parsing.readers.pptx import read_pptx
        from ragsage.adapters.parsing.readers.text import read_text

        limits = self.limits
        return {
            DocumentFormat.TEXT: lambda s: read_text(s, limits),
            DocumentFormat.PDF: lambda s: read_pdf(s, limits, self.classifier),
            DocumentFormat.DOCX: lambda s: read_docx(s, limits),
            DocumentFormat.PPTX: lambda s: read_pptx(s, limits),
            DocumentFormat.HTML: lambda s: read_html(s, limits),
            DocumentFormat.IMAGE: lambda s: read_image(s, limits),
            DocumentFormat.PYTHON: self._read_python,
            DocumentFormat.CODE: self._read_code,
        }

    def _read_python(self, source: RawSource) -> ParsedDocument:
        from ragsage.adapters.parsing.readers.code import read_python
        from ragsage.adapters.parsing.readers.source import read_source

        if self.code_chunking == "lines":
            return read_source(source, BY_NAME["python"], structured=False)
        return read_python(source)

    def _read_code(self, source: RawSource) -> ParsedDocument:
        from ragsage.adapters.parsing.readers.source import read_source

        language = source_language(source)
        if language is None:  # routing saw code; the label changed since: read as text
            from ragsage.adapters.parsing.readers.text import read_text

            return read_text(source, self.limits)
        return read_source(source, language, structured=self.code_chunking == "definitions")

    def __repr__(self) -> str:
        return f"HeuristicBackend(encoding_name={self.encoding_name!r}, limits={self.limits!r})"
