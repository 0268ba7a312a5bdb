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


def fenced(code: str, language: str = "", *, first_line: int | None = None) -> str:
    """A fenced code block whose fence is longer than any backtick run inside it.

    ``first_line`` is the source line ``code`` starts on: the opening fence then
    carries ``startline=N`` (of the first line kept, blank edges being dropped),
    which the chunker reads to give code chunks their lines and takes out of
    their text.
    """
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    body = code.strip("\n")
    info = language
    if first_line is not None:
        blank_lines_above = len(code) - len(code.lstrip("\n"))
        info = f"{language} {LINE_ANCHOR}{first_line + blank_lines_above}"
    return f"{fence}{info}\n{body}\n{fence}"


# The info-string attribute that says which source line a fenced block starts on.
LINE_ANCHOR = "startline="
