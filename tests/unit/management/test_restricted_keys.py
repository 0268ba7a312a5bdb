"""Restricted keys as tokens: what a valid one grants, and why every other one is refused."""

from __future__ import annotations

import base64
import time
from datetime import UTC, datetime, timedelta

import jwt
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragsage.core.chunks import Chunk
from ragsage.core.errors import Forbidden, InvalidRequest
from ragsage.core.filters import SearchFilters
from ragsage.core.keys import Role, Signer
from ragsage.management.restricted_keys import (
    RestrictedKeyRefused,
    SignatureMismatch,
    grant_of,
    looks_restricted,
    mint,
    parent_of,
    verify,
)

SECRET = "rss_" + "s" * 43
PARENT = Signer("acme", "k123456789", None, SECRET)
BOUND = Signer("acme", "k123456789", frozenset({"group:sales", "user:ana"}), SECRET)
DAY = 86400


def _token(**claims: object) -> str:
    payload = {"ns": "acme", "exp": time.time() + 60, "principals": ["user:ana"], **claims}
    return jwt.encode(payload, SECRET, algorithm="HS256", headers={"kid": PARENT.key_id})


def test_a_minted_key_acts_as_its_grant_under_its_parent() -> None:
    filters = SearchFilters(sources=frozenset({"handbook.md"}))
    grant = grant_of(["user:ana"], 600, filters=filters, subject="ana-42")
    token = mint(PARENT.key_id, "acme", SECRET, grant)
    assert looks_restricted(token) and parent_of(token) == ("acme", PARENT.key_id)
    who = verify(token, PARENT, max_lifetime=DAY)
    assert who.scope.namespace == "acme" and who.scope.principals == {"user:ana"}
    assert who.key_id == PARENT.key_id and who.role is Role.READ
    assert who.restriction is not None and who.restriction.filters == filters
    assert who.restriction.subject == "ana-42" and token not in who.label
    assert who.label.startswith(f"{PARENT.key_id}/restricted/")
    # Two keys of one grant are two keys: each counted and logged apart.
    again = mint(PARENT.key_id, "acme", SECRET, grant)
    assert again != token and verify(again, PARENT, max_lifetime=DAY).holder != who.holder


def test_every_key_that_is_not_valid_now_is_refused_with_its_reason() -> None:
    now = time.time()
    with pytest.raises(RestrictedKeyRefused, match="expired at"):
        verify(_token(exp=now - 1), PARENT, max_lifetime=DAY, now=now)
    with pytest.raises(SignatureMismatch):
        verify(_token(), Signer("acme", PARENT.key_id, None, "rss_" + "o" * 43), max_lifetime=DAY)
    with pytest.raises(RestrictedKeyRefused, match="another namespace"):
        verify(_token(ns="globex"), PARENT, max_lifetime=DAY)
    for claims, reason in (
        ({"filter": {"sources": ["a"]}}, "filter"),  # misspelt: refused, never ignored
        ({"principals": []}, "principals"),
        ({"principals": ["a,b"]}, "principal name"),
        ({"role": "admin"}, "role"),
        ({"role": "write", "filters": {"sources": ["a"]}}, "read-only"),
        ({"sub": "has space"}, "sub"),
        ({"exp": "tomorrow"}, "exp"),
    ):
        with pytest.raises(RestrictedKeyRefused, match=reason):
            verify(_token(**claims), PARENT, max_lifetime=DAY)
    deep = base64.urlsafe_b64encode(b"[" * 6000 + b"]" * 6000).rstrip(b"=").decode()
    for malformed in (
        "eyJ.e30.x",
        jwt.encode({"ns": "acme"}, SECRET, algorithm="HS256"),
        f"{_token().split('.')[0]}.{deep}.x",  # nested past the JSON decoder's depth
    ):
        with pytest.raises(RestrictedKeyRefused):
            parent_of(malformed)
    none_signed = jwt.encode(
        {"ns": "acme", "exp": now + 60, "principals": ["x"]},
        None,
        algorithm="none",
        headers={"kid": PARENT.key_id},
    )
    with pytest.raises(RestrictedKeyRefused):
        verify(none_signed, PARENT, max_lifetime=DAY)  # the "none" algorithm is never taken


def test_a_key_asking_more_than_its_parent_may_grant_is_forbidden() -> None:
    verify(_token(principals=["group:sales"]), BOUND, max_lifetime=DAY)
    with pytest.raises(Forbidden, match="group:hr is not among"):
        verify(_token(principals=["group:sales", "group:hr"]), BOUND, max_lifetime=DAY)
    with pytest.raises(Forbidden, match="at most 3600 seconds"):
        verify(_token(exp=time.time() + 3600 + 120), PARENT, max_lifetime=3600)
    # A minter's clock a little ahead of the API's is no over-grant.
    verify(_token(exp=time.time() + 3600 + 30), PARENT, max_lifetime=3600)
    with pytest.raises(InvalidRequest, match="read or write"):
        grant_of(["user:ana"], 60, role="delegate")
    with pytest.raises(InvalidRequest, match="expiry"):
        grant_of(["user:ana"], 0)
    with pytest.raises(InvalidRequest, match="ten years"):
        grant_of(["user:ana"], 251605850904)  # once a 500 (a date past the calendar)
    with pytest.raises(RestrictedKeyRefused, match="ten years"):
        verify(_token(exp=1e15), PARENT, max_lifetime=DAY)


def _chunk(source: str, kind: str, day: int) -> Chunk:
    return Chunk(
        id=f"{source}-{kind}-{day}",
        document_id=f"doc-{source}",
        ordinal=0,
        text="x",
        embed_text="x",
        source=source,
        metadata={"kind": kind},
        created_at=datetime(2026, 1, 1, tzinfo=UTC) + timedelta(days=day),
    )


_SOURCES = st.frozensets(st.sampled_from(["a.md", "b.md", "c.md"]), max_size=3)
_FILTERS = st.builds(
    SearchFilters,
    document_ids=st.none() | st.frozensets(st.sampled_from(["doc-a.md", "doc-b.md"])),
    sources=st.none() | _SOURCES,
    metadata=st.none() | st.dictionaries(st.just("kind"), st.sampled_from(["memo", "policy"])),
    created_after=st.none() | st.integers(0, 9).map(lambda d: datetime(2026, 1, 1 + d, tzinfo=UTC)),
    created_before=st.none()
    | st.integers(0, 9).map(lambda d: datetime(2026, 1, 1 + d, tzinfo=UTC)),
)


@given(forced=_FILTERS, asked=_FILTERS)
def test_a_keys_filters_narrow_a_request_to_what_passes_both(
    forced: SearchFilters, asked: SearchFilters
) -> None:
    both = forced.narrowing(asked)
    for source in ("a.md", "b.md", "c.md"):
        for kind in ("memo", "policy"):
            for day in range(10):
                chunk = _chunk(source, kind, day)
                assert both.matches(chunk) == (forced.matches(chunk) and asked.matches(chunk))
