from __future__ import annotations

from pathlib import Path

import pytest

from ragsage.parsing import HeuristicBackend, LayoutPageClassifier
from ragsage.types import Document, ParsedDocument, RawSource
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


def make_document(title: str = "Handbook") -> Document:
    return Document(id="doc_1", content_hash="0" * 64, title=title, source="handbook")
