"""A parsed document's pages: their text, how it was read, and what a reader measured.

These values cross ports (a parser makes them, the page classifier and vision
read them), so they are frozen: no stage changes one behind another's back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from ragsage.core.geometry import PagePositions


class PageRoute(StrEnum):
    """How a page's text is obtained: from its text layer, or by a vision model."""

    TEXT = "text"
    VISION = "vision"


@dataclass(frozen=True, slots=True)
class PageLayout:
    """What the parser measured about a page, for the page classifier to judge."""

    text_chars: int
    image_area_ratio: float = 0.0
    largest_bitmap_area: float = 0.0


@dataclass(frozen=True, slots=True)
class PageImage:
    """A rendered page (or an uploaded picture) for vision transcription."""

    data: bytes
    media_type: str = "image/png"
    width: int | None = None
    height: int | None = None


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a parsed document as Markdown (empty until vision fills it).

    ``positions`` says where the text's lines sit on the page, when the reader
    can tell (a born-digital PDF); None for formats without a page to show.
    """

    number: int
    text: str
    layout: PageLayout | None = None
    image: PageImage | None = None
    route: PageRoute | None = None
    positions: PagePositions | None = None


@dataclass(frozen=True, slots=True)
class ParsedDocument:
    """Parser output: the pages in order, and a title when the format carries one."""

    pages: tuple[Page, ...]
    title: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def full_text(self) -> str:
        return "\n\n".join(page.text for page in self.pages if page.text.strip())
