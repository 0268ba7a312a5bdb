"""Reading code back out of the Markdown the code readers write."""

from __future__ import annotations


def code_lines(markdown: str) -> list[str]:
    """The lines inside fenced blocks, in order (fence lines themselves left out)."""
    inside, found = False, []
    for line in markdown.split("\n"):
        if line.startswith("```"):
            inside = not inside
        elif inside:
            found.append(line)
    return found
