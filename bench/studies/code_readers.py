"""How the source-code readers and the language detector do on real files.

    python bench/studies/code_readers.py DIR [DIR ...] [--prose DIR] [--size 512] [--max-files N]

Every file under the folders whose extension names a language is read three
ways and the figures are printed per language:

* **reader**: files read, how many fell back to the plain reading (and why),
  definitions found, chunks, the largest chunk in tokens (never over the
  budget), lines lost (must be 0: every line of the file is in some chunk),
  and read + chunk speed;
* **detector**: the language :func:`ragsage.adapters.parsing.detect.detect_language`
  gives the text alone, as if uploaded as ``.txt``, against the extension: a
  confusion table, with ``-`` for "plain text";
* prose (``--prose``, default ``/usr/share/doc``: ``README``, ``.txt`` and
  ``.md`` files): how many the detector wrongly calls code.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

from ragsage.adapters.parsing import HeuristicBackend
from ragsage.adapters.parsing.detect import detect_language
from ragsage.adapters.parsing.languages import language_for_filename
from ragsage.adapters.parsing.tokens import make_token_counter
from ragsage.core.documents import Document, RawSource

SKIP_PARTS = {"node_modules", "vendor", "testdata", "third_party", ".git"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--prose", type=Path, default=Path("/usr/share/doc"))
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--max-files", type=int, default=400, help="per language")
    parser.add_argument("--max-bytes", type=int, default=200_000)
    args = parser.parse_args()

    files = _code_files(args.folders, args.max_files, args.max_bytes)
    backend = HeuristicBackend()
    count = make_token_counter("cl100k_base")
    stats: dict[str, Counter[str]] = defaultdict(Counter)
    seconds: dict[str, float] = defaultdict(float)
    confusion: dict[str, Counter[str]] = defaultdict(Counter)
    warnings: dict[str, Counter[str]] = defaultdict(Counter)
    for path, language in files:
        content = path.read_bytes()
        row = stats[language]
        row["files"] += 1
        row["bytes"] += len(content)
        started = time.perf_counter()
        parsed = backend.parse(RawSource(content, path.name))
        document = Document("d", "h", path.name, path.name, metadata=parsed.metadata)
        chunks = backend.chunk(document, parsed.pages, size=args.size, overlap=64)
        seconds[language] += time.perf_counter() - started
        warning = parsed.metadata.get("parse_warning")
        if warning and "parse" in str(warning) or "grammar" in str(warning or ""):
            row["fallbacks"] += 1
            warnings[language][str(warning).split(" of the file")[0][:12]] += 1
        page = parsed.pages[0].text
        row["definitions"] += sum(1 for line in page.split("\n") if line.startswith("##"))
        row["chunks"] += len(chunks)
        row["max_tokens"] = max(row["max_tokens"], max((count(c.text) for c in chunks), default=0))
        joined = "\n".join(c.text for c in chunks)
        row["lines_lost"] += _lines_lost(content, joined, lambda line: count(line) <= args.size)
        if not path.name.endswith(".h"):  # a .h may be C or C++: no truth to score against
            text = content.decode("utf-8", errors="ignore")
            confusion[language][detect_language(text) or "-"] += 1
    _print_readers(stats, seconds)
    _print_confusion(confusion)
    _print_prose(args.prose)
    return 0


def _code_files(folders: list[Path], cap: int, max_bytes: int) -> list[tuple[Path, str]]:
    by_language: dict[str, list[Path]] = defaultdict(list)
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            language = language_for_filename(path.name)
            if language is None or not path.is_file() or SKIP_PARTS & set(path.parts):
                continue
            if path.stat().st_size > max_bytes or path.name.endswith((".min.js", ".d.ts")):
                continue
            by_language[language.name].append(path)
    return [(path, name) for name, paths in sorted(by_language.items()) for path in paths[:cap]]


def _lines_lost(content: bytes, chunk_text: str, fits: Callable[[str], bool]) -> int:
    """Lines of the file found in no chunk; a line over the budget is cut, so not counted."""
    kept = set(chunk_text.split("\n"))
    text = content.decode("utf-8", errors="replace").replace("\r\n", "\n")
    return sum(1 for line in text.split("\n") if line.strip() and line not in kept and fits(line))


def _print_readers(stats: dict[str, Counter[str]], seconds: dict[str, float]) -> None:
    print(
        f"{'language':<11}{'files':>6}{'MB':>7}{'fallback':>9}{'defs':>7}{'chunks':>8}"
        f"{'max tok':>8}{'lost':>6}{'MB/s':>7}"
    )
    for language, row in sorted(stats.items()):
        megabytes = row["bytes"] / 1e6
        print(
            f"{language:<11}{row['files']:>6}{megabytes:>7.2f}{row['fallbacks']:>9}"
            f"{row['definitions']:>7}{row['chunks']:>8}{row['max_tokens']:>8}"
            f"{row['lines_lost']:>6}{megabytes / max(seconds[language], 1e-9):>7.2f}"
        )


def _print_confusion(confusion: dict[str, Counter[str]]) -> None:
    guesses = sorted({guess for row in confusion.values() for guess in row})
    print("\ndetector on the text alone (rows: extension; columns: detected; - is plain text)")
    print(f"{'':<11}" + "".join(f"{guess[:6]:>7}" for guess in guesses) + f"{'right':>8}")
    for language, row in sorted(confusion.items()):
        total = sum(row.values())
        cells = "".join(f"{row.get(guess, 0) or '.':>7}" for guess in guesses)
        print(f"{language:<11}{cells}{row.get(language, 0) / total:>8.0%}")


def _print_prose(folder: Path) -> None:
    if not folder.is_dir():
        return
    texts = [
        path
        for path in sorted(folder.rglob("*"))
        if path.is_file()
        and (path.suffix in (".txt", ".md") or path.name.startswith("README"))
        and path.stat().st_size < 200_000
    ]
    called = Counter(
        detect_language(path.read_bytes().decode("utf-8", errors="ignore")) or "-" for path in texts
    )
    wrong = sum(number for guess, number in called.items() if guess != "-")
    print(f"\nprose files under {folder}: {len(texts)}, called code: {wrong} {dict(called)}")


if __name__ == "__main__":
    sys.exit(main())
