"""What the HTML reader counts while it walks: words and links, per subtree.

A region is a subtree whose blocks the walk may take back when it leaves it
(a menu, a sidebar, a title box); its tally says how much of it was links.
"""

from __future__ import annotations

from dataclasses import dataclass

# Link density above which a side cell of a layout table is a menu.
MENU_LINK_SHARE = 0.5
# A title is a heading, or a short line of at most this many words.
TITLE_WORDS = 4


@dataclass(slots=True)
class Tally:
    """Running counts of the words and links the walk has read."""

    words: int = 0
    link_words: int = 0
    links: int = 0
    page_links: int = 0
    items: int = 0

    def minus(self, other: Tally) -> Tally:
        return Tally(
            self.words - other.words,
            self.link_words - other.link_words,
            self.links - other.links,
            self.page_links - other.page_links,
            self.items - other.items,
        )

    def plus(self, other: Tally) -> Tally:
        return Tally(
            self.words + other.words,
            self.link_words + other.link_words,
            self.links + other.links,
            self.page_links + other.page_links,
            self.items + other.items,
        )


@dataclass(slots=True)
class Region:
    """A subtree whose blocks may be taken back when the walk leaves it."""

    first_block: int
    opened: Tally
    dropped_before: Tally
    last_block: int = 0
    tally: Tally | None = None
    # What was dropped inside the region before it closed, so a drop of the
    # whole region counts only the rest.
    dropped_inside: Tally | None = None


def is_title_box(region: Region) -> bool:
    tally = region.tally
    return tally is not None and tally.links == 0 and 0 < tally.words <= TITLE_WORDS


def is_menu(tally: Tally) -> bool:
    return tally.links >= 2 and tally.link_words >= MENU_LINK_SHARE * tally.words


def size_of(region: Region) -> tuple[int, int]:
    """Words not in links first (an index's terms), then all words."""
    tally = region.tally
    return (0, 0) if tally is None else (tally.words - tally.link_words, tally.words)


def is_title(block: tuple[str, str]) -> bool:
    kind, text = block
    if kind == "heading":
        return True
    return kind == "paragraph" and len(text.split()) <= TITLE_WORDS and text[-1:] not in ".!?:"
