"""The extractive reader: answers with the best source's own sentences, cited."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

from ragsage.adapters.offline.reranking import overlap_score
from ragsage.core.pages import PageImage
from ragsage.core.prompts import PromptSource, parse_grounded_prompt, parse_small_talk_prompt
from ragsage.core.text import (
    FENCE_LINE,
    HEADING_LINE,
    LIST_ITEM,
    TABLE_RULE,
    between_titles,
    is_table_row,
)

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def quotable(text: str) -> list[str]:
    """The sentences of a Markdown passage as prose, in order, code blocks whole.

    A quote reads as prose: heading lines, and the unmarked titles of text
    drawn from a PDF, are left out (a citation names the section), list
    bullets and table pipes are dropped and the words kept (a table row becomes
    its cells separated by semicolons), and fence lines go.
    A code block stays one unit, quoted as code on lines of its own.
    """
    quotes = _Quotes()
    for line in text.splitlines():
        quotes.read(line)
    quotes.end_code()
    quotes.end_paragraph()
    return [unit for unit in quotes.units if unit.strip()]


class _Quotes:
    """The units :func:`quotable` has read so far, and the paragraph or code block open."""

    def __init__(self) -> None:
        self.units: list[str] = []
        self.prose: list[str] = []
        # Whether the open paragraph is a list item, whose first line is no title.
        self.item = False
        self.code: list[str] | None = None

    def read(self, line: str) -> None:
        if FENCE_LINE.match(line):
            if self.code is None:
                self.end_paragraph()
                self.code = []
            else:
                self.end_code()
        elif self.code is not None:
            self.code.append(line)
        elif not line.strip() or HEADING_LINE.match(line):
            self.end_paragraph()
        elif TABLE_RULE.match(line):
            pass
        elif is_table_row(line):
            self.end_paragraph()
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            self.units.append("; ".join(cell for cell in cells if cell))
        elif LIST_ITEM.match(line):
            self.end_paragraph()
            self.item = True
            self.prose.append(LIST_ITEM.sub("", line, count=1))
        else:
            self.prose.append(line)

    def end_paragraph(self) -> None:
        for run in between_titles(self.prose, first_is_text=self.item):
            self._sentences(self.prose[run.start : run.stop])
        self.prose.clear()
        self.item = False

    def _sentences(self, lines: list[str]) -> None:
        joined = " ".join(" ".join(lines).split())
        self.units.extend(s for s in _SENTENCE_END.split(joined) if s)

    def end_code(self) -> None:
        if self.code is not None and any(part.strip() for part in self.code):
            self.units.append("```\n" + "\n".join(self.code) + "\n```")
        self.code = None


class ExtractiveReader:
    """An extractive reader: it answers with the best source's sentences, cited.

    ``generate`` reads the numbered sources back out of the grounded prompt,
    keeps those sharing terms with the question, and streams the best one's most
    relevant sentences, as prose (:func:`quotable`), followed by a ``[n]``
    marker for each relevant source.
    ``transcribe`` reads an "image" whose bytes are UTF-8 text as its content,
    so a scanned page is exercisable end to end; real image bytes read as blank.
    """

    SMALL_TALK_REPLY = (
        "Hello! Ask me anything about your documents and I will answer with citations."
    )
    NO_ANSWER_REPLY = "The documents do not say."

    def __init__(self, *, max_sentences: int = 3) -> None:
        self.max_sentences = max_sentences

    async def generate(self, prompt: str) -> AsyncIterator[str]:
        for word in self._reply(prompt).split(" "):
            yield word + " "

    def _reply(self, prompt: str) -> str:
        grounded = parse_grounded_prompt(prompt)
        if grounded is None:
            if parse_small_talk_prompt(prompt) is not None:
                return self.SMALL_TALK_REPLY
            return self.NO_ANSWER_REPLY
        question, sources = grounded
        relevant = [(overlap_score(question, s.text), s) for s in sources]
        relevant = [(score, s) for score, s in relevant if score > 0]
        if not relevant:
            return self.NO_ANSWER_REPLY
        top_score = max(score for score, _ in relevant)
        # Among the sources covering the question best, prefer the one holding the
        # single most on-topic sentence; rank order breaks any remaining tie.
        best = max(
            (s for score, s in relevant if score == top_score),
            key=lambda s: (max(score for score, _ in self._sentences(question, s)), -s.number),
        )
        # Cite what genuinely supports the answer, not every passage sharing a word.
        markers = "".join(f"[{s.number}]" for score, s in relevant if score >= top_score / 2)
        return f"{self._extract(question, best)} {markers}"

    @staticmethod
    def _sentences(question: str, source: PromptSource) -> list[tuple[float, str]]:
        sentences = quotable(source.text) or [" ".join(source.text.split())]
        return [(overlap_score(question, sentence), sentence) for sentence in sentences]

    def _extract(self, question: str, source: PromptSource) -> str:
        """The most on-topic sentence and the ones that follow it, up to a question."""
        scored = self._sentences(question, source)
        start = max(range(len(scored)), key=lambda i: (scored[i][0], -i))
        picked = [scored[start][1]]
        for _, sentence in scored[start + 1 : start + self.max_sentences]:
            if sentence.endswith("?"):
                break  # the next question of a FAQ starts a different answer
            picked.append(sentence)
        return " ".join(picked)

    async def transcribe(self, image: PageImage) -> str:
        try:
            return image.data.decode("utf-8").strip()
        except UnicodeDecodeError:
            return ""
