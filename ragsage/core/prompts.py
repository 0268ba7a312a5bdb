"""The prompts the query engine sends, and how citations are read back.

The grounded prompt wraps each source in a ``<source n="...">`` block.  A tagged
block survives any text a document contains (a source that itself holds ``[2]``
or ``Question:`` cannot be confused with the prompt's own structure), and it lets
:func:`parse_grounded_prompt` recover the sources exactly — which is how the
offline LLM reads them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

GROUNDED_INSTRUCTIONS = (
    "Answer the question using only the numbered sources below. After every sentence that "
    "uses a source, cite it by number in square brackets, for example [1] or [2][3]. If the "
    "sources do not contain the answer, reply that the documents do not say, and cite nothing."
)
SMALL_TALK_INSTRUCTIONS = (
    "You are the assistant of a document search service. Reply briefly and kindly to the "
    "conversational message below, and offer to answer questions about the user's documents."
)

_SOURCE_BLOCK = re.compile(r'<source n="(\d+)" title="([^"]*)">\n(.*?)\n</source>', re.DOTALL)
_QUESTION_LINE = re.compile(r"^Question: (.*)$", re.MULTILINE)
_MESSAGE_LINE = re.compile(r"^Message: (.*)$", re.MULTILINE)
_CITATION = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")
# Markers side by side ("[1][2]", "[1, 3]"): the text before them is theirs.
_CITATION_GROUP = re.compile(rf"(?:\s*{_CITATION.pattern})+")


@dataclass(frozen=True, slots=True)
class PromptSource:
    """One numbered source as it appears in a grounded prompt."""

    number: int
    title: str
    text: str


def _one_line(text: str) -> str:
    return " ".join(text.split())


def grounded_prompt(question: str, sources: Sequence[PromptSource]) -> str:
    """The prompt that asks for an answer drawn only from ``sources``."""
    blocks = []
    for source in sources:
        title = _one_line(source.title).replace('"', "'")
        body = source.text.replace("</source>", "</ source>")
        blocks.append(f'<source n="{source.number}" title="{title}">\n{body}\n</source>')
    return (
        f"{GROUNDED_INSTRUCTIONS}\n\nSources:\n"
        + "\n\n".join(blocks)
        + f"\n\nQuestion: {_one_line(question)}\nAnswer:"
    )


def small_talk_prompt(message: str) -> str:
    """The prompt for a conversational message that needs no retrieval."""
    return f"{SMALL_TALK_INSTRUCTIONS}\n\nMessage: {_one_line(message)}\nReply:"


def parse_grounded_prompt(prompt: str) -> tuple[str, list[PromptSource]] | None:
    """The question and sources of a grounded prompt, or ``None`` for another prompt."""
    question = _QUESTION_LINE.search(prompt)
    if question is None:
        return None
    sources = [
        PromptSource(number=int(match.group(1)), title=match.group(2), text=match.group(3))
        for match in _SOURCE_BLOCK.finditer(prompt)
    ]
    return question.group(1), sources


def parse_small_talk_prompt(prompt: str) -> str | None:
    """The message of a small-talk prompt, or ``None`` for another prompt."""
    match = _MESSAGE_LINE.search(prompt)
    return match.group(1) if match else None


def cited_numbers(answer: str) -> list[int]:
    """Source numbers cited in ``answer`` as ``[n]`` or ``[n, m]``, first use first."""
    seen: list[int] = []
    for match in _CITATION.finditer(answer):
        for part in match.group(1).split(","):
            number = int(part)
            if number not in seen:
                seen.append(number)
    return seen


def attributed_text(answer: str) -> dict[int, str]:
    """The answer's text before each group of ``[n]`` markers, by the numbers it names."""
    claims: dict[int, list[str]] = {}
    previous = 0
    for match in _CITATION_GROUP.finditer(answer):
        claim = answer[previous : match.start()]
        for number in cited_numbers(match.group(0)):
            claims.setdefault(number, []).append(claim)
        previous = match.end()
    return {number: " ".join(parts) for number, parts in claims.items()}
