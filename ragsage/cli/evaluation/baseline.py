"""A plain retrieval baseline for ``ragsage eval``: fixed windows, BM25 and MiniLM, averaged.

The other backends measure ragsage's own parsing, chunking and retrieval; this
one measures what the simplest sound design gets on the same dataset, so a
figure of ragsage's means something.  Every file is cut into windows of about
:data:`WINDOW_WORDS` words at line ends; each window is indexed behind a short
header drawn from its file (the package line and the first comment that is
not a licence), since a window from the middle of a file otherwise says
nothing of what the file is about.  A query is scored against every window by
Okapi BM25 and by the cosine of the local int8 all-MiniLM-L6-v2 embeddings;
the two lists are min-max scaled and averaged with equal weights.

Nothing here is used by the service: it is an evaluation backend only.
"""

from __future__ import annotations

import functools
import gzip
import re
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ragsage.cli.evaluation.backends import IndexConfig, IndexedCorpus
from ragsage.core.chunks import Chunk, chunk_id
from ragsage.evaluation.datasets import Dataset

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
    from tokenizers import Tokenizer

    from ragsage.adapters.providers import LocalModelFiles
    from ragsage.core.ports import Embedder
    from ragsage.query import RetrievalOptions, RetrievalResult

WINDOW_WORDS = 100
HEADER_COMMENT_WORDS = 60
K1 = 1.5
B = 0.75
# The model reads 256 word pieces, two of which are [CLS] and [SEP].
MODEL_PIECES = 256
TEXT_PIECES = MODEL_PIECES - 2
# Texts per embedding call: each call's vectors reach the disk cache when it
# returns, so an interrupted first run keeps most of its work.
EMBED_BATCH = 256

# NLTK's English stop words, as the tokenizer below splits them (``don't`` is
# ``don`` and ``t``).  Not ragsage.core.text.STOPWORDS: that list also drops
# request words such as "show", "give" and "know", which name things in code,
# and a baseline should not inherit the tuning of the system it is measured against.
STOP_WORDS = frozenset(
    """
    i me my myself we our ours ourselves you your yours yourself yourselves he him his
    himself she her hers herself it its itself they them their theirs themselves what which
    who whom this that these those am is are was were be been being have has had having do
    does did doing a an the and but if or because as until while of at by for with about
    against between into through during before after above below to from up down in out on
    off over under again further then once here there when where why how all any both each
    few more most other some such no nor not only own same so than too very s t can will
    just don should now d ll m o re ve y ain aren couldn didn doesn hadn hasn haven isn ma
    mightn mustn needn shan shouldn wasn weren won wouldn
    """.split()
)


# ---------------------------------------------------------------- windows


@dataclass(frozen=True, slots=True)
class Window:
    """Consecutive lines of a file; ``start`` is the character offset of the first."""

    ordinal: int
    lines: tuple[str, ...]
    start: int

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def cut_windows(text: str, words: int = WINDOW_WORDS) -> list[Window]:
    """``text`` as consecutive windows of whole lines, each closed once it holds ``words`` words.

    Lines are split at ``\\n`` only (a ``\\r`` stays on its line), so the windows'
    lines joined by ``\\n`` give back the file; a trailing window of blank lines
    is dropped, having nothing to find.
    """
    windows: list[Window] = []
    current: list[str] = []
    count = start = offset = 0
    for line in text.split("\n"):
        if not current:
            start = offset
        current.append(line)
        count += len(line.split())
        offset += len(line) + 1
        if count >= words:
            windows.append(Window(len(windows), tuple(current), start))
            current, count = [], 0
    if count:
        windows.append(Window(len(windows), tuple(current), start))
    return windows


# ---------------------------------------------------------------- headers

# A line that is nothing but a package, namespace or module declaration:
# ``package a.b;``, ``namespace App\\Http {``, ``module Foo::Bar``, ``declare
# module "x" {``, Haskell's ``module Foo where``, Go's ``package x // import "y"``.
_DECLARATION = re.compile(
    r"\s*(?:(?:export|declare)\s+)*(?:package|namespace|module)\s+[^\s;{]+"
    r"(?:\s+where)?\s*[;{]?\s*(?://.*)?$"
)
# Lines opening with ``#`` that are code, not comments: C's preprocessor, C#'s
# directives, Rust's attributes.
_HASH_CODE = re.compile(
    r"#(?:include|define|undef|if|ifdef|ifndef|elif|else|endif|pragma|error|warning|import"
    r"|line|region|endregion|nullable)\b|#!?\["
)
_LINE_COMMENT = re.compile(r"//|#|\*(?:\s|/|$)|--(?:\s|$)")
_DOCSTRING = re.compile(r"[rRuU]?(\"\"\"|''')")
_MARKERS = re.compile(r"^(?:[rRuU]?(?:\"\"\"|''')|/\*+|\*+/?|//+|#+|--+)\s?")
_CLOSING = re.compile(r"\s*(?:\*+/|\"\"\"|''')\s*$")
# Comments addressed to tools (encoding cookies, build tags, linters): they
# describe nothing, yet a Ruby file's first comment is nearly always one.
_PRAGMA = re.compile(
    r"(?:-\*-|vim?:|ex:|go:\w|\+build\b|(?:frozen_string_literal|typed|encoding|coding"
    r"|warn_indent|shareable_constant_value)\s*[:=]|(?:pylint|mypy|flake8|isort|pyright"
    r"|type)\s*:|noqa\b|nolint\b|NOLINT|eslint[- ]|prettier-ignore|@ts-|jshint|istanbul "
    r"|fmt:\s*(?:off|on|skip)|clang-format )"
)
_LICENCE = re.compile(r"licen[cs]|copyright|spdx|all rights reserved", re.IGNORECASE)


def package_line(lines: Sequence[str]) -> str:
    """The file's first package/namespace/module declaration, stripped; empty if none."""
    for line in lines:
        if _DECLARATION.match(line):
            return line.strip()
    return ""


def _is_line_comment(stripped: str, index: int) -> bool:
    if stripped.startswith("#!") and index == 0:
        return False  # a shebang
    return bool(_LINE_COMMENT.match(stripped)) and not _HASH_CODE.match(stripped)


def comment_blocks(lines: Sequence[str]) -> Iterator[list[str]]:
    """The file's comment blocks in order, each as its raw lines.

    A block is a run of consecutive comment lines, a ``/* ... */`` comment
    (whatever its inner lines start with), or a docstring opening the file
    before any code; a shebang is none of them.
    """
    block: list[str] = []
    seen_code = False
    index = 0
    while index < len(lines):
        stripped = lines[index].strip()
        closing = None
        if stripped.startswith("/*"):
            closing = "*/"
            body = stripped[2:]
        elif not seen_code and (docstring := _DOCSTRING.match(stripped)):
            closing = docstring.group(1)
            body = stripped[docstring.end() :]
        if closing is not None:
            # A delimited comment is a block of its own, so a licence in one
            # does not take the line comments touching it down with it.
            if block:
                yield block
                block = []
            end = index
            while closing not in body and end + 1 < len(lines):
                end += 1
                body = lines[end]
            yield list(lines[index : end + 1])
            seen_code = seen_code or closing != "*/"
            index = end + 1
            continue
        if _is_line_comment(stripped, index):
            block.append(lines[index])
        else:
            if block:
                yield block
                block = []
            # A shebang comes before a module docstring, so it is not code.
            if stripped and not (index == 0 and stripped.startswith("#!")):
                seen_code = True
        index += 1
    if block:
        yield block


def _comment_words(block: Sequence[str]) -> list[str]:
    found: list[str] = []
    for line in block:
        content = _CLOSING.sub("", _MARKERS.sub("", line.strip()))
        if not _PRAGMA.match(content):
            found.extend(content.split())
    return found


def header(text: str) -> str:
    """What a window of ``text`` is indexed behind: the package line and the first
    comment that is not a licence (at most :data:`HEADER_COMMENT_WORDS` words),
    one per line; empty when the file has neither."""
    lines = text.split("\n")
    comment = ""
    for block in comment_blocks(lines):
        if _LICENCE.search("\n".join(block)):
            continue
        found = _comment_words(block)
        if found:
            comment = " ".join(found[:HEADER_COMMENT_WORDS])
            break
    return "\n".join(part for part in (package_line(lines), comment) if part)


# ---------------------------------------------------------------- tokens

_RUN = re.compile(r"[^\W_]+")
_CASE_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[^A-Z]+|[A-Z]+")


@functools.lru_cache(maxsize=1 << 16)
def _run_terms(run: str) -> tuple[str, ...]:
    # Identifiers recur all through a corpus: each is split once.
    whole = run.lower()
    terms = [whole] if whole not in STOP_WORDS else []
    if run[1:] != run[1:].lower() and not run.isupper():
        parts = _CASE_PART.findall(run)
        if len(parts) > 1:
            terms.extend(p for p in (part.lower() for part in parts) if p not in STOP_WORDS)
    return tuple(terms)


def tokens(text: str) -> list[str]:
    """BM25 terms: lower-cased runs of letters and digits, each camelCase run also
    as its parts (``HTTPServer``: ``httpserver``, ``http``, ``server``), stop words
    dropped.  Underscores separate runs, so snake_case splits by itself."""
    return [term for run in _RUN.findall(text) for term in _run_terms(run)]


# ---------------------------------------------------------------- BM25


class Bm25:
    """Okapi BM25 over a fixed list of documents, scoring all of them for a query.

    The index is a term-major posting list in numpy arrays, each posting
    holding its precomputed term weight, so a query costs one scatter-add per
    query term.  A term repeated in the query counts once per occurrence, as
    in Lucene.  Document lengths are exact (Lucene rounds them to one byte).
    """

    def __init__(self, documents: Sequence[Sequence[str]], k1: float = K1, b: float = B) -> None:
        import numpy as np

        self.vocabulary: dict[str, int] = {}
        term_ids: list[int] = []
        owners: list[int] = []
        counts: list[int] = []
        for owner, terms in enumerate(documents):
            for term, count in Counter(terms).items():
                term_ids.append(self.vocabulary.setdefault(term, len(self.vocabulary)))
                owners.append(owner)
                counts.append(count)
        self.size = len(documents)
        terms_of = np.asarray(term_ids, dtype=np.int64)
        order = np.argsort(terms_of, kind="stable")
        self.document_frequency = np.bincount(terms_of, minlength=len(self.vocabulary))
        self._offsets = np.concatenate(([0], np.cumsum(self.document_frequency)))
        self._owners = np.asarray(owners, dtype=np.int64)[order]
        tf = np.asarray(counts, dtype=np.float64)[order]
        lengths = np.asarray([len(terms) for terms in documents], dtype=np.float64)
        average = float(lengths.mean()) if self.size else 0.0
        norm = k1 * (1.0 - b + b * lengths / (average or 1.0))
        self.idf = np.log1p(
            (self.size - self.document_frequency + 0.5) / (self.document_frequency + 0.5)
        )
        self._weights = self.idf[terms_of[order]] * tf * (k1 + 1.0) / (tf + norm[self._owners])

    def scores(self, query: Sequence[str]) -> NDArray[np.float64]:
        """Every document's score for the query's terms, in document order."""
        import numpy as np

        scores = np.zeros(self.size, dtype=np.float64)
        for term in query:
            ident = self.vocabulary.get(term)
            if ident is not None:
                first, last = self._offsets[ident], self._offsets[ident + 1]
                # A term's postings name each document once, so this never collides.
                scores[self._owners[first:last]] += self._weights[first:last]
        return scores


# ---------------------------------------------------------------- dense


class PieceCutter:
    """Cuts texts to the model's first :data:`TEXT_PIECES` word pieces.

    The local embedder would read a longer text in overlapping windows and
    average them; the baseline reads only the start, as sentence-transformers
    does.  Cutting the text itself (rather than only asking the embedder to
    truncate) keeps the disk cache honest: its key is the model and the text,
    not the way a long text was read, so a cut text has one vector whoever
    embeds it.
    """

    def __init__(self, files: LocalModelFiles, limit: int = TEXT_PIECES) -> None:
        self.limit = limit
        self._tokenizer = _tokenizer(files)

    def pieces(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def cut(self, texts: Sequence[str]) -> list[str]:
        cut = list(texts)
        pending = list(range(len(cut)))
        # Cutting after a piece gives back the same pieces before it, so one
        # pass nearly always does; the check covers words the tokenizer reads
        # as [UNK] whole but in pieces once shortened.
        for _ in range(4):
            if not pending:
                break
            encodings = self._tokenizer.encode_batch(
                [cut[i] for i in pending], add_special_tokens=False
            )
            over = []
            for index, encoding in zip(pending, encodings, strict=True):
                if len(encoding.ids) > self.limit:
                    cut[index] = cut[index][: encoding.offsets[self.limit - 1][1]]
                    over.append(index)
            pending = over
        return cut


def _tokenizer(files: LocalModelFiles) -> Tokenizer:
    from tokenizers import Tokenizer

    raw = files.tokenizer.read_bytes()
    if files.tokenizer.suffix == ".gz":
        raw = gzip.decompress(raw)
    tokenizer = Tokenizer.from_str(raw.decode("utf-8"))
    # The file asks for truncation at 128 pieces; the cut is ours to make.
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


async def _embed_all(embedder: Embedder, texts: Sequence[str]) -> NDArray[np.float32]:
    import numpy as np

    vectors: list[Sequence[float]] = []
    for first in range(0, len(texts), EMBED_BATCH):
        vectors.extend(await embedder.embed(texts[first : first + EMBED_BATCH]))
    matrix = np.asarray(vectors, dtype=np.float32).reshape(len(texts), embedder.dimension)
    return _normalised(matrix)


def _normalised(rows: NDArray[np.float32]) -> NDArray[np.float32]:
    import numpy as np

    norms = np.linalg.norm(rows, axis=-1, keepdims=True)
    return np.asarray(rows / np.maximum(norms, 1e-12), dtype=np.float32)


def min_max(scores: NDArray[np.floating]) -> NDArray[np.float64]:
    """``scores`` scaled to [0, 1]; all zeros when they are all equal (nothing to tell apart)."""
    import numpy as np

    values = np.asarray(scores, dtype=np.float64)
    if not values.size:
        return values
    low, high = float(values.min()), float(values.max())
    if high <= low:
        return np.zeros_like(values)
    return (values - low) / (high - low)


# ---------------------------------------------------------------- the backend


@dataclass(frozen=True, slots=True)
class _Indexed:
    chunks: list[Chunk]
    texts: list[str]


def _index_texts(dataset: Dataset) -> _Indexed:
    chunks: list[Chunk] = []
    texts: list[str] = []
    for document in dataset.documents:
        text = document.content.decode("utf-8", errors="replace")
        top = header(text)
        for window in cut_windows(text):
            body = window.text
            indexed = f"{top}\n{body}" if top else body
            chunks.append(
                Chunk(
                    id=chunk_id(document.id, window.ordinal),
                    document_id=document.id,
                    ordinal=window.ordinal,
                    text=body,
                    embed_text=indexed,
                    source=document.filename,
                    start_char=window.start,
                    end_char=window.start + len(body),
                )
            )
            texts.append(indexed)
    return _Indexed(chunks, texts)


@asynccontextmanager
async def plain_baseline(dataset: Dataset, config: IndexConfig) -> AsyncIterator[IndexedCorpus]:
    """The dataset in the plain baseline: windows searched by BM25 and MiniLM, averaged.

    Of ``config`` only ``cache_dir`` applies (where window vectors are kept
    between runs); the embedder and the chunking are the baseline's own.
    """
    import numpy as np

    from ragsage.adapters.providers import LocalEmbedder, locate_local_model
    from ragsage.query import RetrievalResult, SearchHit

    async with AsyncExitStack() as stack:
        files = locate_local_model()
        # Truncation too, so a text the cutter could not bring under the limit
        # is still read from its start only.
        model = LocalEmbedder(files, max_tokens=MODEL_PIECES, long_texts="truncate")
        embedder: Embedder = model
        if config.cache_dir is not None:
            from ragsage.cli.evaluation.disk_cache import cached_embedder

            embedder, cache = cached_embedder(model, config.cache_dir)
            stack.callback(cache.close)
        cutter = PieceCutter(files)

        started = time.perf_counter()
        indexed = _index_texts(dataset)
        bm25 = Bm25([tokens(text) for text in indexed.texts])
        vectors = await _embed_all(embedder, cutter.cut(indexed.texts))
        elapsed = time.perf_counter() - started

        async def search(query: str, options: RetrievalOptions) -> RetrievalResult:
            began = time.perf_counter()
            keyword = bm25.scores(tokens(query))
            lexical_done = time.perf_counter()
            (raw,) = await embedder.embed(cutter.cut([query]), input_type="query")
            query_vector = _normalised(np.asarray([raw], dtype=np.float32))[0]
            dense = vectors @ query_vector
            fused = 0.5 * min_max(keyword) + 0.5 * min_max(dense)
            # Stable, so equal scores keep file order and runs repeat exactly.
            order = np.argsort(-fused, kind="stable")[: options.top_k]
            hits = tuple(
                SearchHit(
                    chunk=indexed.chunks[index],
                    score=float(fused[index]),
                    vector_score=float(dense[index]),
                    keyword_score=float(keyword[index]),
                )
                for index in order.tolist()
                if options.min_score is None or fused[index] >= options.min_score
            )
            finished = time.perf_counter()
            return RetrievalResult(
                query=query,
                hits=hits,
                total_found=len(indexed.chunks),
                timing_ms={
                    "lexical": (lexical_done - began) * 1000,
                    "dense": (finished - lexical_done) * 1000,
                    "total": (finished - began) * 1000,
                },
            )

        yield IndexedCorpus(
            search=search,
            document_ids={document.id: (document.id,) for document in dataset.documents},
            index_seconds=elapsed,
            chunks=len(indexed.chunks),
            where="plain baseline",
            embedding_model=embedder.model,
        )
