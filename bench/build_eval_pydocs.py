"""Build the development retrieval dataset from Debian's Python documentation.

    python bench/build_eval_pydocs.py [--html DIR] [--out DIR] [--max-pages N]
                                      [--max-questions N] [--seed N]

Without ``--html`` the script fetches ``python3-doc`` and the versioned package
holding its HTML with ``apt-get download`` into ``--cache`` and unpacks them with
``dpkg-deb -x``; nothing else touches the network.  It copies a fixed, seeded
subset of pages into ``<out>/documents/`` and writes questions in the QA-span
layout read by ``ragsage eval`` (see docs/evaluation-dataset.md).  The data is
never committed: the default output lives under ``.ragsage/``.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser, LexborNode

from ragsage.adapters.parsing import HeuristicBackend
from ragsage.core.text import words
from ragsage.core.types import Document, RawSource
from ragsage.evaluation.writing import QAQuestion as Question
from ragsage.evaluation.writing import positive_int, split_table, write_qa_dataset
from ragsage.ingestion import IngestionConfig

DEFAULT_OUT = Path(".ragsage/eval/python-docs")
DEFAULT_CACHE = Path(".ragsage/cache/python3-doc")
API_KINDS = frozenset(
    {"function", "method", "classmethod", "staticmethod", "class", "exception"}
    | {"data", "attribute", "decorator", "property"}
)
# A first sentence starting like this points elsewhere instead of saying what the item does.
GENERIC_OPENINGS = (
    "see ",
    "alias for",
    "alias of",
    "deprecated",
    "same as",
    "synonym for",
    "raises an auditing event",
)
# Shares of --max-questions per family; leftovers are filled from whichever has more.
FAMILY_SHARES = {"summary": 0.35, "identifier": 0.35, "faq": 0.18, "glossary": 0.12}
_CAMEL = re.compile(r"[A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*[A-Z][A-Za-z0-9]*")
_SNAKE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"'“])")
_ABBREVIATION = re.compile(r"(?:\be\.g|\bi\.e|\betc|\bvs|\bcf)\.$", re.IGNORECASE)
_SEE_ALSO = re.compile(r"\s*\((?:see|cf\.)\s[^()]*\)", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class ApiItem:
    """One documented Python object: its anchor, signature and first sentence."""

    anchor: str
    kind: str
    signature: str
    summary: str
    parameters: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Entry:
    """A question-worthy heading or glossary term with the text that answers it."""

    anchor: str
    title: str
    body: str


# --- extraction: pure functions over one page's HTML --------------------------------------


def _text(node: LexborNode) -> str:
    """Visible text of ``node`` on one line, Sphinx's pilcrow permalinks left out."""
    copy = node.clone()
    for link in copy.css("a.headerlink"):
        link.decompose()
    return " ".join(copy.text(deep=True, separator="").split())


def _first_paragraph(node: LexborNode) -> LexborNode | None:
    """The first ``<p>`` directly inside ``node`` that is prose, not an audit or platform note."""
    for child in node.iter(include_text=False):
        classes = (child.attributes.get("class") or "").split()
        if child.tag == "p" and not {"audit-hook", "availability"} & set(classes):
            return child
    return None


def first_sentence(text: str) -> str:
    """The first sentence of ``text``, without see-also asides or its closing full stop."""
    text = _SEE_ALSO.sub("", " ".join(text.split()))
    pieces = _SENTENCE_END.split(text)
    sentence = pieces[0]
    for piece in pieces[1:]:
        if not _ABBREVIATION.search(sentence):
            break
        sentence += " " + piece
    return sentence.rstrip(" .:")


def leading_words(text: str, limit: int) -> str:
    """The longest whitespace-delimited prefix of ``text`` holding at most ``limit`` tokens."""
    kept: list[str] = []
    for piece in text.split():
        if len(words(" ".join([*kept, piece]))) > limit:
            break
        kept.append(piece)
    return " ".join(kept)


def api_items(html: str | bytes) -> list[ApiItem]:
    """Every ``<dl class="py KIND">`` of an API kind that has an anchored signature."""
    tree = LexborHTMLParser(html)
    items = []
    for dl in tree.css("dl.py"):
        kinds = set((dl.attributes.get("class") or "").split()) & API_KINDS
        dt = next((c for c in dl.iter(include_text=False) if c.tag == "dt" and c.id), None)
        dd = next((c for c in dl.iter(include_text=False) if c.tag == "dd"), None)
        if not kinds or dt is None or dd is None or dt.id is None:
            continue
        paragraph = _first_paragraph(dd)
        params = tuple(_text(p) for p in dt.css("em.sig-param span.n"))
        items.append(
            ApiItem(
                anchor=dt.id,
                kind=min(kinds),
                signature=_text(dt),
                summary=first_sentence(_text(paragraph)) if paragraph is not None else "",
                parameters=params,
            )
        )
    return items


def question_sections(html: str | bytes) -> list[Entry]:
    """Sections whose heading is a question, with their first paragraph as the body."""
    tree = LexborHTMLParser(html)
    entries = []
    for section in tree.css("section[id]"):
        heading = next(
            (c for c in section.iter(include_text=False) if c.tag in ("h2", "h3", "h4", "h5")),
            None,
        )
        paragraph = _first_paragraph(section)
        if heading is None or paragraph is None or section.id is None:
            continue
        title = _text(heading)
        if title.endswith("?"):
            entries.append(Entry(anchor=section.id, title=title, body=_text(paragraph)))
    return entries


def glossary_terms(html: str | bytes) -> list[Entry]:
    """Glossary terms with the first paragraph of their definition (shared by synonyms)."""
    tree = LexborHTMLParser(html)
    entries = []
    for dl in tree.css("dl.glossary"):
        pending: list[LexborNode] = []
        for child in dl.iter(include_text=False):
            if child.tag == "dt":
                pending.append(child)
                continue
            paragraph = _first_paragraph(child) if child.tag == "dd" else None
            for dt in pending:
                if paragraph is not None and dt.id:
                    entries.append(Entry(anchor=dt.id, title=_text(dt), body=_text(paragraph)))
            pending = []
    return entries


# --- questions --------------------------------------------------------------------------


def _stable(text: str) -> int:
    return int(hashlib.sha1(text.encode()).hexdigest()[:8], 16)


def signature_span(item: ApiItem) -> str:
    """The item's signature cut to at most 40 tokens; short ones borrow their summary's start."""
    span = leading_words(item.signature, 40)
    if len(words(span)) < 3:
        # "os.sep" alone would match every chunk that mentions it; the words that
        # open its description pin the span to the definition itself.
        span = leading_words(f"{span} {item.summary}", 8)
    return span


def _generic(sentence: str) -> bool:
    return len(words(sentence)) < 5 or sentence.lower().startswith(GENERIC_OPENINGS)


def summary_questions(document: str, items: Iterable[ApiItem]) -> Iterator[Question]:
    """An item's first sentence asks for it; the answer is its signature."""
    for item in items:
        if _generic(item.summary) or len(words(item.summary)) > 60:
            continue
        yield Question(
            id=f"summary:{document}#{item.anchor}",
            question=item.summary,
            document=document,
            answer=signature_span(item),
            kind="summary",
        )


_IDENTIFIER_TEMPLATES = ("what does {} do", "how do I use {}", "{} parameters")
_VALUE_TEMPLATES = ("what is {}", "{} value")
_PARAMETER_TEMPLATES = ("what does the {} argument do", "{} parameter")
_VALUE_KINDS = frozenset({"data", "attribute", "property"})


def identifier_forms(item: ApiItem, unique: set[str]) -> list[tuple[str, str]]:
    """The (style, identifier) pairs a developer might type to ask about ``item``.

    Bare CamelCase names and snake_case parameters qualify only when ``unique``
    (names that occur once in the corpus) holds them; a dotted path always does.
    """
    name = item.anchor.rsplit(".", 1)[-1]
    forms = []
    if "." in item.anchor:
        forms.append(("dotted", item.anchor))
    if _CAMEL.fullmatch(name) and name in unique:
        forms.append(("camel", name))
    if _SNAKE.fullmatch(name) and name in unique:
        forms.append(("snake", name))
    span = set(words(signature_span(item)))
    for param in item.parameters:
        if _SNAKE.fullmatch(param) and param in unique and set(words(param)) <= span:
            forms.append(("parameter", param))
            break
    return forms


def identifier_questions(
    document: str, items: Iterable[ApiItem], unique: set[str]
) -> Iterator[Question]:
    """One identifier-style question per item, its form and template picked by a stable hash."""
    for item in items:
        forms = identifier_forms(item, unique)
        if not forms:
            continue
        # Every item has a dotted form; preferring the others when an item has one
        # keeps CamelCase and snake_case questions from being crowded out.
        plain = [form for form in forms if form[0] != "dotted"] or forms
        choice = _stable(item.anchor)
        style, identifier = plain[choice % len(plain)]
        templates: tuple[str, ...]
        if style == "parameter":
            templates = _PARAMETER_TEMPLATES
        elif item.kind in _VALUE_KINDS:
            templates = _VALUE_TEMPLATES
        else:
            templates = _IDENTIFIER_TEMPLATES
        yield Question(
            id=f"identifier:{document}#{item.anchor}",
            question=templates[(choice // 7) % len(templates)].format(identifier),
            document=document,
            answer=signature_span(item),
            kind="identifier",
        )


def faq_questions(document: str, sections: Iterable[Entry]) -> Iterator[Question]:
    """A question heading asks; the opening 10-30 words of its section answer."""
    for section in sections:
        answer = leading_words(section.body, 30)
        if len(words(answer)) >= 10:
            yield Question(
                id=f"faq:{document}#{section.anchor}",
                question=section.title,
                document=document,
                answer=answer,
                kind="faq",
            )


def _article(term: str) -> str:
    # Names and acronyms ("IDLE", "__future__", "Python 3000") take no article.
    if not term[:1].islower() or any(c.isupper() for c in term):
        return ""
    return "an " if term[0] in "aeiou" else "a "


def glossary_questions(document: str, terms: Iterable[Entry]) -> Iterator[Question]:
    """'what is a <term>' or 'meaning of <term>'; the definition's first words answer."""
    for term in terms:
        answer = leading_words(term.body, 20)
        if not words(term.title) or len(words(answer)) < 5:
            continue
        forms = (f"what is {_article(term.title)}{term.title}", f"meaning of {term.title}")
        yield Question(
            id=f"glossary:{document}#{term.anchor}",
            question=forms[_stable(term.anchor) % len(forms)],
            document=document,
            answer=answer,
            kind="glossary",
        )


# --- source, pages and checks -----------------------------------------------------------


def fetch_html(cache: Path) -> tuple[Path, str]:
    """Download and unpack python3-doc's HTML into ``cache``; the tree and the .deb names."""
    cache = cache.resolve()
    cache.mkdir(parents=True, exist_ok=True)
    depends = _run(["apt-cache", "depends", "python3-doc"], cache)
    html_package = next(
        (m.group(1) for m in re.finditer(r"Depends: (python3\.\d+-doc)", depends)), None
    )
    if html_package is None:
        raise SystemExit(
            "error: apt-cache does not list python3-doc's versioned doc package; "
            "run 'apt-get update' first, or pass --html DIR"
        )
    _run(["apt-get", "download", "python3-doc", html_package], cache)
    debs = sorted(cache.glob(f"{html_package}_*.deb"))
    if not debs:
        raise SystemExit(f"error: apt-get download left no {html_package} .deb in {cache}")
    tree = cache / "tree"
    shutil.rmtree(tree, ignore_errors=True)
    _run(["dpkg-deb", "-x", str(debs[-1]), str(tree)], cache)
    found = sorted(tree.glob("usr/share/doc/python3*/html/glossary.html"))
    if not found:
        raise SystemExit(f"error: {debs[-1].name} holds no usr/share/doc/python3*/html tree")
    return found[0].parent, debs[-1].name


def _run(command: list[str], cwd: Path) -> str:
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    except FileNotFoundError as exc:
        raise SystemExit(f"error: {command[0]} not found; pass --html DIR instead") from exc
    if done.returncode != 0:
        raise SystemExit(f"error: {' '.join(command)} failed: {done.stderr.strip()}")
    return done.stdout


def select_pages(root: Path, max_pages: int, seed: int) -> list[str]:
    """Glossary, FAQ and HOWTO pages first, then a seeded sample of the rest.

    The rest is the library, tutorial and language-reference pages; every list is
    sorted before it is shuffled, so the same tree and seed give the same pages.
    """

    def pages(folder: str) -> list[str]:
        return sorted(
            p.relative_to(root).as_posix()
            for p in (root / folder).glob("*.html")
            if p.name != "index.html"
        )

    first = ["glossary.html", *pages("faq"), *pages("howto")]
    rest = [*pages("library"), *pages("tutorial"), *pages("reference")]
    random.Random(seed).shuffle(rest)
    chosen = [page for page in [*first, *rest] if (root / page).is_file()]
    return sorted(chosen[:max_pages])


def page_tokens(backend: HeuristicBackend, path: Path) -> str:
    """The parsed page's tokens, space-joined and space-padded for span look-ups."""
    source = RawSource(content=path.read_bytes(), filename=path.name, media_type="text/html")
    parsed = backend.parse(source)
    return " " + " ".join(words("\n\n".join(page.text for page in parsed.pages))) + " "


def span_in(span: str, tokens: str) -> bool:
    """True when ``span``'s tokens occur contiguously in space-joined ``tokens``."""
    needle = words(span)
    return bool(needle) and f" {' '.join(needle)} " in tokens


def default_chunks(backend: HeuristicBackend, root: Path, pages: list[str]) -> dict[str, list[str]]:
    """Each page's chunks at ragsage's default size and overlap, as space-padded tokens."""
    config = IngestionConfig()
    found = {}
    for page in pages:
        raw = (root / page).read_bytes()
        parsed = backend.parse(RawSource(content=raw, filename=page, media_type="text/html"))
        document = Document(
            id=page, content_hash=hashlib.sha256(raw).hexdigest(), title="", source=page
        )
        made = backend.chunk(
            document, parsed.pages, size=config.chunk_size, overlap=config.chunk_overlap
        )
        found[page] = [" " + " ".join(words(chunk.text)) + " " for chunk in made]
    return found


# --- assembling the dataset -------------------------------------------------------------


def candidates(root: Path, pages: list[str]) -> list[Question]:
    """Every question the chosen pages yield, before checks, dedup and caps."""
    items = {page: api_items((root / page).read_bytes()) for page in pages}
    names: Counter[str] = Counter()
    for page_items in items.values():
        for item in page_items:
            names[item.anchor.rsplit(".", 1)[-1]] += 1
            names.update(set(item.parameters))
    unique = {name for name, seen in names.items() if seen == 1}
    found: list[Question] = []
    for page in pages:
        html = (root / page).read_bytes()
        found += summary_questions(page, items[page])
        found += identifier_questions(page, items[page], unique)
        found += faq_questions(page, question_sections(html))
        if page == "glossary.html":
            found += glossary_questions(page, glossary_terms(html))
    return found


def deduplicate(questions: list[Question]) -> list[Question]:
    """Drop every question whose wording is shared by another pointing elsewhere."""
    by_text: dict[str, list[Question]] = {}
    for question in sorted(questions, key=lambda q: q.id):
        by_text.setdefault(" ".join(words(question.question)), []).append(question)
    kept = []
    for group in by_text.values():
        if len({(q.document, q.answer) for q in group}) == 1:
            kept.append(group[0])
    return kept


def choose(questions: list[Question], limit: int, per_document: int, seed: int) -> list[Question]:
    """A seeded pick within each family's share, at most ``per_document`` per page and kind."""
    pools = {
        kind: sorted((q for q in questions if q.kind == kind), key=lambda q: q.id)
        for kind in FAMILY_SHARES
    }
    for kind, pool in pools.items():
        random.Random(f"{seed}:{kind}").shuffle(pool)
    taken: list[Question] = []
    per_page: Counter[tuple[str, str]] = Counter()

    def take(pool: list[Question], quota: int) -> list[Question]:
        left = []
        for question in pool:
            key = (question.document, question.kind)
            if quota <= 0 or len(taken) >= limit:
                left.append(question)
            elif per_page[key] < per_document:
                taken.append(question)
                per_page[key] += 1
                quota -= 1
        return left

    for kind, share in FAMILY_SHARES.items():
        pools[kind] = take(pools[kind], round(limit * share))
    for kind in FAMILY_SHARES:  # families short of their share leave room for the others
        pools[kind] = take(pools[kind], limit - len(taken))
    return sorted(taken, key=lambda q: q.id)


def write_dataset(
    out: Path, root: Path, pages: list[str], questions: list[Question], source: str
) -> int:
    """Replace ``out`` with the dataset; the number of bytes written."""
    return write_qa_dataset(
        out,
        root,
        pages,
        questions,
        name="python-docs",
        description=(
            f"{len(pages)} pages of the Python 3 documentation; {len(questions)} questions "
            "(summary, identifier, faq, glossary), split dev/test by SHA-1 of the id"
        ),
        source=source,
    )


def build(args: argparse.Namespace) -> int:
    """Fetch or find the HTML, build the dataset, print its summary."""
    if args.html is not None:
        root, source = args.html, f"python3-doc HTML from {args.html.name}"
        if not (root / "glossary.html").is_file():
            raise SystemExit(f"error: {root} has no glossary.html; point --html at .../html")
    else:
        root, deb = fetch_html(args.cache)
        source = f"Debian {deb} (python3-doc), usr/share/doc/{root.parent.name}/html"
    pages = select_pages(root, args.max_pages, args.seed)
    backend = HeuristicBackend()
    tokens = {page: page_tokens(backend, root / page) for page in pages}
    found = candidates(root, pages)
    findable = [q for q in found if span_in(q.answer, tokens[q.document])]
    unique = deduplicate(findable)
    questions = choose(unique, args.max_questions, args.max_per_document, args.seed)
    size = write_dataset(args.out, root, pages, questions, source)
    chunks = default_chunks(backend, root, pages)
    count = sum(len(made) for made in chunks.values())
    mean = sum(len(c.split()) for made in chunks.values() for c in made) // max(count, 1)
    # A span cut by a chunk boundary can match no chunk at this size; the
    # question is kept (another size may hold it whole) but counted here.
    whole = sum(any(span_in(q.answer, c) for c in chunks[q.document]) for q in questions)
    print(f"source: {source}")
    print(f"pages: {len(pages)}  chunks at default size: {count} (~{mean} words each)")
    print(
        f"candidates: {len(found)}, answer findable: {len(findable)}, "
        f"after dedup: {len(unique)}, kept: {len(questions)} "
        f"({whole} with the answer inside one default chunk)"
    )
    print("\n".join(split_table(questions, list(FAMILY_SHARES))))
    print(f"wrote {args.out} ({size:,} bytes)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--html", type=Path, help="an extracted .../python3.x/html tree")
    parser.add_argument(
        "--cache",
        type=Path,
        default=DEFAULT_CACHE,
        help=f"where the .deb files are downloaded (default {DEFAULT_CACHE})",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help=f"dataset directory, replaced (default {DEFAULT_OUT})",
    )
    parser.add_argument("--max-pages", type=positive_int, default=160)
    parser.add_argument("--max-questions", type=positive_int, default=600)
    parser.add_argument(
        "--max-per-document",
        type=positive_int,
        default=30,
        help="questions of one kind from one page (default 30)",
    )
    parser.add_argument("--seed", type=int, default=11)
    return build(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
