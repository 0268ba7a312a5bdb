"""Model adapters the worker under test loads through ``RAGSAGE_ADAPTERS``.

Honest offline providers with the failure modes real ones have: latency, and a
run of transient errors (what a provider adapter turns HTTP 503 into).  Knobs
come from environment variables so each test's worker process can differ.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragsage.adapters.parsing import HeuristicBackend
from ragsage.core.documents import RawSource
from ragsage.core.errors import PermanentProviderError, RetryableProviderError
from ragsage.core.pages import ParsedDocument
from ragsage.core.ports import InputType
from ragsage.settings import Settings
from ragsage.testing.models import FakeEmbedder


class FlakyEmbedder(FakeEmbedder):
    """The hashing embedder behind a provider that is slow, and fails N times first."""

    def __init__(self, *, dimension: int, delay: float, fail_first: int, counter: Path) -> None:
        super().__init__(dimension=dimension)
        self.delay, self.fail_first, self.counter = delay, fail_first, counter

    async def embed(
        self, texts: Sequence[str], *, input_type: InputType = "document"
    ) -> Sequence[tuple[float, ...]]:
        if self.one_at_a_time is not None:
            # As the local model runs: one batch at a time, the others waiting.
            async with self.one_at_a_time:
                return await self._embed(texts, input_type)
        return await self._embed(texts, input_type)

    async def _embed(
        self, texts: Sequence[str], input_type: InputType
    ) -> Sequence[tuple[float, ...]]:
        if self.delay:
            await asyncio.sleep(self.delay)
        # One byte appended per call: atomic across worker processes, unlike a
        # read-modify-write of a number.
        with self.counter.open("ab") as tally:
            tally.write(b".")
            calls = tally.tell() - 1
        if calls < self.fail_first:
            raise RetryableProviderError("embedding provider answered HTTP 503 (unavailable)")
        if self.delay_after_failures:
            await asyncio.sleep(self.delay_after_failures)
        return await super().embed(texts, input_type=input_type)

    delay_after_failures = 0.0
    one_at_a_time: asyncio.Lock | None = None


def flaky(settings: Settings) -> dict[str, Any]:
    embedder = FlakyEmbedder(
        dimension=settings.embedding_dim,
        delay=float(os.environ.get("TEST_EMBED_DELAY", "0")),
        fail_first=int(os.environ.get("TEST_EMBED_FAIL_FIRST", "0")),
        counter=Path(os.environ["TEST_EMBED_COUNTER"]),
    )
    embedder.delay_after_failures = float(os.environ.get("TEST_EMBED_DELAY_AFTER_FAILURES", "0"))
    if os.environ.get("TEST_EMBED_SERIAL"):
        embedder.one_at_a_time = asyncio.Lock()
    return {"embedder": embedder}


class CrashingEmbedder(FakeEmbedder):
    """A provider call that takes the whole worker process down, every time."""

    async def embed(
        self, texts: Sequence[str], *, input_type: InputType = "document"
    ) -> Sequence[tuple[float, ...]]:
        os._exit(3)


def crashing(settings: Settings) -> dict[str, Any]:
    return {"embedder": CrashingEmbedder(dimension=settings.embedding_dim)}


class MarkedFailureEmbedder(FlakyEmbedder):
    """Refuses, permanently, any text holding a marker word (one bad document)."""

    def __init__(self, *, marker: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.marker = marker

    async def embed(
        self, texts: Sequence[str], *, input_type: InputType = "document"
    ) -> Sequence[tuple[float, ...]]:
        if any(self.marker in text for text in texts):
            raise PermanentProviderError("the provider rejected this input (HTTP 400)")
        return await super().embed(texts, input_type=input_type)


def slow_second_model(settings: Settings) -> dict[str, Any]:
    """The default embedder as usual; any other hashing width slowed (and maybe picky)."""
    from ragsage.runtime import make_embedder

    delay = float(os.environ.get("TEST_EMBED_DELAY", "0"))
    marker = os.environ.get("TEST_REJECT_MARKER", "")
    counter = Path(os.environ["TEST_EMBED_COUNTER"])

    def factory(kind: str, model: str, dim: int | None) -> Any:
        if kind == "hashing" and dim not in (None, settings.embedding_dim):
            assert dim is not None
            if marker:
                return MarkedFailureEmbedder(
                    marker=marker, dimension=dim, delay=delay, fail_first=0, counter=counter
                )
            return FlakyEmbedder(dimension=dim, delay=delay, fail_first=0, counter=counter)
        return make_embedder(settings, kind, model, dim)

    return {"embedder_factory": factory}


class _Ticker(threading.Thread):
    """Ticks every 10 ms and remembers the longest pause between two ticks.

    While one call holds the GIL no thread of the process runs, so the pause
    it sees is how long the whole process (event loop and heartbeat with it)
    was frozen.
    """

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.longest = 0.0
        self.stopped = threading.Event()

    def run(self) -> None:
        last = time.monotonic()
        while not self.stopped.wait(0.01):
            now = time.monotonic()
            self.longest = max(self.longest, now - last)
            last = now


class BusyParser:
    """The built-in parser, after holding the CPU for a while on files named ``slow*``.

    ``how`` is ``python`` (a pure-Python loop that never yields) or ``gil``
    (one regular-expression match that backtracks for the whole time, a single
    C call that keeps the GIL).  What it measured goes to ``report`` as JSON:
    how long the burn took and the longest freeze of the process.
    """

    def __init__(self, how: str, seconds: float, report: Path) -> None:
        self.how, self.seconds, self.report = how, seconds, report
        self.backend = HeuristicBackend()
        self.cache_version = self.backend.cache_version

    def parse(self, source: RawSource) -> ParsedDocument:
        if source.filename.startswith("slow"):
            ticker = _Ticker()
            ticker.start()
            started = time.monotonic()
            self._burn(started + self.seconds)
            burned = time.monotonic() - started
            ticker.stopped.set()
            ticker.join()
            self.report.write_text(json.dumps({"burned": burned, "frozen": ticker.longest}))
        return self.backend.parse(source)

    def _burn(self, until: float) -> None:
        if self.how == "python":
            ticks = 0
            while time.monotonic() < until:
                ticks += 1
                if ticks % 200_000 == 0:
                    with self.report.with_suffix(".ticks").open("ab") as tally:
                        tally.write(b".")
            return
        # The first call is meant to take the whole time; its length is estimated
        # from a short one, which a busy machine makes too short, so the rest of
        # the time is burned the same way, and until one call has frozen the
        # process for two thirds of the time (what the lease test needs) more
        # calls are made, however long that takes.
        longest, wanted = 0.0, (until - time.monotonic()) * 2 / 3
        while (remaining := until - time.monotonic()) > 0.2 or longest < wanted:
            longest = max(longest, _backtracking_match(max(remaining, wanted)))


def _backtracking_match(seconds: float) -> float:
    """One ``re`` call of about ``seconds``; how long it took.  Each extra character doubles it."""
    pattern = re.compile(r"(a+)+b")
    length, took = 18, 0.0
    while took < 0.1:
        length += 1
        started = time.monotonic()
        pattern.match("a" * length)
        took = time.monotonic() - started
    # A busy machine stretches one timing and the call comes out too short (one
    # froze the process 5.3 s of 10): the quickest of three is the estimate.
    for _ in range(2):
        started = time.monotonic()
        pattern.match("a" * length)
        took = min(took, time.monotonic() - started)
    length += max(0, math.ceil(math.log2(seconds / took)))
    started = time.monotonic()
    pattern.match("a" * length)
    return time.monotonic() - started


def busy_parser(settings: Settings) -> dict[str, Any]:
    return {
        "parser": BusyParser(
            os.environ.get("TEST_PARSE_HOW", "python"),
            float(os.environ.get("TEST_PARSE_SECONDS", "10")),
            Path(os.environ["TEST_PARSE_REPORT"]),
        )
    }


class HoggingParser:
    """The built-in parser, after growing the process on files named ``hog*``.

    It holds 20 MB more every 20 ms up to ``TEST_HOG_MB`` (as a reader that
    builds a huge structure would), appending a line to ``TEST_HOG_REPORT`` per
    call, so a test can count how often the file was read.
    """

    def __init__(self, megabytes: int, report: Path) -> None:
        self.megabytes, self.report = megabytes, report
        self.backend = HeuristicBackend()
        self.cache_version = self.backend.cache_version

    def parse(self, source: RawSource) -> ParsedDocument:
        if source.filename.startswith("hog"):
            with self.report.open("a") as calls:
                calls.write(f"{os.getpid()}\n")
            held = []
            for _ in range(self.megabytes // 20):
                held.append(b"h" * (20 * 1024 * 1024))
                time.sleep(0.02)
            held.clear()
        return self.backend.parse(source)


def hogging_parser(settings: Settings) -> dict[str, Any]:
    return {
        "parser": HoggingParser(
            int(os.environ.get("TEST_HOG_MB", "1500")), Path(os.environ["TEST_HOG_REPORT"])
        )
    }
