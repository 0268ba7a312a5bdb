"""Every repository path the docs, the README and the code's own text name exists.

A pointer to a file that moved or never existed sends a reader nowhere; this
reads the Markdown (its links and its paths in backticks or prose) and the
Python sources (docstrings and comments alike), and checks each path that
starts at one of the repository's top-level folders, or a link relative to
the Markdown file that holds it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Where the text that names paths lives.
MARKDOWN = ("README.md", "docs", "bench", "deploy", "examples")
# Tests are left out: their strings are data (a made-up page path), not pointers.
SOURCES = ("ragsage", "api", "worker", "bench", "evaluation_data", "examples")
# A path named from the repository's root: a top-level folder, then a file with an extension.
_TOP = r"(?:docs|bench|ragsage|api|worker|tests|evaluation_data|deploy|examples|\.ci)"
_ROOTED = re.compile(
    rf"(?<![\w./-]){_TOP}/[\w./-]*\w\.(?:md|py|sql|jsonl?|toml|ya?ml|sh|png|txt)\b"
)
# A Markdown link to a file beside or below the page: [text](other.md#part).
_LINK = re.compile(r"\]\((?!https?:|mailto:|#|/)([^)\s#]+)(?:#[^)]*)?\)")


def named_paths(root: Path) -> Iterator[tuple[Path, str, Path]]:
    """(file, the path as written, where it should be) for every path named under ``root``."""
    for markdown in _files(root, MARKDOWN, "*.md"):
        text = markdown.read_text(encoding="utf-8")
        for match in _LINK.finditer(text):
            target = match.group(1)
            if _ROOTED.fullmatch(target) is None:
                yield markdown, target, (markdown.parent / target)
        yield from _rooted(root, markdown, text)
    for source in _files(root, SOURCES, "*.py"):
        yield from _rooted(root, source, source.read_text(encoding="utf-8"))


def missing(root: Path) -> list[str]:
    """``file: path`` for each named path that does not exist, in a stable order."""
    return sorted(
        {
            f"{place.relative_to(root)}: {written}"
            for place, written, target in named_paths(root)
            if not target.exists()
        }
    )


def _rooted(root: Path, place: Path, text: str) -> Iterator[tuple[Path, str, Path]]:
    for match in _ROOTED.finditer(text):
        yield place, match.group(0), root / match.group(0)


def _files(root: Path, tops: tuple[str, ...], pattern: str) -> Iterator[Path]:
    for top in tops:
        path = root / top
        if path.is_file():
            yield path
        elif path.is_dir():
            yield from sorted(p for p in path.rglob(pattern) if ".venv" not in p.parts)


def test_every_path_the_repository_names_exists() -> None:
    assert missing(ROOT) == []


def test_a_broken_pointer_is_reported(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "real.md").write_text("See [the guide](guide.md#setup).\n")
    (tmp_path / "docs" / "guide.md").write_text("Run `bench/gone.py`; read docs/real.md.\n")
    (tmp_path / "ragsage").mkdir()
    (tmp_path / "ragsage" / "x.py").write_text(
        '"""Measured by bench/never.py (docs/guide.md)."""\n# see docs/old.md\n'
    )
    assert missing(tmp_path) == [
        "docs/guide.md: bench/gone.py",
        "ragsage/x.py: bench/never.py",
        "ragsage/x.py: docs/old.md",
    ]
    (tmp_path / "docs" / "guide.md").unlink()
    assert "docs/real.md: guide.md" in missing(tmp_path)
