"""What an HTML element is for: site chrome to skip, and data tables versus layout tables."""

from __future__ import annotations

import re
from typing import Any

# Elements whose tag alone says they frame the page rather than carry it.
_CHROME_TAGS = frozenset({"nav", "header", "footer", "aside", "menu"})
# ARIA landmarks for the same parts, as older markup and documentation generators write them.
_CHROME_ROLES = frozenset(
    {"navigation", "banner", "contentinfo", "search", "menu", "menubar", "toolbar", "complementary"}
)
# Whole words of class and id names that mark navigation in generated sites
# (DocBook's navheader, texinfo's header, Sphinx's related bar, skip links ...).
_CHROME_WORDS = frozenset(
    {
        "nav",
        "navbar",
        "navigation",
        "navheader",
        "navfooter",
        "menu",
        "menubar",
        "sidebar",
        "sphinxsidebar",
        "breadcrumb",
        "breadcrumbs",
        "toc",
        "header",
        "footer",
        "masthead",
        "skip",
    }
)
_NAMED_CONTAINERS = frozenset({"div", "section", "table", "ul", "ol", "dl", "p"})
# A link is chrome by name only when it skips to the content; a link named for
# a contents list (Sphinx's "toc-backref") often carries a heading's own words.
_LINK_CHROME_WORDS = frozenset({"skip"})
# Links that only mark a heading's own anchor ("#", a pilcrow) carry no words.
_ANCHOR_MARKS = frozenset({"#", "\u00b6", "\u00a7", "\U0001f517"})
# An article's own header or footer (its title, byline) is content, not chrome.
_CONTENT_SECTIONS = frozenset({"article", "main", "section"})
_ANCESTORS_LOOKED_AT = 64
_NAME_WORD = re.compile(r"[a-z0-9]+")
_CELL_BLOCKS = "table, h1, h2, h3, h4, h5, h6, ul, ol, dl, pre, form, blockquote"


def is_chrome(node: Any) -> bool:
    """True for navigation, banners and footers that repeat across a site's pages."""
    tag = node.tag
    if tag in _CHROME_TAGS:
        return tag not in ("header", "footer") or not _inside_content(node)
    attributes = node.attributes
    role = (attributes.get("role") or "").strip().lower()
    if role in _CHROME_ROLES:
        return True
    if tag == "a":
        return node.text(deep=True).strip() in _ANCHOR_MARKS or _named(
            attributes, _LINK_CHROME_WORDS
        )
    if tag not in _NAMED_CONTAINERS:
        return False
    if _named(attributes, _CHROME_WORDS):
        return True
    if tag == "table":
        summary = (attributes.get("summary") or "").lower()
        return "navigation" in summary
    return False


def is_data_table(table: Any) -> bool:
    """True for a table of rows and columns; False for one that lays out a page.

    A layout table nests other tables, holds headings, lists, code or forms in
    its cells, declares itself presentational, or has a single column.
    """
    role = (table.attributes.get("role") or "").strip().lower()
    if role in ("presentation", "none"):
        return False
    widest = 0
    for row in rows(table):
        row_cells = cells(row)
        for cell in row_cells:
            if cell.css_first(_CELL_BLOCKS) is not None:
                return False
        widest = max(widest, sum(1 for cell in row_cells if cell.text(deep=True).strip()))
    return widest >= 2


def _named(attributes: dict[str, str | None], words: frozenset[str]) -> bool:
    names = " ".join(filter(None, (attributes.get("class"), attributes.get("id"))))
    return bool(names) and not words.isdisjoint(_NAME_WORD.findall(names.lower()))


def _inside_content(node: Any) -> bool:
    parent = node.parent
    for _ in range(_ANCESTORS_LOOKED_AT):
        if parent is None:
            return False
        if parent.tag in _CONTENT_SECTIONS:
            return True
        parent = parent.parent
    return False


def rows(table: Any) -> list[Any]:
    """The table's own rows, not those of a table nested in one of its cells."""
    found = []
    for child in children(table):
        if child.tag == "tr":
            found.append(child)
        elif child.tag in ("thead", "tbody", "tfoot"):
            found.extend(row for row in children(child) if row.tag == "tr")
    return found


def cells(row: Any) -> list[Any]:
    """The header and data cells of one row."""
    return [cell for cell in children(row) if cell.tag in ("td", "th")]


def children(node: Any) -> list[Any]:
    """The node's direct children, text nodes included, in document order."""
    children = []
    child = node.child
    while child is not None:
        children.append(child)
        child = child.next
    return children
