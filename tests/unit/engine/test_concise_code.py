from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragsage.core.chunks import ScoredChunk
from ragsage.core.errors import ConfigurationError
from ragsage.query import QueryConfig
from ragsage.query.scores import CONCISE_CODE_WORDS, prefer_concise_code

from .conftest import scored


def _hit(name: str, words: int, score: float, *, code: bool = True) -> ScoredChunk:
    body = " ".join(f"x{i} = step({i})" for i in range(max(1, words // 3)))
    text = f"```go\nfunc {name}() {{ {body} }}\n```" if code else f"{name}: {body}"
    return scored(name, text, score, "go" if code else "en")


def test_a_long_code_passage_yields_to_a_short_one_that_scores_nearly_as_well() -> None:
    long, short = _hit("Reconnect", 400, 0.80), _hit("backoff", 30, 0.70)
    ordered = prefer_concise_code([long, short])
    assert [c.chunk.id for c in ordered] == ["d:backoff", "d:Reconnect"]
    words = len(long.chunk.text.split())
    assert ordered[1].score == pytest.approx(0.80 * (CONCISE_CODE_WORDS / words) ** 0.3)
    assert ordered[0].score == 0.70


def test_prose_short_code_and_a_zero_exponent_keep_their_scores() -> None:
    prose = _hit("Handbook", 400, 0.80, code=False)
    short = _hit("backoff", 30, 0.75)
    assert prefer_concise_code([prose, short]) == [prose, short]
    long = _hit("Reconnect", 400, 0.80)
    assert prefer_concise_code([long, short], exponent=0.0) == [long, short]


def test_the_exponent_is_checked_by_name() -> None:
    with pytest.raises(ConfigurationError, match="code_length_exponent"):
        QueryConfig(code_length_exponent=-0.1)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 900), st.floats(0.0, 1.0), st.booleans()), min_size=0, max_size=12
    )
)
def test_scaling_only_lowers_scores_and_returns_every_hit_in_score_order(
    rows: list[tuple[int, float, bool]],
) -> None:
    hits = [_hit(f"h{i}", words, score, code=code) for i, (words, score, code) in enumerate(rows)]
    ordered = prefer_concise_code(hits)
    assert sorted(c.chunk.id for c in ordered) == sorted(c.chunk.id for c in hits)
    before = {c.chunk.id: c.score for c in hits}
    assert all(c.score <= before[c.chunk.id] for c in ordered)
    assert [c.score for c in ordered] == sorted((c.score for c in ordered), reverse=True)
