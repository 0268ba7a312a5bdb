"""The SQLite embedding cache: vectors survive the process, and two runs can share the file."""

from __future__ import annotations

from pathlib import Path

from ragsage.cli.evaluation.disk_cache import SqliteCache, cached_embedder
from ragsage.testing import FakeEmbedder


async def test_a_second_embedder_reads_what_the_first_wrote(tmp_path: Path) -> None:
    first, cache = cached_embedder(FakeEmbedder(dimension=32), tmp_path)
    vectors = await first.embed(["alpha beta", "gamma"])
    cache.close()

    inner = FakeEmbedder(dimension=32)
    second, cache = cached_embedder(inner, tmp_path)
    assert await second.embed(["alpha beta", "gamma"]) == vectors
    assert second.hits == 2 and inner.calls == []
    cache.close()


async def test_two_open_caches_on_one_file_both_write(tmp_path: Path) -> None:
    with SqliteCache(tmp_path / "c.sqlite3") as one, SqliteCache(tmp_path / "c.sqlite3") as two:
        await one.set("a", "1")
        await two.set("b", "2")
        await one.set("c", "3")
        assert await two.get("a") == "1" and await one.get("b") == "2"
        assert await two.get("missing") is None
