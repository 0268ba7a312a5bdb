from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragsage.core.chunks import Chunk, Ranked, ScoredChunk
from ragsage.query.fusion import (
    FusionMethod,
    fuse,
    fuse_ranked,
    reciprocal_rank_fusion,
    score_fusion,
)

from .conftest import scored


def candidate(
    name: str, *, vector: float | None = None, keyword: float | None = None
) -> ScoredChunk:
    chunk = Chunk(id=f"d:{name}", document_id="d", ordinal=0, text=name, embed_text=name)
    return ScoredChunk(
        chunk=chunk, score=vector or keyword or 0.0, vector_score=vector, keyword_score=keyword
    )


DENSE = [candidate("a", vector=0.9), candidate("b", vector=0.8), candidate("c", vector=0.7)]
LEXICAL = [candidate("c", keyword=12.0), candidate("d", keyword=9.0), candidate("a", keyword=3.0)]


def ids(fused: list[ScoredChunk]) -> list[str]:
    return [c.chunk.text for c in fused]


def test_equal_weights_favour_chunks_both_retrievers_found() -> None:
    fused = reciprocal_rank_fusion(DENSE, LEXICAL, alpha=0.5, k=60)
    assert ids(fused)[:2] == ["a", "c"] or ids(fused)[:2] == ["c", "a"]
    assert set(ids(fused)) == {"a", "b", "c", "d"}
    a = next(c for c in fused if c.chunk.text == "a")
    assert a.score == pytest.approx(0.5 / 61 + 0.5 / 63)
    assert (a.vector_score, a.keyword_score) == (0.9, 3.0)


def test_alpha_one_and_zero_follow_one_retriever() -> None:
    assert ids(reciprocal_rank_fusion(DENSE, LEXICAL, alpha=1.0))[:3] == ["a", "b", "c"]
    assert ids(reciprocal_rank_fusion(DENSE, LEXICAL, alpha=0.0))[:3] == ["c", "d", "a"]


def test_weight_shifts_the_order_toward_the_favoured_retriever() -> None:
    dense_heavy = ids(reciprocal_rank_fusion(DENSE, LEXICAL, alpha=0.8))
    lexical_heavy = ids(reciprocal_rank_fusion(DENSE, LEXICAL, alpha=0.2))
    assert dense_heavy.index("b") < dense_heavy.index("d")
    assert lexical_heavy.index("d") < lexical_heavy.index("b")


def test_bad_parameters_are_rejected() -> None:
    with pytest.raises(ValueError, match="alpha"):
        reciprocal_rank_fusion(DENSE, LEXICAL, alpha=-0.1)
    with pytest.raises(ValueError, match="k must"):
        reciprocal_rank_fusion(DENSE, LEXICAL, k=0)


def test_score_fusion_keeps_how_far_apart_the_hits_are() -> None:
    # Dense barely prefers b over a; the keyword list strongly prefers a.
    dense = [candidate("b", vector=0.81), candidate("a", vector=0.80), candidate("c", vector=0.10)]
    lexical = [candidate("a", keyword=9.0), candidate("b", keyword=1.0)]
    fused = score_fusion(dense, lexical, alpha=0.5)
    assert ids(fused) == ["a", "b", "c"]
    # Reciprocal ranks see a tie between a and b and break it on the id.
    assert ids(reciprocal_rank_fusion(dense, lexical))[:2] == ["a", "b"]
    assert fused[0].score == pytest.approx(0.5 * (0.80 / 0.81) + 0.5 * 1.0)
    assert fused[2].score == pytest.approx(0.5 * (0.10 / 0.81))


def test_score_fusion_with_alpha_one_is_the_dense_order() -> None:
    dense = [candidate("x", vector=0.9), candidate("y", vector=0.5)]
    lexical = [candidate("y", keyword=3.0), candidate("z", keyword=2.0)]
    assert ids(score_fusion(dense, lexical, alpha=1.0))[:2] == ["x", "y"]


def test_fuse_names_an_unknown_method() -> None:
    with pytest.raises(ValueError, match="unknown fusion method 'mean'"):
        fuse("mean", [], [], alpha=0.5)  # type: ignore[arg-type]


_SCORES = st.lists(
    st.tuples(st.sampled_from("abcdefgh"), st.floats(-1.0, 50.0, allow_nan=False)),
    max_size=8,
    unique_by=lambda pair: pair[0],
)


@settings(max_examples=200, deadline=None)
@given(
    dense=_SCORES,
    lexical=_SCORES,
    alpha=st.floats(0.0, 1.0),
    method=st.sampled_from(["rrf", "score", "minmax"]),
)
def test_fusing_by_id_ranks_and_scores_as_fusing_whole_chunks(
    dense: list[tuple[str, float]],
    lexical: list[tuple[str, float]],
    alpha: float,
    method: FusionMethod,
) -> None:
    # The id-only path (rows read for the winners alone) must not change a search.
    whole = fuse(
        method,
        [candidate(n, vector=v) for n, v in dense],
        [candidate(n, keyword=v) for n, v in lexical],
        alpha=alpha,
    )
    by_id = fuse_ranked(
        method,
        [Ranked(f"d:{n}", v) for n, v in dense],
        [Ranked(f"d:{n}", v) for n, v in lexical],
        alpha=alpha,
    )
    assert [f.chunk_id for f in by_id] == [c.chunk.id for c in whole]
    for f, c in zip(by_id, whole, strict=True):
        assert (f.score, f.vector_score, f.keyword_score) == (
            c.score,
            c.vector_score,
            c.keyword_score,
        )


def _code(
    name: str, score: float, language: str | None = "rust", *, fenced: bool = False
) -> ScoredChunk:
    # A code reader writes one fenced block; prose whose caller set a language
    # of its own (say "en") in the metadata is not code.
    text = f"```{language}\nfn {name}() {{}}\n```" if fenced else name
    return scored(name, text, score, language)


def test_close_cosines_count_once_stretched_from_worst_to_best() -> None:
    # A code question's cosines sit close together; keyword scores spread out.
    dense = [_code("answer", 0.52), _code("near", 0.50), _code("far", 0.47)]
    lexical = [_code("far", 14.0), _code("near", 9.0), _code("answer", 6.0)]
    divided = fuse("score", dense, lexical, alpha=0.5)
    stretched = fuse("minmax", dense, lexical, alpha=0.5)
    assert ids(divided)[0] == "far" and ids(stretched)[0] == "answer"
    # Each list's last hit keeps a sliver, so recency can still lift it.
    assert min(c.score for c in stretched) > 0


@pytest.mark.parametrize(
    ("question", "language", "chosen"),
    [
        ("how are negative nanosecond counts turned into seconds?", "rust", ("minmax", 0.5)),
        ("what does run_connecting return?", "rust", ("score", 0.3)),
        ("how is IndexMap::last_mut implemented?", "rust", ("score", 0.3)),
        ("what does getLogger do?", "java", ("score", 0.3)),
        ("how are negative nanosecond counts turned into seconds?", None, ("score", 0.3)),
        ("how are negative nanosecond counts turned into seconds?", "en", ("score", 0.3)),
    ],
)
def test_a_question_about_code_that_names_none_of_it_is_stretched_and_weighed_equally(
    question: str, language: str | None, chosen: tuple[FusionMethod, float]
) -> None:
    from ragsage.query.fusion import fusion_for

    fenced = language not in (None, "en")
    dense = [_code(f"v{i}", 0.5 - i / 100, language, fenced=fenced) for i in range(5)]
    lexical = [_code(f"k{i}", 10.0 - i, language, fenced=fenced) for i in range(5)]
    assert fusion_for("score", question, dense, lexical) == chosen
    # A keyword hit far above the rest (a comment's own words) keeps its weight.
    found = [_code("k0", 20.0, language, fenced=fenced), *lexical[1:]]
    assert fusion_for("score", question, dense, found) == (chosen[0], 0.3)
    # A weight the caller chose is kept, whichever way the lists are scaled.
    assert fusion_for("score", question, dense, lexical, 0.8) == (chosen[0], 0.8)
    # Reciprocal ranks, and candidates whose rows were not read, are left alone.
    assert fusion_for("rrf", question, dense, lexical) == ("rrf", 0.3)
    unread = [Ranked(f"k{i}", 1.0) for i in range(5)]
    assert fusion_for("score", question, unread, unread) == ("score", 0.3)
