from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from ragsage.adapters.parsing import HeuristicBackend, LayoutPageClassifier, tokens
from ragsage.adapters.parsing.tokens import DEFAULT_ENCODING
from ragsage.core.documents import Document, RawSource
from ragsage.core.pages import ParsedDocument
from tests.fixtures.make_fixtures import build_all


@pytest.fixture(scope="session")
def fixture_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return build_all(tmp_path_factory.mktemp("documents"))


@pytest.fixture(scope="session")
def backend() -> HeuristicBackend:
    return HeuristicBackend()


@pytest.fixture(scope="session")
def classifier() -> LayoutPageClassifier:
    return LayoutPageClassifier()


@pytest.fixture(scope="session")
def parse(fixture_files, backend):
    def _parse(name: str) -> ParsedDocument:
        path = fixture_files[name]
        return backend.parse(RawSource(content=path.read_bytes(), filename=path.name))

    return _parse


def make_document(
    title: str = "Handbook", *, source: str = "handbook", metadata: Mapping[str, Any] | None = None
) -> Document:
    return Document(
        id="doc_1", content_hash="0" * 64, title=title, source=source, metadata=metadata or {}
    )


def _tally_encoder(monkeypatch: pytest.MonkeyPatch, measure) -> list[int]:
    """From now on, ``measure(text, tokens)`` of every encoder call is added to the one element."""
    seen = [0]
    real = tokens.load_encoding

    class Spy:
        def __init__(self, encoding):
            self.encoding = encoding

        def encode_ordinary(self, text):
            out = self.encoding.encode_ordinary(text)
            seen[0] += measure(text, out)
            return out

    monkeypatch.setattr(tokens, "load_encoding", lambda name=DEFAULT_ENCODING: Spy(real(name)))
    return seen


def encoded_characters(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """From now on, every character handed to an encoder is added to the one element returned."""
    return _tally_encoder(monkeypatch, lambda text, _: len(text))


def encoded_tokens(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """From now on, every token an encoder produces is added to the one element returned."""
    return _tally_encoder(monkeypatch, lambda _, out: len(out))
