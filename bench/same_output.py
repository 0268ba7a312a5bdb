"""Do two versions of ragsage chunk and contextualize real documents exactly alike?

    python bench/same_output.py snapshot OUT.pickle [--doc-root DIR] [--no-joined]
    python bench/same_output.py compare BEFORE.pickle AFTER.pickle

``snapshot`` parses every HTML page and Markdown file under the doc root (Debian's
``/usr/share/doc`` by default) and the Markdown documents ``bench/stages.py``
joins at 100KB, 1MB and 10MB, then chunks and contextualizes each under three
settings: the defaults (512/64 tokens, cl100k), small o200k chunks with a
64-token context ceiling, and tiny cl100k chunks with sections joined.  It
stores every chunk's text, span, heading path, pages and id, and every
contextualized text.  To snapshot an older version, put its tree first on the
path (``git archive <commit> ragsage | tar -x -C /tmp/old`` and
``PYTHONPATH=/tmp/old``).  ``compare`` reports how many of them differ and
shows the first difference of a few; it exits 1 when any does.
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import stages
from site_chrome import html_pages

import ragsage
from ragsage.adapters.parsing import HeuristicBackend
from ragsage.adapters.parsing.contextualizing import HeadingWindowContextualizer
from ragsage.core.documents import Document, RawSource

JOINED_SIZES = (100_000, 1_000_000, 10_000_000)


def settings() -> list[tuple[str, HeuristicBackend, HeadingWindowContextualizer, int, int]]:
    """(label, backend, contextualizer, chunk size, overlap) for every run."""
    return [
        ("cl100k-512-64", HeuristicBackend(), HeadingWindowContextualizer(), 512, 64),
        (
            "o200k-128-32",
            HeuristicBackend(encoding_name="o200k_base"),
            HeadingWindowContextualizer(
                window=3, max_context_tokens=64, encoding_name="o200k_base"
            ),
            128,
            32,
        ),
        (
            "cl100k-64-16-joined",
            HeuristicBackend(join_sections=0.5),
            HeadingWindowContextualizer(window=1, max_context_tokens=200),
            64,
            16,
        ),
    ]


def sources(doc_root: Path, *, joined: bool = True) -> Iterator[tuple[str, str, RawSource]]:
    for path in html_pages(doc_root):
        yield "html", str(path), RawSource(path.read_bytes(), path.name, "text/html")
    for path in stages.markdown_files(doc_root):
        data = stages.read_markdown(path)
        if data:
            name = path.name.removesuffix(".gz")
            yield "markdown", str(path), RawSource(data, name, "text/markdown")
    for document in stages.build_inputs(["markdown"], JOINED_SIZES if joined else (), doc_root):
        yield "joined", document.source.filename, document.source


def snapshot(doc_root: Path, *, joined: bool = True) -> dict[tuple[str, ...], Any]:
    out: dict[tuple[str, ...], Any] = {}
    runs = settings()
    parser = HeuristicBackend()
    for kind, name, source in sources(doc_root, joined=joined):
        try:
            parsed = parser.parse(source)
        except Exception as exc:  # a refusal is compared too
            out[(kind, name)] = ("error", type(exc).__name__, str(exc))
            continue
        document = Document(
            id="same-output",
            content_hash="0" * 64,
            title=parsed.title or source.filename,
            source=source.filename,
            metadata=dict(parsed.metadata),
        )
        pages = list(parsed.pages)
        # The joined documents are large: the default settings only.
        for label, backend, contextualizer, size, overlap in runs[:1] if kind == "joined" else runs:
            chunks = list(backend.chunk(document, pages, size=size, overlap=overlap))
            texts = contextualizer.texts(document, chunks, pages)
            out[(kind, name, label)] = (
                [
                    (c.text, c.start_char, c.end_char, c.heading_path, c.page_numbers, c.id)
                    for c in chunks
                ],
                texts,
            )
    return out


def compare(before: dict[tuple[str, ...], Any], after: dict[tuple[str, ...], Any]) -> int:
    if before.keys() != after.keys():
        print(f"different inputs: {sorted(before.keys() ^ after.keys())[:5]}")
        return 1
    differing = [key for key in before if before[key] != after[key]]
    runs = [value for value in before.values() if value[0] != "error"]
    chunks = sum(len(value[0]) for value in runs)
    print(
        f"{len(before)} (input, settings) runs, {len(runs)} chunked: {chunks} chunks and as many "
        f"contextualized texts; differing runs: {len(differing)}"
    )
    for key in differing[:5]:
        print("differs:", key)
        old, new = before[key], after[key]
        if old[0] == "error" or new[0] == "error":
            print("  ", old[:2], "vs", new[:2])
            continue
        print(f"   chunks {len(old[0])} vs {len(new[0])}")
        for label, first, second in (("chunk", old[0], new[0]), ("text", old[1], new[1])):
            for index, (a, b) in enumerate(zip(first, second, strict=False)):
                if a != b:
                    print(f"   {label} {index}: {str(a)[:200]!r}\n   vs {str(b)[:200]!r}")
                    break
    return 1 if differing else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    commands = parser.add_subparsers(dest="command", required=True)
    take = commands.add_parser("snapshot", help="chunk and contextualize, store the output")
    take.add_argument("out", type=Path)
    take.add_argument("--doc-root", type=Path, default=Path("/usr/share/doc"))
    take.add_argument("--no-joined", action="store_true", help="skip the joined Markdown")
    check = commands.add_parser("compare", help="compare two snapshots")
    check.add_argument("before", type=Path)
    check.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.command == "snapshot":
        print(f"ragsage from {Path(ragsage.__file__).parent}", file=sys.stderr)
        started = time.perf_counter()
        out = snapshot(args.doc_root, joined=not args.no_joined)
        args.out.write_bytes(pickle.dumps(out))
        print(f"{len(out)} runs in {time.perf_counter() - started:.0f} s -> {args.out}")
        return 0
    return compare(pickle.loads(args.before.read_bytes()), pickle.loads(args.after.read_bytes()))


if __name__ == "__main__":
    sys.exit(main())
