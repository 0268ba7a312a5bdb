"""The extractive reader: answers with the best source's own sentences, cited."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

from ragsage.adapters.offline.reranking import overlap_score
from ragsage.core.prompts import PromptSource, parse_grounded_prompt, parse_small_talk_prompt
from ragsage.core.types import PageImage

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


class ExtractiveReader:
    """An extractive reader: it answers with the best source's sentences, cited.

    ``generate`` reads the numbered sources back out of the grounded prompt,
    keeps those sharing terms with the question, and streams the best one's most
    relevant sentences followed by a ``[n]`` marker for each relevant source.
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
        sentences = [s for s in _SENTENCE_END.split(" ".join(source.text.split())) if s]
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
