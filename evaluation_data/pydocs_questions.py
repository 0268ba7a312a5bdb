"""Questions from the Python documentation's HTML: what a page documents, and how it asks."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from selectolax.lexbor import LexborHTMLParser, LexborNode

from ragsage.core.text import words
from ragsage.evaluation.writing import QAQuestion as Question

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
