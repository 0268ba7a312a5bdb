"""Uploaded pictures: one empty page carrying the image for the vision route.

Pillow knows some forty formats and, asked to open bytes, tries each in turn,
whatever the file was called: GIF, BMP, WebP, and EPS, which it draws by
starting Ghostscript.  A picture is read here only by the one decoder its magic
bytes name (PNG, JPEG or TIFF: :func:`~ragsage.adapters.parsing.formats.image_media_type`),
and everything a decoder raises, Pillow's own pixel-count refusal included,
becomes a :class:`~ragsage.core.errors.ParseError` naming the file.  The page
renderer opens pictures through :func:`open_picture` too, so the API draws
nothing the worker would not read.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ragsage.adapters.parsing.formats import image_media_type
from ragsage.adapters.parsing.limits import ParseLimits
from ragsage.core.documents import RawSource
from ragsage.core.errors import ParseError
from ragsage.core.pages import Page, PageImage, PageLayout, ParsedDocument

if TYPE_CHECKING:
    from PIL.ImageFile import ImageFile

# The Pillow plugin each accepted media type is opened with, and no other.
PILLOW_FORMATS = {"image/png": "PNG", "image/jpeg": "JPEG", "image/tiff": "TIFF"}


def read_image(source: RawSource, limits: ParseLimits) -> ParsedDocument:
    """Check the picture opens within the pixel budget; TIFF is converted to PNG."""
    with open_picture(source.content, source.filename, limits) as (picture, media_type):
        width, height = picture.size
        data = source.content
        if media_type == "image/tiff":
            # Vision APIs take PNG and JPEG, not TIFF.
            buffer = io.BytesIO()
            picture.save(buffer, format="PNG")
            data, media_type = buffer.getvalue(), "image/png"
        else:
            picture.verify()
    page = Page(
        number=1,
        text="",
        layout=PageLayout(text_chars=0, image_area_ratio=1.0, largest_bitmap_area=width * height),
        image=PageImage(data=data, media_type=media_type, width=width, height=height),
    )
    return ParsedDocument(pages=(page,))


@contextmanager
def open_picture(
    data: bytes, filename: str, limits: ParseLimits
) -> Iterator[tuple[ImageFile, str]]:
    """The picture in ``data`` and its media type, opened by its own decoder only.

    Opening reads the header alone, so the pixel budget is checked before any
    pixel is decoded.  Whatever the ``with`` body then does with the picture
    (verify, convert, shrink) runs under the same translation of errors.
    """
    media_type = image_media_type(data[:16])
    if media_type is None:
        raise ParseError(filename, "not a PNG, JPEG or TIFF image")
    with _decoding(filename, limits):
        from PIL import Image

        with Image.open(io.BytesIO(data), formats=[PILLOW_FORMATS[media_type]]) as picture:
            width, height = picture.size
            if width * height > limits.max_image_pixels:
                raise ParseError(
                    filename,
                    f"image of {width}x{height} pixels exceeds the limit of "
                    f"{limits.max_image_pixels} pixels",
                )
            yield picture, media_type


@contextmanager
def _decoding(filename: str, limits: ParseLimits) -> Iterator[None]:
    """Any failure of Pillow's as a ParseError naming ``filename``."""
    from PIL import Image

    try:
        yield
    except ParseError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        # Pillow refuses (or, where warnings are errors, warns about) a header
        # claiming more pixels than its own ceiling before ours is consulted.
        raise ParseError(
            filename, f"image exceeds the limit of {_pixel_limit(limits)} pixels"
        ) from exc
    except Exception as exc:
        # Decoders of hostile bytes raise OSError, ValueError, SyntaxError,
        # EOFError, struct.error and more; each means the same to the uploader.
        raise ParseError(filename, "not a readable image (corrupt or truncated)") from exc


def _pixel_limit(limits: ParseLimits) -> int:
    """The smaller of our budget and Pillow's, the one a refused picture passed."""
    from PIL import Image

    ceiling = Image.MAX_IMAGE_PIXELS
    return limits.max_image_pixels if ceiling is None else min(limits.max_image_pixels, ceiling)
