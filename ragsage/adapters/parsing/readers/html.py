"""HTML through selectolax (lexbor): site chrome dropped, structure kept as Markdown.

Real pages, old and new, carry navigation that repeats on every page of a
site; indexed, it turns up in every search.  Three rules remove it, cheapest
first (see :mod:`ragsage.adapters.parsing.readers.html_chrome`):

* elements that say what they are: ``nav``, ``header``, ``footer``, ``aside``,
  ARIA landmark roles, and class or id names such as ``nav``, ``menu`` or
  ``sidebar``;
* in a table used to lay out a page, the side cells (or rows) that are mostly
  links, such as the menu beside the content;
* lists of links to places on the page itself (an in-page table of contents),
  and lists that are nothing but links, one an item (a site's list of pages).

A layout table is read as flowing text, cell after cell; only a data table
becomes a Markdown table.  A page the rules would leave with no text at all
(it is nothing but navigation) is read as its title, so it is still a document.

The tree is walked with an explicit stack, never recursion, so a page nested
ten thousand deep costs a loop, not the interpreter's stack; nesting beyond
``ParseLimits.max_html_depth`` is refused outright.  Every decision that needs
the size of a subtree is taken when the walk leaves it, from running word
counts, so reading stays linear in the size of the page.
"""

from __future__ import annotations

import posixpath
from dataclasses import replace
from typing import Any

from ragsage.adapters.parsing import markdown
from ragsage.adapters.parsing.formats import refuse_binary
from ragsage.adapters.parsing.limits import ParseLimits
from ragsage.adapters.parsing.readers.html_chrome import (
    cells,
    children,
    is_chrome,
    is_data_table,
    rows,
)
from ragsage.adapters.parsing.readers.html_regions import (
    Region,
    Tally,
    is_menu,
    is_title,
    is_title_box,
    size_of,
)
from ragsage.core.documents import RawSource
from ragsage.core.errors import ParseError
from ragsage.core.pages import Page, ParsedDocument

_DROP = frozenset(
    {
        "script",
        "style",
        "noscript",
        "template",
        "head",
        "svg",
        "iframe",
        "form",
        "button",
        "select",
        "input",
        "textarea",
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
        "center",
        "menu",
        "table",
        "caption",
        "thead",
        "tbody",
        "tfoot",
        "tr",
        "td",
        "th",
    }
    | set(_HEADINGS)
)
_LISTS = frozenset({"ul", "ol", "dl", "menu"})
# The share of a list that must be links to this page for it to be a table of contents.
_TOC_LINK_SHARE = 0.8
_DIRECTORY_LINKS = 10
_DIRECTORY_LINK_SHARE = 0.95


def read_html(source: RawSource, limits: ParseLimits) -> ParsedDocument:
    """The page body as one Markdown page without its site chrome, titled from ``<title>``."""
    from selectolax.lexbor import LexborHTMLParser

    # The parser reads any bytes as a page; a picture named .html is not one.
    refuse_binary(source, "an HTML page")
    try:
        tree = LexborHTMLParser(source.content)
    except Exception as exc:  # selectolax raises bare errors on allocation/encoding failures
        raise ParseError(source.filename, f"not readable HTML ({exc})") from exc
    title_node = tree.css_first("title")
    title = markdown.inline(title_node.text()) if title_node is not None else ""
    root = tree.body or tree.root
    text = ""
    if root is not None:
        text = _read(root, source.filename, limits, title)
    return ParsedDocument(pages=(Page(number=1, text=text),), title=title or None)


def _read(root: Any, filename: str, limits: ParseLimits, title: str) -> str:
    """The page's text by the strictest rules that leave any.

    A page of nothing but navigation (nothing left, or nothing but links) is
    read as its title, so it is still a document; without a title the link
    rules are relaxed, then the chrome rules.
    """
    walker = _Walker(filename, limits, drop_link_blocks=True, drop_chrome=True)
    text = walker.walk(root)
    if not walker.dropped_any or (text and not walker.left_only_links()):
        return text
    if title:
        return title
    for links, chrome in ((False, True), (False, False)):
        walker = _Walker(filename, limits, drop_link_blocks=links, drop_chrome=chrome)
        text = walker.walk(root)
        if text:
            break
    return text


class _Walker:
    """Collects Markdown blocks from one pre-order pass over the tree."""

    def __init__(
        self, filename: str, limits: ParseLimits, *, drop_link_blocks: bool, drop_chrome: bool
    ) -> None:
        self.filename = filename
        self.page_name = posixpath.basename(filename.replace("\\", "/"))
        self.limits = limits
        self.drop_link_blocks = drop_link_blocks
        self.drop_chrome = drop_chrome
        self.dropped_any = False
        self.blocks: list[tuple[str, str]] = []
        self.inline: list[str] = []
        self.list_depth = 0
        self.link_depth = 0
        self.read = Tally()
        self.dropped = Tally()
        # Open layout rows (their cells) and tables (their rows), innermost last.
        self.boxes: list[list[Region]] = []
        self.regions: list[Region] = []

    def walk(self, root: Any) -> str:
        # Each entry is (node, depth, closing); a closing entry flushes that element's text.
        stack: list[tuple[Any, int, bool]] = [(root, 0, False)]
        while stack:
            node, depth, closing = stack.pop()
            if closing:
                self._close(node)
                continue
            if node.is_text_node:
                self._text(node.text_content or "")
                continue
            tag = node.tag
            if tag in _DROP:
                continue
            if self.drop_chrome and is_chrome(node):
                self.dropped_any = True
                continue
            if depth > self.limits.max_html_depth:
                raise ParseError(
                    self.filename,
                    f"HTML nested deeper than {self.limits.max_html_depth} elements; "
                    "refusing to parse it",
                )
            if self._leaf(node):
                continue
            self._open(node)
            stack.append((node, depth, True))
            stack.extend((child, depth + 1, False) for child in reversed(children(node)))
        self._flush("paragraph")
        return _join(self.blocks)

    def left_only_links(self) -> bool:
        """True when what the rules kept is still all links (a page that is only menus)."""
        kept = self.read.minus(self.dropped)
        return kept.links >= 2 and kept.link_words >= _DIRECTORY_LINK_SHARE * kept.words

    # --- reading ------------------------------------------------------------------------

    def _text(self, text: str) -> None:
        self.inline.append(text)
        words = len(text.split())
        self.read.words += words
        if self.link_depth:
            self.read.link_words += words

    def _leaf(self, node: Any) -> bool:
        """Emit elements converted whole (code, data tables); True when the subtree is done."""
        if node.tag == "pre":
            self._flush("paragraph")
            code = node.text(deep=True, separator="")
            self._count_leaf(code)
            self.blocks.append(("code", markdown.fenced(code)))
            return True
        if node.tag == "table" and is_data_table(node):
            self._flush("paragraph")
            caption = node.css_first("caption")
            if caption is not None:
                self._flush_text(_cell_text(caption))
            grid = [[_cell_text(cell) for cell in cells(row)] for row in rows(node)]
            self._count_leaf(" ".join(" ".join(row) for row in grid))
            table = markdown.table(grid)
            if table:
                self.blocks.append(("table", table))
            return True
        return False

    def _count_leaf(self, text: str) -> None:
        self.read.words += len(text.split())

    def _open(self, node: Any) -> None:
        tag = node.tag
        if tag in _BLOCKS:
            self._flush("paragraph")
        if tag in ("ul", "ol"):
            self.list_depth += 1
        elif tag == "li":
            self.read.items += 1
        elif tag == "a" and node.attributes.get("href") is not None:
            self.link_depth += 1
            self.read.links += 1
            if self._points_here(node.attributes.get("href") or ""):
                self.read.page_links += 1
        if tag in ("table", "tr"):
            self.boxes.append([])
        if tag in ("tr", "td", "th") or tag in _LISTS:
            self.regions.append(Region(len(self.blocks), replace(self.read), replace(self.dropped)))

    def _close(self, node: Any) -> None:
        tag = node.tag
        if tag in _HEADINGS:
            self._flush("heading", level=_HEADINGS[tag])
        elif tag == "li":
            self._flush("item")
        elif tag in ("ul", "ol"):
            self._flush("paragraph")
            self.list_depth -= 1
        elif tag in _BLOCKS:
            self._flush("paragraph")
        if tag == "a" and node.attributes.get("href") is not None:
            self.link_depth -= 1
        if tag in ("table", "tr"):
            # A row's side cells go before the row is measured as part of its table.
            self._drop(self._side_menus(self.boxes.pop()))
        if tag in ("tr", "td", "th") or tag in _LISTS:
            region = self.regions.pop()
            region.last_block = len(self.blocks)
            region.tally = self.read.minus(region.opened)
            region.dropped_inside = self.dropped.minus(region.dropped_before)
            if tag in _LISTS:
                if self._is_page_contents(region.tally) or self._is_directory(region.tally):
                    self._drop([region], with_title=True)
            elif self.boxes:
                self.boxes[-1].append(region)

    def _points_here(self, href: str) -> bool:
        if href.startswith("#"):
            return True
        path, hash_mark, _ = href.partition("#")
        return bool(hash_mark) and posixpath.basename(path) == self.page_name

    # --- the link rules -----------------------------------------------------------------

    def _is_page_contents(self, tally: Tally) -> bool:
        return (
            self.drop_link_blocks
            and tally.links >= 3
            and tally.link_words >= _TOC_LINK_SHARE * tally.words
            and tally.page_links >= _TOC_LINK_SHARE * tally.links
        )

    def _is_directory(self, tally: Tally) -> bool:
        """A list of nothing but links, one an item: a site's list of its pages."""
        return (
            self.drop_link_blocks
            and tally.links >= _DIRECTORY_LINKS
            and tally.link_words >= _DIRECTORY_LINK_SHARE * tally.words
            and tally.links <= 1.5 * tally.items
        )

    def _side_menus(self, regions: list[Region]) -> list[Region]:
        """Of a layout row's cells (or a layout table's rows), those that are side menus.

        Every cell that is mostly links goes, unless all of them are: then the
        biggest is the page (an index of links) and stays.  A short line of
        plain words just before a menu ("Main Menu") is its title and goes too.
        """
        if not self.drop_link_blocks:
            return []
        filled = [r for r in regions if r.tally is not None and r.tally.words > 0]
        if len(filled) < 2:
            return []
        menus = [r for r in filled if r.tally is not None and is_menu(r.tally)]
        if len(menus) == len(filled):
            menus.remove(max(menus, key=size_of))
        titles = [
            before
            for before, after in zip(filled, filled[1:], strict=False)
            if after in menus and before not in menus and is_title_box(before)
        ]
        return menus + titles

    def _drop(self, regions: list[Region], *, with_title: bool = False) -> None:
        # Later regions first, so the block positions of earlier ones stay valid.
        for region in sorted(regions, key=lambda r: r.first_block, reverse=True):
            first = region.first_block
            if with_title and first > 0 and is_title(self.blocks[first - 1]):
                first -= 1  # the heading that only titled the dropped list goes with it
            del self.blocks[first : region.last_block]
            self.dropped_any = True
            if region.tally is not None and region.dropped_inside is not None:
                self.dropped = self.dropped.plus(region.tally.minus(region.dropped_inside))

    # --- writing ------------------------------------------------------------------------

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

    def _flush_text(self, text: str) -> None:
        flat = markdown.inline(text)
        if flat:
            self._count_leaf(flat)
            self.blocks.append(("paragraph", flat))


def _cell_text(cell: Any) -> str:
    """A table cell's text: inline runs joined as written, blocks and breaks apart.

    Joining every text node with a space, as ``text(separator=" ")`` does, put
    a space inside "``DONT_CONTEXTIFY``." and "``TypedArray``, or"; joining with
    nothing would glue the paragraphs of a cell together.
    """
    parts: list[str] = []
    previous: Any = None
    for node in cell.traverse(include_text=True):
        if node.tag == "br":
            parts.append(" ")
        elif node.tag == "-text":
            block = node.parent
            while block is not None and block is not cell and block.tag not in _BLOCKS:
                block = block.parent
            if previous is not None and block != previous:
                parts.append(" ")
            parts.append(node.text_content or "")
            previous = block
    return " ".join("".join(parts).split())


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
