"""The TEXT/VISION routing policy, read from the layout a parser measured."""

from __future__ import annotations

from ragsage.core.pages import Page, PageLayout, PageRoute


class LayoutPageClassifier:
    """PageClassifier: routes a page on whether it has a usable text layer.

    A born-digital page carries plenty of extractable text and is read as TEXT.
    A scan or photo carries little or none and is dominated by a raster image;
    when the parser rendered a picture of it, it goes to the vision model.

    ``min_text_chars``
        Fewer characters than this count as no text layer at all (stray marks
        or hidden OCR fragments on a scan do not make it typed).
    ``max_image_area_ratio``
        A page whose images cover at least this fraction of it is image
        dominated: with thin text, the picture is the content.
    ``min_bitmap_area``
        One bitmap at least this large (in the page's own units, points for a
        PDF) is a page-filling scan; with thin text it sends the page to vision
        even when the coverage ratio reads low.

    A page without an image never routes to VISION: there would be nothing to
    send.  A page without a measured layout (a flow format or a hand-built page)
    is TEXT when its text is non-blank.
    """

    def __init__(
        self,
        *,
        min_text_chars: int = 24,
        max_image_area_ratio: float = 0.5,
        min_bitmap_area: float = 50_000.0,
    ) -> None:
        if min_text_chars < 0:
            raise ValueError("min_text_chars must not be negative")
        if not 0.0 < max_image_area_ratio <= 1.0:
            raise ValueError("max_image_area_ratio must be in (0, 1]")
        if min_bitmap_area < 0:
            raise ValueError("min_bitmap_area must not be negative")
        self.min_text_chars = min_text_chars
        self.max_image_area_ratio = max_image_area_ratio
        self.min_bitmap_area = min_bitmap_area

    def classify(self, page: Page) -> PageRoute:
        """TEXT or VISION for one page."""
        if page.image is None:
            return PageRoute.TEXT
        if page.layout is None:
            return PageRoute.TEXT if page.text.strip() else PageRoute.VISION
        return PageRoute.VISION if self.is_scan(page.layout) else PageRoute.TEXT

    def is_scan(self, layout: PageLayout) -> bool:
        """Whether a page measured like this has no usable text layer.

        Parsers ask this before rendering, so only pages that would route to
        VISION pay for a rendered image.
        """
        if layout.text_chars >= self.min_text_chars:
            return False
        # Thin text alone is a near-empty typed page; it takes a dominant picture.
        return (
            layout.image_area_ratio >= self.max_image_area_ratio
            or layout.largest_bitmap_area >= self.min_bitmap_area
        )

    def __repr__(self) -> str:
        return (
            f"LayoutPageClassifier(min_text_chars={self.min_text_chars}, "
            f"max_image_area_ratio={self.max_image_area_ratio}, "
            f"min_bitmap_area={self.min_bitmap_area})"
        )
