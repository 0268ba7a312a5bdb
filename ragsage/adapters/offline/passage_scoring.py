"""How closely a passage states what a question asks, from its words alone.

The offline reranker's lexical signal.  Counting how many of the question's
terms a passage holds treats every term alike and ignores where they stand, so
in a manual whose pages all say "ASN.1", "libtasn1" and "version", an
introduction that scatters those words over a page beats the one sentence that
answers.  Two changes, neither needing statistics of the corpus:

* **Terms weighted by the candidates themselves.**  A term that nearly every
  candidate holds separates them no better than a stop word; one that few hold
  is the question's point.  A term weighs ``log((n + 1) / (df + 0.5))`` over
  the ``n`` candidates, so the weights belong to the passages being ranked, not
  to one corpus.  A term no candidate holds weighs the most and counts against
  all of them alike.
* **One statement at a time.**  A passage scores by its best sentence (a list
  item counts as one; a sentence longer than :data:`MAX_UNIT` words is cut into
  pieces of that length), so the question's terms count when they meet.

The score is the best sentence's share of the question's total term weight: 0
for a passage holding none of its terms, 1 for a sentence holding all of them.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ragsage.core.text import STOPWORDS, WORD_PATTERN, stem, terms

# A long sentence; beyond it, a "sentence" is a table row run or code.
MAX_UNIT = 40
# One pass finds both: a word (as ragsage.core.text.words reads one), or a break
# between statements (a sentence end, a bullet, a blank line).
_TOKEN = re.compile(rf"({WORD_PATTERN})|[.!?;](?=\s)|[•▪◦·]|\n\s*\n", re.UNICODE)


@dataclass(frozen=True, slots=True)
class PassageScore:
    """Two readings of one passage against a question, each in [0, 1]."""

    statement: float  # the best sentence's share of the question's term weight
    coverage: float  # the share of the question's distinct terms the passage holds


def passage_scores(query: str, passages: Sequence[str]) -> list[PassageScore]:
    """Each passage's :class:`PassageScore` for ``query``."""
    wanted = set(terms(query))
    if not wanted or not passages:
        return [PassageScore(0.0, 0.0)] * len(passages)
    units = [_units(passage, wanted) for passage in passages]
    holding = [set().union(*found) for found in units]
    present = Counter(term for held in holding for term in held)
    count = len(passages)
    weight = {term: math.log((count + 1) / (present[term] + 0.5)) for term in wanted}
    total = math.fsum(weight.values())
    return [
        PassageScore(
            # fsum and the clamp keep rounding from reading a whole sentence as 1.0000000000000002
            statement=min(1.0, max(math.fsum(weight[t] for t in unit) for unit in found) / total),
            coverage=len(held) / len(wanted),
        )
        for found, held in zip(units, holding, strict=True)
    ]


def _units(passage: str, wanted: set[str]) -> list[set[str]]:
    """The wanted terms of each sentence (or piece of one) of ``passage``."""
    out: list[set[str]] = []
    found: set[str] = set()
    length = 0
    for match in _TOKEN.finditer(passage):
        word = match.group(1)
        if word is None:  # a break
            if found:
                out.append(found)
            found, length = set(), 0
            continue
        word = word.lower().replace("’", "'")
        if word in STOPWORDS:
            continue
        if length == MAX_UNIT:
            if found:
                out.append(found)
            found, length = set(), 0
        length += 1
        term = stem(word)
        if term in wanted:
            found.add(term)
    if found:
        out.append(found)
    return out or [set()]
