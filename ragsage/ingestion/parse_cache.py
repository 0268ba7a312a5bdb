"""Parse-cache keys and the JSON wire format for parse output.

The cache is keyed by the document's content hash and the parser that read it,
never by name or path: the same bytes uploaded again under another name hit, and
a different parser (or a new wire format) misses instead of decoding something
stale.  Chunking parameters stay out of the key because what is cached is pages;
chunking runs on every ingest anyway.

Everything a cache hands back is untrusted.  :func:`decode_parsed` turns any
payload it cannot fully validate into ``None`` so the pipeline re-parses: the
engine must be correct with the cache empty, absent, or full of garbage.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from typing import Any

from ragsage.core.geometry import PagePositions
from ragsage.core.pages import Page, PageImage, PageLayout, PageRoute, ParsedDocument

# 2: pages carry the positions of their lines (born-digital PDFs).
PARSE_CACHE_VERSION = 2
"""Bumped whenever the encoding below changes shape, so old entries miss."""


def parser_fingerprint(parser: object) -> str:
    """Identify the parser behind an entry by its class's import path and version.

    A parser whose output changes shape between releases raises its
    ``cache_version`` attribute so entries it wrote before miss.  One that
    forgets is only caught by the entry TTL the deployment's cache applies.
    """
    cls = type(parser)
    version = getattr(parser, "cache_version", None)
    suffix = f"@{version}" if version is not None else ""
    return f"{cls.__module__}.{cls.__qualname__}{suffix}"


def parse_cache_key(namespace: str, content_hash: str, parser: object) -> str:
    """The cache key for the parse output of one document's bytes in one namespace.

    Per namespace, although the same bytes parse the same everywhere: a shared
    entry would tell a tenant (by a hit, or a fast parse) that another tenant
    holds the same file.  Within a namespace the cache still saves re-parsing
    on re-uploads, retries and replaced versions.
    """
    fingerprint = parser_fingerprint(parser)
    return f"ragsage:parse:v{PARSE_CACHE_VERSION}:{fingerprint}:{namespace}:{content_hash}"


def _encode_page(page: Page) -> dict[str, Any]:
    encoded: dict[str, Any] = {"number": page.number, "text": page.text}
    if page.layout is not None:
        encoded["layout"] = [
            page.layout.text_chars,
            page.layout.image_area_ratio,
            page.layout.largest_bitmap_area,
        ]
    if page.image is not None:
        encoded["image"] = {
            # Kept, not dropped: a scanned page without its image would turn a
            # cache hit into an empty document.
            "data": base64.b64encode(page.image.data).decode("ascii"),
            "media_type": page.image.media_type,
            "width": page.image.width,
            "height": page.image.height,
        }
    if page.route is not None:
        encoded["route"] = page.route.value
    if page.positions is not None:
        encoded["positions"] = page.positions.to_dict()
    return encoded


def encode_parsed(parsed: ParsedDocument) -> str:
    """Serialise parse output into one JSON string."""
    return json.dumps(
        {
            "v": PARSE_CACHE_VERSION,
            "title": parsed.title,
            "metadata": dict(parsed.metadata),
            "pages": [_encode_page(page) for page in parsed.pages],
        },
        separators=(",", ":"),
    )


def _integer(value: Any) -> bool:
    # JSON true/false arrive as bool, which Python counts as int: not a number here.
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> bool:
    if not (_integer(value) or isinstance(value, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer too large for a float
        return False


def _decode_page(raw: Any) -> Page:
    if not isinstance(raw, dict):
        raise ValueError("page is not an object")
    number, text = raw["number"], raw["text"]
    if not _integer(number) or not isinstance(text, str):
        raise ValueError("page number or text has the wrong type")
    layout = None
    if "layout" in raw:
        chars, ratio, bitmap = raw["layout"]
        if not (_integer(chars) and _number(ratio) and _number(bitmap)):
            raise ValueError("page layout has the wrong types")
        layout = PageLayout(chars, float(ratio), float(bitmap))
    image = None
    if "image" in raw:
        img = raw["image"]
        if not isinstance(img, dict):
            raise ValueError("page image is not an object")
        width, height = img.get("width"), img.get("height")
        sizes_ok = all(size is None or _integer(size) for size in (width, height))
        if not (isinstance(img["data"], str) and isinstance(img["media_type"], str) and sizes_ok):
            raise ValueError("page image has the wrong types")
        image = PageImage(
            data=base64.b64decode(img["data"], validate=True),
            media_type=img["media_type"],
            width=width,
            height=height,
        )
    route = PageRoute(raw["route"]) if "route" in raw else None
    positions = PagePositions.from_dict(raw["positions"], text=text) if "positions" in raw else None
    return Page(
        number=number, text=text, layout=layout, image=image, route=route, positions=positions
    )


def decode_parsed(payload: str) -> ParsedDocument | None:
    """Rebuild parse output from a cache entry, or ``None`` if it cannot be trusted."""
    try:
        raw = json.loads(payload)
        if not isinstance(raw, dict) or raw.get("v") != PARSE_CACHE_VERSION:
            return None
        title = raw["title"]
        metadata = raw["metadata"]
        if (title is not None and not isinstance(title, str)) or not isinstance(metadata, dict):
            return None
        pages = tuple(_decode_page(page) for page in raw["pages"])
    except (ValueError, KeyError, IndexError, TypeError, binascii.Error, RecursionError):
        # json.JSONDecodeError is a ValueError; every shape error lands here too.
        return None
    if not pages:
        return None
    return ParsedDocument(pages=pages, title=title, metadata=metadata)
