"""PowerPoint (PPTX) through python-pptx: one page per slide, speaker notes kept."""

from __future__ import annotations

import io
from typing import Any

from ragsage.adapters.parsing import markdown
from ragsage.adapters.parsing.limits import ParseLimits
from ragsage.adapters.parsing.readers.office import check_container
from ragsage.core.documents import RawSource
from ragsage.core.errors import ParseError
from ragsage.core.pages import Page, ParsedDocument


def read_pptx(source: RawSource, limits: ParseLimits) -> ParsedDocument:
    """Each slide's title as a ``##`` heading, then its text, tables and notes."""
    check_container(source.content, source.filename, "PPTX", "ppt/presentation.xml", limits)
    from pptx import Presentation

    try:
        deck = Presentation(io.BytesIO(source.content))
        slides = list(deck.slides)
        if len(slides) > limits.max_pages:
            raise ParseError(
                source.filename, f"{len(slides)} slides exceeds the limit of {limits.max_pages}"
            )
        pages = tuple(Page(number=n, text=_slide(slide)) for n, slide in enumerate(slides, 1))
        title = (deck.core_properties.title or "").strip() or None
    except ParseError:
        raise
    except Exception as exc:  # python-pptx raises bare KeyError/ValueError/lxml errors
        raise ParseError(source.filename, f"not a readable PPTX file ({exc})") from exc
    if title is None and slides and slides[0].shapes.title is not None:
        title = markdown.inline(slides[0].shapes.title.text) or None
    return ParsedDocument(pages=pages, title=title)


def _slide(slide: Any) -> str:
    blocks: list[str] = []
    title_shape = slide.shapes.title
    if title_shape is not None and title_shape.text.strip():
        blocks.append(markdown.heading(2, title_shape.text))
    title_id = title_shape.shape_id if title_shape is not None else None
    for shape in _shapes_in_reading_order(slide.shapes):
        if shape.shape_id == title_id:
            continue
        if getattr(shape, "has_table", False) and shape.has_table:
            rows = [[cell.text for cell in row.cells] for row in shape.table.rows]
            blocks.append(markdown.table(rows))
        elif getattr(shape, "has_text_frame", False) and shape.has_text_frame:
            blocks.append(_text_frame(shape.text_frame))
    if slide.has_notes_slide:
        notes = slide.notes_slide.notes_text_frame
        text = notes.text.strip() if notes is not None else ""
        if text:
            blocks.append(f"Notes: {text}")
    return "\n\n".join(block for block in blocks if block)


def _shapes_in_reading_order(shapes: Any) -> list[Any]:
    """Leaf shapes, groups flattened without recursion, sorted top-to-bottom, left-to-right."""
    flat: list[Any] = []
    stack = list(shapes)
    while stack:
        shape = stack.pop()
        if shape.shape_type is not None and int(shape.shape_type) == 6:  # MSO_SHAPE_TYPE.GROUP
            stack.extend(shape.shapes)
        else:
            flat.append(shape)
    return sorted(flat, key=lambda s: (s.top or 0, s.left or 0, s.shape_id))


def _text_frame(frame: Any) -> str:
    lines = [markdown.inline(p.text) for p in frame.paragraphs]
    lines = [line for line in lines if line]
    if len(lines) > 1:
        return "\n".join(f"- {line}" for line in lines)
    return lines[0] if lines else ""
