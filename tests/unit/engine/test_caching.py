from __future__ import annotations

import pytest

from ragsage.caching import PARSE_CACHE_VERSION, decode_parsed, encode_parsed, parse_cache_key
from ragsage.fakes import FakeDocumentParser
from ragsage.parsing import HeuristicBackend
from ragsage.types import Page, PageImage, PageLayout, PageRoute, ParsedDocument


def test_parse_output_survives_the_round_trip_including_page_images() -> None:
    parsed = ParsedDocument(
        pages=(
            Page(1, "# Intro\n\nTyped text.", layout=PageLayout(20, 0.0, 0.0)),
            Page(
                2,
                "",
                layout=PageLayout(0, 0.97, 480_000.0),
                image=PageImage(b"\x89PNG\r\n\x1a\nbytes", "image/png", 800, 600),
                route=PageRoute.VISION,
            ),
        ),
        title="Manual",
        metadata={"author": "Ada"},
    )
    assert decode_parsed(encode_parsed(parsed)) == parsed


def test_the_key_is_the_namespace_content_hash_and_parser_not_the_name() -> None:
    key = parse_cache_key("acme", "abc123", FakeDocumentParser())
    assert key.endswith(":acme:abc123")
    assert "ragsage.fakes.parsing.FakeDocumentParser" in key
    assert f":v{PARSE_CACHE_VERSION}:" in key
    assert parse_cache_key("acme", "abc123", object()) != key
    # Another tenant's copy of the same bytes is another entry: a hit would tell.
    assert parse_cache_key("globex", "abc123", FakeDocumentParser()) != key


def test_a_new_parser_version_misses_what_the_old_one_cached() -> None:
    class NewerParser(FakeDocumentParser):
        cache_version = 7

    older = parse_cache_key("acme", "abc123", FakeDocumentParser())
    newer = parse_cache_key("acme", "abc123", NewerParser())
    assert newer != older and "@7:" in newer
    structured = parse_cache_key("acme", "abc123", HeuristicBackend())
    assert "@4-definitions:" in structured
    # Reading code by lines gives other pages for the same bytes: another entry.
    assert structured != parse_cache_key("acme", "abc123", HeuristicBackend(code_chunking="lines"))


@pytest.mark.parametrize(
    "payload",
    [
        "",
        "not json",
        "[]",
        '{"v": 999, "title": null, "metadata": {}, "pages": [{"number": 1, "text": "x"}]}',
        '{"v": 1, "title": null, "metadata": {}, "pages": []}',
        '{"v": 1, "title": 5, "metadata": {}, "pages": [{"number": 1, "text": "x"}]}',
        '{"v": 1, "title": null, "metadata": {}, "pages": [{"number": 1}]}',
        '{"v": 1, "title": null, "metadata": {}, "pages": [{"number": 1, "text": "x",'
        ' "image": {"data": "%%%notbase64", "media_type": "image/png"}}]}',
        '{"v": 1, "title": null, "metadata": {}, "pages": [{"number": 1, "text": "x",'
        ' "route": "telepathy"}]}',
        '{"v": 1, "title": null, "metadata": {}, "pages": [{"number": 1, "text": "x",'
        ' "layout": [1, 2]}]}',
        "[" * 100_000,
    ],
)
def test_untrustworthy_entries_decode_as_a_miss(payload: str) -> None:
    assert decode_parsed(payload) is None
