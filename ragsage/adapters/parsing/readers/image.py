"""Uploaded pictures: one empty page carrying the image for the vision route."""

from __future__ import annotations

import io
import warnings

from ragsage.adapters.parsing.formats import image_media_type
from ragsage.adapters.parsing.limits import ParseLimits
from ragsage.core.errors import ParseError
from ragsage.core.types import Page, PageImage, PageLayout, ParsedDocument, RawSource


def read_image(source: RawSource, limits: ParseLimits) -> ParsedDocument:
    """Check the picture opens within the pixel budget; TIFF is converted to PNG."""
    from PIL import Image, UnidentifiedImageError

    media_type = image_media_type(source.content[:16])
    if media_type is None:
        raise ParseError(source.filename, "not a PNG, JPEG or TIFF image")
    try:
        # Opening reads only the header, so the pixel check runs before any decoding;
        # Pillow's own bomb warning is superseded by that check.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            picture = Image.open(io.BytesIO(source.content))
        width, height = picture.size
        if width * height > limits.max_image_pixels:
            raise ParseError(
                source.filename,
                f"image of {width}x{height} pixels exceeds the limit of "
                f"{limits.max_image_pixels} pixels",
            )
        data = source.content
        if media_type == "image/tiff":
            # Vision APIs take PNG and JPEG, not TIFF.
            buffer = io.BytesIO()
            picture.save(buffer, format="PNG")
            data, media_type = buffer.getvalue(), "image/png"
        else:
            picture.verify()
    except ParseError:
        raise
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
        raise ParseError(source.filename, "not a readable image (corrupt or truncated)") from exc
    page = Page(
        number=1,
        text="",
        layout=PageLayout(text_chars=0, image_area_ratio=1.0, largest_bitmap_area=width * height),
        image=PageImage(data=data, media_type=media_type, width=width, height=height),
    )
    return ParsedDocument(pages=(page,))
