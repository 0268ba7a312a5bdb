"""Hard ceilings that keep one hostile or broken upload from exhausting a worker."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ParseLimits:
    """Bounds on how much work the parser will do for a single document.

    Every reader checks these before (or while) it spends memory or time, and a
    document that crosses one fails with a :class:`~ragsage.core.errors.ParseError`
    that names the limit, rather than stalling or swapping the worker.

    ``max_bytes``
        Largest upload read at all (default 100 MiB).
    ``max_pages``
        Most pages (PDF pages, slides, form-feed pages) one document may have.
    ``max_html_depth``
        Deepest element nesting an HTML page may use; deeper markup is refused
        because no real page needs it and it is a classic parser stress attack.
    ``max_image_pixels``
        Ceiling on pixels of a rendered page or an uploaded picture, which bounds
        decoder memory (a 4-byte pixel budget of 25 MP is ~100 MB).
    ``max_zip_member_bytes`` / ``max_zip_total_bytes``
        Largest declared uncompressed size of one member and of all members of an
        Office (zip) file, so a zip bomb is refused before it is inflated.
    ``max_zip_members``
        Most entries an Office container may hold.
    ``max_compression_ratio``
        Highest uncompressed/compressed ratio a zip member may claim; real XML
        compresses ~10-20x, bombs claim thousands.
    ``render_scale``
        Scale at which a page without a text layer is rendered for vision
        (1.0 is 72 dpi; 2.0 gives ~144 dpi, enough for a vision model to read).
    """

    max_bytes: int = 100 * 1024 * 1024
    max_pages: int = 2_000
    max_html_depth: int = 512
    max_image_pixels: int = 25_000_000
    max_zip_member_bytes: int = 256 * 1024 * 1024
    max_zip_total_bytes: int = 512 * 1024 * 1024
    max_zip_members: int = 10_000
    max_compression_ratio: float = 200.0
    render_scale: float = 2.0

    def __post_init__(self) -> None:
        for name in (
            "max_bytes",
            "max_pages",
            "max_html_depth",
            "max_image_pixels",
            "max_zip_member_bytes",
            "max_zip_total_bytes",
            "max_zip_members",
        ):
            if getattr(self, name) <= 0:
                raise ValueError(f"ParseLimits.{name} must be positive")
        if self.max_compression_ratio <= 1.0:
            raise ValueError("ParseLimits.max_compression_ratio must be greater than 1")
        if not 0.1 <= self.render_scale <= 8.0:
            raise ValueError("ParseLimits.render_scale must be between 0.1 and 8")


DEFAULT_LIMITS = ParseLimits()
