"""Offline model adapters: hashing embedder, overlap reranker, extractive LLM, rewriter."""

from __future__ import annotations

import functools
import hashlib
import math
import re
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace

from ragsage.offload import run_cpu
from ragsage.passage_scoring import passage_scores
from ragsage.ports import InputType
from ragsage.prompts import PromptSource, parse_grounded_prompt, parse_small_talk_prompt
from ragsage.text import terms
from ragsage.types import PageImage, ScoredChunk, Turn

DEFAULT_DIMENSION = 1024


# Words repeat across a corpus far more than they vary: hashing each distinct
# one once is most of what embedding a chunk costs.
@functools.lru_cache(maxsize=1 << 18)
def _bucket(term: str, dimension: int, seed: str = "") -> tuple[int, float]:
    # An empty seed hashes the bare word, as every stored hashing vector was made.
    keyed = f"{seed}\0{term}" if seed else term
    digest = hashlib.blake2b(keyed.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    # The sign bit halves the bias that hash collisions add to a dot product.
    return value % dimension, (1.0 if value >> 63 else -1.0)


def hashed_vector(text: str, dimension: int, seed: str = "") -> dict[int, float]:
    """The sparse, L2-normalised hashing embedding of ``text`` (index → weight).

    A ``seed`` picks another, unrelated hashing of the same words.
    """
    counts = Counter(terms(text))
    sparse: dict[int, float] = {}
    for term, count in counts.items():
        index, sign = _bucket(term, dimension, seed)
        # Sublinear term frequency: a word said ten times is not ten times the topic.
        sparse[index] = sparse.get(index, 0.0) + sign * (1.0 + math.log(count))
    norm = math.sqrt(sum(weight * weight for weight in sparse.values()))
    return {index: weight / norm for index, weight in sparse.items() if weight} if norm else {}


class FakeEmbedder:
    """Deterministic feature-hashing embedder: cosine similarity tracks shared terms.

    Text with no terms in common with the query scores (nearly) zero, which is
    what lets the relevance floor, and so the honest "not found", work offline.
    """

    def __init__(self, *, dimension: int = DEFAULT_DIMENSION) -> None:
        if dimension < 16:
            raise ValueError(f"dimension must be at least 16, got {dimension}")
        self._dimension = dimension
        self.calls: list[tuple[InputType, int]] = []

    @property
    def model(self) -> str:
        return f"ragsage-hashing-{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def similarity_floor(self) -> float:
        # One shared term between a short query and a long chunk scores ~0.1;
        # collisions between unrelated terms stay well under this.
        return 0.05

    async def embed(
        self, texts: Sequence[str], *, input_type: InputType = "document"
    ) -> Sequence[tuple[float, ...]]:
        self.calls.append((input_type, len(texts)))
        if len(texts) <= 4:
            return self._vectors(texts)  # a query: cheaper than a trip to a thread
        return await run_cpu(self._vectors, texts)

    def _vectors(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        vectors = []
        for text in texts:
            dense = [0.0] * self._dimension
            for index, weight in hashed_vector(text, self._dimension).items():
                dense[index] = weight
            vectors.append(tuple(dense))
        return vectors


def overlap_score(query: str, text: str) -> float:
    """The share of the query's distinct terms that ``text`` contains, in [0, 1]."""
    wanted = set(terms(query))
    if not wanted:
        return 0.0
    return len(wanted & set(terms(text))) / len(wanted)


# The share of the reranked score taken from the question's best-matching
# sentence; the rest is the retrieval score.  (docs/retrieval.md: by term
# coverage alone the overlap reranker lowered nDCG@10 on both development sets.)
STATEMENT_SHARE = 0.5


class FakeReranker:
    """Blends each candidate's retrieval score with how closely one of its sentences
    states the question (:func:`ragsage.passage_scoring.passage_scores`).

    The retrieval half is scaled by the share of the question's terms the
    candidate holds, so a passage sharing one word of a four-word question
    stays under the engine's relevance floor, as it did when that share was the
    whole score; candidates sharing no term are dropped.  Both keep the honest
    "not found".
    """

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    async def rerank(
        self, query: str, candidates: Sequence[ScoredChunk], *, top_k: int
    ) -> Sequence[ScoredChunk]:
        self.calls.append((query, len(candidates)))
        read = passage_scores(query, [candidate.chunk.text for candidate in candidates])
        best = max((candidate.score for candidate in candidates), default=0.0)
        share = STATEMENT_SHARE
        rescored = []
        for position, (passage, candidate) in enumerate(zip(read, candidates, strict=True)):
            if passage.coverage <= 0.0:
                continue
            retrieval = max(candidate.score, 0.0) / best if best > 0 else 0.0
            score = (1 - share) * retrieval * passage.coverage + share * passage.statement
            rescored.append((score, -position, replace(candidate, rerank_score=score)))
        rescored.sort(key=lambda item: (item[0], item[1]), reverse=True)
        return [candidate for _, _, candidate in rescored[:top_k]]


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


class FakeLLMClient:
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
        self.prompts: list[str] = []
        self.transcribed: list[PageImage] = []

    async def generate(self, prompt: str) -> AsyncIterator[str]:
        self.prompts.append(prompt)
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
        self.transcribed.append(image)
        try:
            return image.data.decode("utf-8").strip()
        except UnicodeDecodeError:
            return ""


class FakeQueryRewriter:
    """Makes a follow-up standalone by appending earlier user turns' content words.

    A model would resolve "its price" to "the Pro plan's price"; appending the
    words said earlier gets the overlap-based retrieval to the same passage.
    """

    def __init__(self, *, max_added_terms: int = 12) -> None:
        self.max_added_terms = max_added_terms

    async def rewrite(self, question: str, history: Sequence[Turn]) -> str:
        if not history:
            return question
        present = set(terms(question))
        added: list[str] = []
        for turn in reversed(history):
            if turn.role != "user":
                continue
            for word in turn.content.split():
                term = terms(word)
                if term and term[0] not in present and len(added) < self.max_added_terms:
                    present.add(term[0])
                    added.append(word.strip(".,;:!?\"'()[]"))
        return f"{question} {' '.join(added)}".strip() if added else question
