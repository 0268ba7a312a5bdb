"""Real text for ``bench/scale.py``: a pool of distinct chunks, and tenants cut from it.

    python bench/scale_corpus.py [--seed 53]     # build every source, print its counts

Sources, in this order (the pool's order):

1. ``debian-html``: every HTML page under ``/usr/share/doc`` (Debian's package
   documentation, and the Python manual when ``python3-doc`` is installed),
   reduced to its visible lines by ``site_chrome.visible_lines``, lines that
   are mostly link text (menus) left out;
2. ``python-stdlib``: the ``.py`` files of ``/usr/lib/python3.11`` (not its
   site- or dist-packages);
3. ``site-packages``: the ``.py`` files of this venv's site-packages;
4. ``linux-docs`` and 5. ``linux-source``: Debian's ``linux-source`` package
   (``/usr/src/linux-source-*.tar.xz``, extracted once under the cache):
   ``Documentation/`` (``.rst``, ``.txt``), then C, assembler, Kconfig, scripts.
   Files over 1 MB (generated register tables) are skipped.

``python3-doc`` and ``linux-source`` come from Debian (``apt-get install -y
python3-doc linux-source``, as root); a missing source is skipped and reported.
On the machine this was written on (Debian 12, this venv) the five sources
give 12,950 + 6,387 + 62,713 + 20,970 + 475,139 = 578,159 distinct chunks in
73,810 documents (two minutes to build once, mostly the kernel's
extraction; site-packages varies with the venv), so the largest tenant of
a 1,000,000-chunk corpus (200,000) fits, and tenants share text.
Each file is one document, cut at line ends into chunks of 100-300 words (the
target of each chunk drawn with a generator seeded by the seed and the file's
name; a line longer than the target is cut between words; a tail under 30
words joins the chunk before it).  A chunk whose text, whitespace collapsed,
was already seen in an earlier file or source is dropped, so the pool holds
no exact repeat.  Each source is written once to
``~/.cache/ragsage-scale/pool-v1-s<seed>-<n>-<source>.jsonl`` (one document a
line) with an index beside it; later runs read only the documents they use.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

CACHE = Path.home() / ".cache" / "ragsage-scale"
VERSION = 1
MIN_WORDS, MAX_WORDS, TAIL_WORDS = 100, 300, 30
MAX_FILE_BYTES = 1_000_000
SOURCES = ("debian-html", "python-stdlib", "site-packages", "linux-docs", "linux-source")
_LINUX_TEXT = (".rst", ".txt")
_LINUX_CODE = (".c", ".h", ".S", ".py", ".sh", ".pl", ".awk")


def _linux_tarball() -> Path | None:
    found = sorted(Path("/usr/src").glob("linux-source-*.tar.xz"))
    return found[-1] if found else None


def linux_tree() -> Path | None:
    """The kernel sources, extracted once into the cache (None: package not installed)."""
    tarball = _linux_tarball()
    if tarball is None:
        return None
    name = tarball.name.removesuffix(".tar.xz")
    target = CACHE / name
    if not (target / ".extracted").exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        print(f"  extracting {tarball} into {CACHE} ...", flush=True)
        subprocess.run(["tar", "-xJf", str(tarball), "-C", str(CACHE)], check=True)
        (target / ".extracted").write_text(str(tarball))
    return target


def _files(root: Path, suffixes: tuple[str, ...], skip: tuple[str, ...] = ()) -> list[Path]:
    """Regular files under ``root`` whose names end so (or start with ``Kconfig``), sorted."""
    found = []
    for directory, subdirectories, names in os.walk(root):
        subdirectories[:] = [d for d in subdirectories if d not in skip]
        for name in names:
            path = Path(directory) / name
            wanted = name.endswith(suffixes) or (
                "Kconfig" in suffixes and name.startswith("Kconfig")
            )
            if wanted and path.is_file() and not path.is_symlink():
                found.append(path)
    return sorted(found)


def source_files(source: str) -> tuple[Path, list[Path]] | None:
    """The folder a source's document names are relative to, and its files in order."""
    if source == "debian-html":
        import site_chrome

        root = Path("/usr/share/doc")
        return root, site_chrome.html_pages(root)
    if source == "python-stdlib":
        root = Path(f"/usr/lib/python3.{sys.version_info.minor}")
        return root, _files(root, (".py",), skip=("site-packages", "dist-packages"))
    if source == "site-packages":
        root = Path(sys.prefix) / "lib" / f"python3.{sys.version_info.minor}" / "site-packages"
        return root, _files(root, (".py",))
    tree = linux_tree() if source.startswith("linux") else None
    if tree is None:
        return None
    if source == "linux-docs":
        return tree, _files(tree / "Documentation", _LINUX_TEXT)
    code = [
        path
        for path in _files(tree, (*_LINUX_CODE, "Kconfig"), skip=("Documentation",))
        if path.stat().st_size <= MAX_FILE_BYTES
    ]
    return tree, code


def file_lines(source: str, path: Path) -> list[str]:
    raw = path.read_bytes()
    if source == "debian-html":
        import site_chrome

        return [line.text for line in site_chrome.visible_lines(raw) if not line.is_link]
    return raw.decode("utf-8", "replace").splitlines()


def cut(lines: list[str], rng: random.Random) -> list[str]:
    """Chunks of about 100-300 words, cut at line ends (a line over 300 words between words)."""
    pieces: list[str] = []
    for line in lines:
        words = line.split()
        if len(words) <= MAX_WORDS:
            pieces.append(line.rstrip())
        else:
            pieces.extend(
                " ".join(words[at : at + MAX_WORDS]) for at in range(0, len(words), MAX_WORDS)
            )
    chunks: list[list[str]] = []
    current: list[str] = []
    count, target = 0, rng.randint(MIN_WORDS, MAX_WORDS)
    for piece in pieces:
        n = len(piece.split())
        if n and count + n > target and count >= MIN_WORDS // 2:
            chunks.append(current)
            current, count, target = [], 0, rng.randint(MIN_WORDS, MAX_WORDS)
        if n or current:
            current.append(piece)
            count += n
    if count >= TAIL_WORDS or not chunks:
        chunks.append(current)
    else:
        chunks[-1].extend(current)
    texts = ["\n".join(part).strip() for part in chunks]
    return [text for text in texts if len(text.split()) >= TAIL_WORDS]


def _key(text: str) -> bytes:
    return hashlib.blake2b(" ".join(text.split()).encode(), digest_size=16).digest()


def _paths(seed: int, number: int, source: str) -> tuple[Path, Path]:
    stem = CACHE / f"pool-v{VERSION}-s{seed}-{number}-{source}"
    return stem.with_suffix(".jsonl"), stem.with_suffix(".index.json")


@dataclass(frozen=True, slots=True)
class PoolDoc:
    source: str
    name: str
    chunks: int
    offset: int  # of its line in the source's file


class Pool:
    """The distinct chunks of the sources read so far, by document, in pool order."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.docs: list[PoolDoc] = []
        self.sources: dict[str, tuple[int, int]] = {}  # source -> (documents, chunks)
        self.missing: list[str] = []
        self._files: dict[str, Path] = {}

    @property
    def total(self) -> int:
        return sum(chunks for _, chunks in self.sources.values())

    def texts(self, doc: PoolDoc) -> list[str]:
        with self._files[doc.source].open("rb") as handle:
            handle.seek(doc.offset)
            return list(json.loads(handle.readline())[1])

    def add(self, source: str, data: Path, index: list[list]) -> None:
        self._files[source] = data
        docs = [PoolDoc(source, str(name), int(n), int(at)) for name, n, at in index]
        self.docs.extend(docs)
        self.sources[source] = (len(docs), sum(doc.chunks for doc in docs))

    def seen_keys(self) -> set[bytes]:
        keys: set[bytes] = set()
        for source in self.sources:
            with self._files[source].open("rb") as handle:
                for line in handle:
                    keys.update(_key(text) for text in json.loads(line)[1])
        return keys


def _build(pool: Pool, number: int, source: str, data: Path, index_path: Path) -> bool:
    found = source_files(source)
    if found is None:
        return False
    root, files = found
    started = time.perf_counter()
    print(f"  reading {source}: {len(files):,} files under {root} ...", flush=True)
    seen = pool.seen_keys()
    index: list[list] = []
    partial = data.with_suffix(".partial")
    with partial.open("wb") as out:
        for path in files:
            name = str(path.relative_to(root))
            rng = random.Random(f"{pool.seed}:{source}:{name}")
            kept = []
            for text in cut(file_lines(source, path), rng):
                key = _key(text)
                if key not in seen:
                    seen.add(key)
                    kept.append(text)
            if kept:
                index.append([name, len(kept), out.tell()])
                out.write(json.dumps([name, kept], ensure_ascii=False).encode() + b"\n")
    partial.rename(data)
    index_path.write_text(json.dumps(index))
    chunks = sum(n for _, n, _ in index)
    print(
        f"  {source}: {len(index):,} documents, {chunks:,} distinct chunks "
        f"({time.perf_counter() - started:.0f} s)",
        flush=True,
    )
    return True


def build_pool(seed: int, wanted: int | None = None) -> Pool:
    """Sources in order until the pool holds ``wanted`` chunks (None: every source)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    pool = Pool(seed)
    for number, source in enumerate(SOURCES):
        if wanted is not None and pool.total >= wanted:
            break
        data, index_path = _paths(seed, number, source)
        if not index_path.exists() and not _build(pool, number, source, data, index_path):
            pool.missing.append(source)
            continue
        pool.add(source, data, json.loads(index_path.read_text()))
    return pool


def tenant_sizes(chunks: int, tenants: int) -> list[int]:
    """Chunks per tenant, largest first: one fifth for the first, 1/rank for the rest.

    Rank 1 holds 20% of the corpus; the other 80% go to ranks 2..N in proportion
    to 1/rank (Zipf, s = 1), at least 10 each.  At 1,000,000 chunks and 1,000
    tenants: 200,000; 61,700 at rank 2; 12,300 at rank 10; 1,230 at rank 100;
    about 250 at rank 500 and 123 at rank 1,000.  Sizes scale with ``chunks``.
    """
    if tenants == 1:
        return [chunks]
    largest = chunks // 5
    weights = [1 / rank for rank in range(2, tenants + 1)]
    scale = (chunks - largest) / sum(weights)
    return [largest, *(max(10, round(w * scale)) for w in weights)]


def assign(pool: Pool, sizes: list[int], seed: int) -> list[list[tuple[int, int]]]:
    """Each tenant's documents as (pool index, chunks taken), whole documents in pool order.

    A tenant starts at a random document and takes the documents after it
    (wrapping round), the last one cut short to fit.  Pool chunks are distinct,
    so no tenant holds a text twice; tenants overlap one another freely.
    """
    if max(sizes) > pool.total:
        raise SystemExit(
            f"the largest tenant needs {max(sizes):,} distinct chunks; the sources give "
            f"{pool.total:,} ({', '.join(pool.missing) or 'none'} missing)"
        )
    rng = random.Random(f"{seed}:tenants")
    plans = []
    for size in sizes:
        start, taken, plan = rng.randrange(len(pool.docs)), 0, []
        for step in range(len(pool.docs)):
            if taken >= size:
                break
            index = (start + step) % len(pool.docs)
            n = min(pool.docs[index].chunks, size - taken)
            plan.append((index, n))
            taken += n
        plans.append(plan)
    return plans


def stream(pool: Pool, plan: list[tuple[int, int]]) -> Iterator[tuple[PoolDoc, list[str]]]:
    for index, n in plan:
        doc = pool.docs[index]
        yield doc, pool.texts(doc)[:n]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=53)
    args = parser.parse_args()
    pool = build_pool(args.seed)
    for source in SOURCES:
        if source in pool.sources:
            documents, chunks = pool.sources[source]
            print(f"{source:<14} {documents:>8,} documents {chunks:>10,} distinct chunks")
        else:
            print(f"{source:<14} missing")
    print(f"{'pool':<14} {len(pool.docs):>8,} documents {pool.total:>10,} distinct chunks")


if __name__ == "__main__":
    main()
