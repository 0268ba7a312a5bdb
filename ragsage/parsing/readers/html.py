"""HTML through selectolax (lexbor): page chrome dropped, structure kept as Markdown.

The tree is walked with an explicit stack, never recursion, so a page nested
ten thousand deep costs a loop, not the interpreter's stack; nesting beyond
``ParseLimits.max_html_depth`` is refused outright.
"""

from __future__ import annotations

from typing import Any

from ragsage.errors import ParseError
from ragsage.parsing import markdown
from ragsage.parsing.limits import ParseLimits
from ragsage.types import Page, ParsedDocument, RawSource

_DROP = frozenset(
    {
        "script",
        "style",
        "nav",
        "header",
        "footer",
        "aside",
        "noscript",
        "template",
        "head",
        "svg",
        "iframe",
        "form",
        "button",
        "select",
        "-comment",
    }
)
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_BLOCKS = frozenset(
    {
        "p",
        "div",
        "section",
        "article",
        "main",
        "body",
        "blockquote",
        "li",
        "ul",
        "ol",
        "dl",
        "dt",
        "dd",
        "figure",
        "figcaption",
        "address",
        "details",
        "summary",
        "hr",
        "br",
        "tr",
    }
    | set(_HEADINGS)
)


def read_html(source: RawSource, limits: ParseLimits) -> ParsedDocument:
    """The page body as one Markdown page, titled from ``<title>``."""
    from selectolax.lexbor import LexborHTMLParser

    try:
        tree = LexborHTMLParser(source.content)
    except Exception as exc:  # selectolax raises bare errors on allocation/encoding failures
        raise ParseError(source.filename, f"not readable HTML ({exc})") from exc
    title_node = tree.css_first("title")
    title = markdown.inline(title_node.text()) if title_node is not None else ""
    root = tree.body or tree.root
    text = _Walker(source.filename, limits).walk(root) if root is not None else ""
    return ParsedDocument(pages=(Page(number=1, text=text),), title=title or None)


class _Walker:
    """Collects Markdown blocks from one pre-order pass over the tree."""

    def __init__(self, filename: str, limits: ParseLimits) -> None:
        self.filename = filename
        self.limits = limits
        self.blocks: list[tuple[str, str]] = []
        self.inline: list[str] = []
        self.list_depth = 0

    def walk(self, root: Any) -> str:
        # Each entry is (node, depth, closing); a closing entry flushes that element's text.
        stack: list[tuple[Any, int, bool]] = [(root, 0, False)]
        while stack:
            node, depth, closing = stack.pop()
            if closing:
                self._close(node.tag)
                continue
            if node.is_text_node:
                self.inline.append(node.text_content or "")
                continue
            if node.tag in _DROP:
                continue
            if depth > self.limits.max_html_depth:
                raise ParseError(
                    self.filename,
                    f"HTML nested deeper than {self.limits.max_html_depth} elements; "
                    "refusing to parse it",
                )
            if self._leaf(node):
                continue
            if node.tag in _BLOCKS:
                self._flush("paragraph")
            if node.tag in ("ul", "ol"):
                self.list_depth += 1
            stack.append((node, depth, True))
            stack.extend((child, depth + 1, False) for child in reversed(_children(node)))
        self._flush("paragraph")
        return _join(self.blocks)

    def _leaf(self, node: Any) -> bool:
        """Emit elements converted whole (code, tables); True when the subtree is done."""
        if node.tag == "pre":
            self._flush("paragraph")
            self.blocks.append(("code", markdown.fenced(node.text(deep=True, separator=""))))
            return True
        if node.tag == "table":
            self._flush("paragraph")
            rows = [
                [cell.text(deep=True, separator=" ") for cell in row.css("th, td")]
                for row in node.css("tr")
            ]
            self.blocks.append(("table", markdown.table(rows)))
            return True
        return False

    def _close(self, tag: str) -> None:
        if tag in _HEADINGS:
            self._flush("heading", level=_HEADINGS[tag])
        elif tag == "li":
            self._flush("item")
        elif tag in ("ul", "ol"):
            self._flush("paragraph")
            self.list_depth -= 1
        elif tag in _BLOCKS:
            self._flush("paragraph")

    def _flush(self, kind: str, level: int = 0) -> None:
        text = markdown.inline("".join(self.inline))
        self.inline = []
        if not text:
            return
        if kind == "heading":
            self.blocks.append(("heading", markdown.heading(level, text)))
        elif kind == "item":
            indent = "  " * max(0, self.list_depth - 1)
            self.blocks.append(("item", f"{indent}- {text}"))
        else:
            self.blocks.append(("paragraph", text))


def _children(node: Any) -> list[Any]:
    children = []
    child = node.child
    while child is not None:
        children.append(child)
        child = child.next
    return children


def _join(blocks: list[tuple[str, str]]) -> str:
    out: list[str] = []
    previous = ""
    for kind, text in blocks:
        if kind == "item" and previous == "item":
            out[-1] += "\n" + text
        else:
            out.append(text)
        previous = kind
    return "\n\n".join(out)
