"""Small Markdown writers the format readers share."""

from __future__ import annotations

import re
from collections.abc import Sequence

_SPACE = re.compile(r"\s+")


def inline(text: str) -> str:
    """Collapse runs of whitespace (newlines included) to single spaces."""
    return _SPACE.sub(" ", text).strip()


def table(rows: Sequence[Sequence[str]]) -> str:
    """A Markdown pipe table; the first row is the header, short rows are padded."""
    cleaned = [[inline(cell).replace("|", "\\|") for cell in row] for row in rows]
    cleaned = [row for row in cleaned if any(row)]
    if not cleaned:
        return ""
    width = max(len(row) for row in cleaned)
    padded = [row + [""] * (width - len(row)) for row in cleaned]
    lines = ["| " + " | ".join(padded[0]) + " |", "|" + " --- |" * width]
    lines.extend("| " + " | ".join(row) + " |" for row in padded[1:])
    return "\n".join(lines)


def heading(level: int, text: str) -> str:
    """An ATX heading, its level clamped to Markdown's six."""
    return "#" * max(1, min(level, 6)) + " " + inline(text)


def fenced(code: str, language: str = "") -> str:
    """A fenced code block whose fence is longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{code.strip(chr(10))}\n{fence}"
