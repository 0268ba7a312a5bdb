"""The offline reranker's signal: the question's weighted terms, one sentence at a time.

The fixture pages are self-written in the shape of a PDF manual's text layer:
the product's name and a page header on every page, hard line breaks inside
sentences, bullet lists, and an introduction that uses the question's words in
other senses, spread over the page.
"""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from ragsage.adapters.offline.passage_scoring import MAX_UNIT, passage_scores
from ragsage.core.chunks import Chunk, ScoredChunk
from ragsage.testing import FakeReranker

QUESTION = "Which ASN.1 type does this version of libtasn1 not handle?"
INTRODUCTION = """1 Introduction
This manual covers Libtasn1, a library for Abstract Syntax Notation One (ASN.1)
structures and their DER encoding. Its main features are:
• Structures are described in ASN.1 text files and read at run time.
• Numbers of any length are encoded and decoded.
• It is released under the GNU Lesser General Public License version 2.1 or later,
and the tools under version 3 or later.
• Several library handles and session handles may be used in parallel threads.
"""
ANSWER = """Chapter 2: ASN.1 structure handling 3
• SEQUENCE OF;
• SET;
• CHOICE;
• ANY DEFINED BY.
This version doesn't handle the REAL type. Neither the AUTOMATIC TAGS option
nor the EXPORT and IMPORT sections are supported.
The SIZE constraints are parsed, but never checked.
"""
TITLE_PAGE = """Libtasn1
Abstract Syntax Notation One (ASN.1) library for the GNU system
for version 4.19.0
"""
UNRELATED = "Chapter 3: Utilities 7\nThe parser program reads definitions and writes C code.\n"


def statement_scores(query: str, passages: list[str]) -> list[float]:
    return [score.statement for score in passage_scores(query, passages)]


def candidate(name: str, text: str, score: float) -> ScoredChunk:
    chunk = Chunk(id=f"manual:{name}", document_id="manual", ordinal=0, text=text, embed_text=text)
    return ScoredChunk(chunk=chunk, score=score)


def test_the_sentence_that_answers_outscores_a_page_of_scattered_mentions() -> None:
    intro, answer, title, unrelated = statement_scores(
        QUESTION, [INTRODUCTION, ANSWER, TITLE_PAGE, UNRELATED]
    )
    assert answer > intro > 0
    assert answer > title
    assert unrelated == 0.0  # it shares no word with the question


def test_the_reranker_puts_the_answer_first_over_a_higher_retrieval_score() -> None:
    # As retrieved by term counts: the introduction first, the answer second.
    candidates = [
        candidate("intro", INTRODUCTION, 0.98),
        candidate("answer", ANSWER, 0.84),
        candidate("title", TITLE_PAGE, 0.77),
        candidate("utilities", UNRELATED, 0.75),
    ]
    reranked = asyncio.run(FakeReranker().rerank(QUESTION, candidates, top_k=10))
    assert [c.chunk.id for c in reranked] == ["manual:answer", "manual:intro", "manual:title"]
    scores = [c.rerank_score for c in reranked]
    assert all(s is not None and 0 < s <= 1 for s in scores)
    assert scores == sorted(scores, reverse=True)  # shown scores agree with the order


def test_the_retrieval_score_still_counts() -> None:
    # Two equally good sentences: the better-retrieved passage stays first.
    same = "The REAL type is not handled by this version."
    candidates = [candidate("low", same, 0.2), candidate("high", same + " ", 0.9)]
    reranked = asyncio.run(FakeReranker().rerank(QUESTION, candidates, top_k=2))
    assert [c.chunk.id for c in reranked] == ["manual:high", "manual:low"]


def test_a_question_of_only_stop_words_matches_nothing() -> None:
    assert statement_scores("what is it?", [ANSWER, INTRODUCTION]) == [0.0, 0.0]
    assert statement_scores(QUESTION, []) == []


def test_a_long_run_without_sentence_ends_is_cut_into_pieces() -> None:
    # A table or code block: the two terms 60 words apart do not meet in one piece.
    filler = " ".join(f"cell{i}" for i in range(MAX_UNIT + 20))
    apart = f"version {filler} handle"
    together = f"version handle {filler}"
    far, near = statement_scores("version handle", [apart, together])
    assert near == 1.0 and 0 < far < near


WORDS = st.sampled_from(
    "version handle type real manual parser session library table index encode".split()
)


@settings(max_examples=200, deadline=None)
@given(
    query=st.lists(WORDS, min_size=1, max_size=6).map(" ".join),
    passages=st.lists(st.lists(WORDS, max_size=80).map(" ".join), max_size=8),
)
def test_scores_lie_in_0_1_and_ignore_the_candidates_order(query: str, passages: list[str]) -> None:
    scores = statement_scores(query, passages)
    assert len(scores) == len(passages)
    assert all(0.0 <= s <= 1.0 for s in scores)
    backwards = statement_scores(query, passages[::-1])
    assert backwards[::-1] == scores
    for passage, score in zip(passages, scores, strict=True):
        shares_a_word = bool(set(query.split()) & set(passage.split()))
        assert (score > 0) == shares_a_word


@settings(max_examples=100, deadline=None)
@given(query=st.lists(WORDS, min_size=1, max_size=6, unique=True).map(" ".join))
def test_the_question_itself_scores_one(query: str) -> None:
    assert statement_scores(query, [query, "unrelated words here"])[0] == 1.0
