from __future__ import annotations

import pytest

from ragsage.adapters.embedding_cache import CachingEmbedder
from ragsage.adapters.parsing import HeuristicBackend
from ragsage.core.cache_writes import cache_write
from ragsage.core.documents import RawSource
from ragsage.core.geometry import Box
from ragsage.core.pages import Page, PageImage, PageLayout, PageRoute, ParsedDocument
from ragsage.core.scopes import Scope
from ragsage.ingestion.parse_cache import (
    PARSE_CACHE_VERSION,
    decode_parsed,
    encode_parsed,
    parse_cache_key,
)
from ragsage.testing import FakeCache, FakeDocumentParser, FakeEmbedder, FakeEngineKit


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
    assert "ragsage.testing.parsing.FakeDocumentParser" in key
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
    assert "@5-definitions:" in structured
    # Reading code by lines gives other pages for the same bytes: another entry.
    assert structured != parse_cache_key("acme", "abc123", HeuristicBackend(code_chunking="lines"))


@pytest.mark.parametrize(
    "payload",
    [
        "",
        "not json",
        "[]",
        '{"v": 999, "title": null, "metadata": {}, "pages": [{"number": 1, "text": "x"}]}',
        '{"v": 2, "title": null, "metadata": {}, "pages": []}',
        '{"v": 2, "title": 5, "metadata": {}, "pages": [{"number": 1, "text": "x"}]}',
        '{"v": 2, "title": null, "metadata": {}, "pages": [{"number": 1}]}',
        '{"v": 2, "title": null, "metadata": {}, "pages": [{"number": 1, "text": "x",'
        ' "image": {"data": "%%%notbase64", "media_type": "image/png"}}]}',
        '{"v": 2, "title": null, "metadata": {}, "pages": [{"number": 1, "text": "x",'
        ' "route": "telepathy"}]}',
        '{"v": 2, "title": null, "metadata": {}, "pages": [{"number": 1, "text": "x",'
        ' "layout": [1, 2]}]}',
        "[" * 100_000,
        # Values of the wrong JSON type, which Python would otherwise accept:
        '{"v": 2, "title": null, "metadata": {}, "pages": [{"number": true, "text": "x"}]}',
        '{"v": 2, "title": null, "metadata": {}, "pages": [{"number": 1.0, "text": "x"}]}',
        '{"v": 2, "title": null, "metadata": {}, "pages": [{"number": 1, "text": "x",'
        ' "layout": ["12", 0.5, 0.1]}]}',
        '{"v": 2, "title": null, "metadata": {}, "pages": [{"number": 1, "text": "x",'
        ' "layout": [12, true, 0.1]}]}',
        '{"v": 2, "title": null, "metadata": {}, "pages": [{"number": 1, "text": "x",'
        ' "image": {"data": "", "media_type": "image/png", "width": "640"}}]}',
        '{"v": 2, "title": null, "metadata": {}, "pages": [{"number": 1, "text": "x",'
        ' "image": {"data": "", "media_type": 7}}]}',
        '{"v": 2, "title": null, "metadata": {}, "pages": [{"number": 1, "text": "x",'
        ' "image": []}]}',
        '{"v": 2, "title": null, "metadata": {}, "pages": [{"number": 1, "text": "x",'
        ' "image": "x"}]}',
        '{"v": 2, "title": null, "metadata": {}, "pages": [{"number": 1, "text": "x",'
        ' "layout": [12, ' + "9" * 400 + ", 0.1]}]}",
        '{"v": 2, "title": null, "metadata": {}, "pages": [{"number": 1, "text": "x",'
        ' "positions": {"width": 10}}]}',
        '{"v": 2, "title": null, "metadata": {}, "pages": [{"number": 1, "text": "x",'
        ' "positions": {"width": 10, "height": 10, "lines": [[0]]}}]}',
    ],
)
def test_untrustworthy_entries_decode_as_a_miss(payload: str) -> None:
    assert decode_parsed(payload) is None


def test_well_typed_entries_still_decode() -> None:
    payload = (
        '{"v": 2, "title": null, "metadata": {}, "pages": [{"number": 2, "text": "x",'
        ' "layout": [12, 0, 0.25], "image": {"data": "", "media_type": "image/png",'
        ' "width": 640, "height": null}}]}'
    )
    decoded = decode_parsed(payload)
    assert decoded is not None
    page = decoded.pages[0]
    assert page.number == 2 and page.layout == PageLayout(12, 0.0, 0.25)
    placed = decode_parsed(
        '{"v": 2, "title": null, "metadata": {}, "pages": [{"number": 1, "text": "ab",'
        ' "positions": {"width": 10, "height": 20, "lines": [[0, 2, 1, 2, 3, 4]]}}]}'
    )
    assert placed is not None and placed.pages[0].positions is not None
    assert placed.pages[0].positions.boxes(0, 2) == [Box(1.0, 2.0, 3.0, 4.0)]
    assert page.image is not None and (page.image.width, page.image.height) == (640, None)


class PageShapedCache:
    """A cache written from the adapters reference alone: get(key) and set(key, value)."""

    def __init__(self) -> None:
        self.entries: dict[str, str] = {}
        self.hits = 0

    async def get(self, key: str) -> str | None:
        found = self.entries.get(key)
        self.hits += found is not None
        return found

    async def set(self, key: str, value: str) -> None:
        self.entries[key] = value


async def test_a_cache_without_expiry_receives_every_write(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cache = PageShapedCache()
    source = RawSource(b"Refunds take five days.", "refunds.txt")
    for _ in range(2):  # two workers with their own stores, one shared cache
        kit = FakeEngineKit()
        kit.cache = cache  # type: ignore[assignment]
        await kit.ingestion().ingest(Scope("acme"), source)
    assert [key for key in cache.entries if key.startswith("ragsage:parse:")], cache.entries
    assert cache.hits == 1  # the second worker read the first one's parse
    assert not [r for r in caplog.records if "cache write failed" in r.getMessage()]

    embedder = CachingEmbedder(FakeEmbedder(dimension=16), cache)
    await embedder.embed(["alpha"])
    assert embedder.key("alpha", "document") in cache.entries


async def test_a_cache_that_takes_a_ttl_is_given_one() -> None:
    now = [0.0]
    cache = FakeCache(clock=lambda: now[0])
    await cache_write(cache, "k", "v", ttl_seconds=10)
    assert await cache.get("k") == "v"
    now[0] = 11.0
    assert await cache.get("k") is None  # it expired: the TTL reached the cache
    await cache_write(cache, "k", "v", ttl_seconds=None)
    now[0] = 1e9
    assert await cache.get("k") == "v"
