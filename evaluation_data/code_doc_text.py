"""Doc comments turned into questions: markers and markup stripped, names hidden."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from ragsage.core.text import STOPWORDS, words

MIN_WORDS, MAX_WORDS = 4, 40
MIN_CONTENT_WORDS = 3
# A first sentence starting like this points elsewhere instead of saying what the code does.
GENERIC_OPENINGS = (
    "see ",
    "alias",
    "deprecated",
    "same as",
    "synonym for",
    "equivalent to",
    "shorthand for",
    "internal",
    "helper",
    "override",
    "overridden",
    "inherit",
    "todo",
    "fixme",
    "xxx",
    "copydoc",
    "note:",
    "nolint",
    "then,",
    "also,",
    "and ",
    "but ",
    "or ",
)
_HTML_BREAK = re.compile(
    r"</?(?:p|br|ul|ol|li|pre|blockquote|h[1-6]|dl|dt|dd|table|tr|hr)\b[^>]*>", re.I
)
_HTML_TAG = re.compile(
    r"</?(?:code|i|b|em|strong|a|tt|span|div|td|th|sup|sub|var|kbd|cite|small|big|u|s|img"
    r"|caption|thead|tbody|samp|font)\b[^>]*>",
    re.I,
)
_AUTOLINK = re.compile(r"<(?:https?|mailto|ftp):[^>\s]*>")
_INLINE_LINK = re.compile(r"\{@(?:link|linkplain)\s+([^}\s]+)(?:\s+([^}]*))?\}")
_INLINE_CODE = re.compile(r"\{@(?:code|literal|value)\s*([^}]*)\}")
_INLINE_OTHER = re.compile(r"\{@\w+[^}]*\}")
_TAG_LINE = re.compile(r"^[@\\](\w+)")
_KEPT_TAGS = frozenset({"brief", "short", "summary", "description", "details", "detail"})
_FIELD_LINE = re.compile(
    r"^(:(param|parameter|arg|argument|key|keyword|type|raises?|returns?|rtype|yields?)\b"
    r"|(Args|Arguments|Returns|Raises|Parameters|Examples?|Usage|Deprecated|See also):)"
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_ABBREVIATION = re.compile(r"(?:\be\.g|\bi\.e|\betc|\bvs|\bcf|\bapprox|\bresp)\.$", re.I)
_PATH_CHARS = r"[A-Za-z_$][\w$]*"
_KIND_WORDS = r"class|struct|interface|trait|type|object|function|method|module|enum|macro|record"
_SEPARATOR = r"(?:::|\.|#|->|\\)"


def strip_markers(comment: str) -> str:
    """A comment's text without ``/** */``, ``*``, ``///``, ``//`` or ``#`` markers."""
    text = comment.strip()
    if text.startswith("/*"):
        text = re.sub(r"\*+/$", "", re.sub(r"^/\*+!?", "", text))
        lines = [re.sub(r"^\s*\* ?", "", line) for line in text.splitlines()]
    else:
        lines = [re.sub(r"^\s*(?://[/!]?|#+) ?", "", line) for line in text.splitlines()]
    return "\n".join(line.rstrip() for line in lines)


def description(text: str) -> str:
    """The part of a doc comment before its tags (``@param``, ``:returns:``, ``Args:``...)."""
    kept = []
    for line in text.splitlines():
        stripped = line.strip()
        stripped = re.sub(r"^:[a-z]+:[\w-]+:\s*", "", stripped)  # ":help:name: ..." tags
        tag = _TAG_LINE.match(stripped)
        if tag and tag.group(1).lower() in _KEPT_TAGS:
            stripped = stripped[tag.end() :].strip()
        elif tag or _FIELD_LINE.match(stripped):
            break
        kept.append(stripped)
    return "\n".join(kept)


def unmark(text: str) -> str:
    """Inline markup removed: HTML tags, Javadoc and Doxygen inline tags, Markdown, reST roles."""
    text = _AUTOLINK.sub("", text)
    text = _HTML_BREAK.sub("\n\n", text)
    text = _HTML_TAG.sub("", text)
    text = _INLINE_LINK.sub(
        lambda m: m.group(2) or m.group(1).lstrip("#").replace("#", ".").split("(")[0], text
    )
    text = _INLINE_CODE.sub(r"\1", text)
    text = _INLINE_OTHER.sub(" {inherit} ", text)
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", text)
    text = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"\[([^\]]+)\]\[[^\]]*\]", r"\1", text)
    text = re.sub(r"\[([^\]\n]+)\](?![(\[:])", r"\1", text)
    text = re.sub(r":[\w:.-]+:`~?([^`]+)`", r"\1", text)
    text = re.sub(r"``?([^`]+)``?", r"\1", text)
    text = re.sub(r"(?<![\w+])\+([\w][\w.:#?!]*)\+(?![\w+])", r"\1", text)
    text = re.sub(r"\*\*([^*\n]+)\*\*", r"\1", text)
    text = re.sub(r"(?<![\w*])\*([^*\s][^*\n]*?)\*(?![\w*])", r"\1", text)
    text = re.sub(r"(?<!\w)__([^_\n]+)__(?!\w)", r"\1", text)
    text = re.sub(r"[@\\](?:c|p|a|e|b|em|ref)\s+(\S+)", r"\1", text)
    return html.unescape(text)


def name_path(name: str) -> re.Pattern[str]:
    """A name, alone or in a qualified path (``Foo::bar``, ``a.b.Name()``), in any case."""
    return re.compile(
        rf"(?<![\w$])(?:{_PATH_CHARS}{_SEPARATOR})*{re.escape(name)}"
        rf"(?:{_SEPARATOR}{_PATH_CHARS})*(?:\([^()]*\))?(?:'s)?(?![\w$])",
        re.IGNORECASE,
    )


def is_usage_line(line: str, names: Sequence[str], *, loose: bool = True) -> bool:
    """Whether a line only shows how to call the definition (``name <arg>``, ``Name()``).

    ``loose`` also takes ``name arg_one arg_two`` (a few bare argument names, no full
    stop) as usage; Go is read strictly, since its sentences open with the name.
    """
    stripped = line.strip()
    for name in names:
        found = name_path(name).match(stripped)
        if not found:
            continue
        rest = stripped[found.end() :].strip()
        tokens = rest.split()
        if not rest or rest.startswith("->"):
            return True
        if all(token[0] in "<[{$-\"'(|.:=" or token == "..." for token in tokens):
            return True
        if loose and len(tokens) <= 6 and not rest.endswith((".", ":", "!", "?")):
            if all(re.fullmatch(r"[\w<>\[\]{}$|.=-]+", token) for token in tokens):
                return True
    return False


def _plain_word(name: str) -> bool:
    # A name that is also an ordinary word ("map", "Version", "new") cannot be hidden in
    # prose by a substitution that still reads; compound names (fooBar, foo_bar) can.
    return bool(re.fullmatch(r"[A-Za-z][a-z]*", name))


def hide_names(sentence: str, names: Sequence[str], *, drop_leading: bool = False) -> str | None:
    """The sentence with each name (and paths through it) replaced by "it".

    With ``drop_leading`` (Go, whose doc comments open with the name) a name that
    starts the sentence is dropped instead. ``None`` when a name that is also a plain
    English word is used as prose, since no substitution keeps that readable.
    """
    text = sentence
    for name in sorted(names, key=len, reverse=True):
        pattern = name_path(name)
        leading = re.match(rf"^(?:(?:the|a|an)\s+)?{pattern.pattern}\s*", text, re.IGNORECASE)
        if leading and drop_leading:
            text = text[leading.end() :]
        # "the Version class" reads naturally as "this class", even for a plain-word name.
        text = re.sub(
            rf"\b(?:the|this|a|an)\s+{pattern.pattern}\s+({_KIND_WORDS})\b",
            r"this \1",
            text,
            flags=re.IGNORECASE,
        )
        for found in list(pattern.finditer(text)):
            token = found.group(0)
            code_like = token != name and token.lower() != name.lower() or not _plain_word(name)
            before = text[max(0, found.start() - 1) : found.start()]
            after = text[found.end() : found.end() + 1]
            if not code_like and before != "`" and after != "`":
                return None
        text = pattern.sub(lambda m: "its" if m.group(0).endswith("'s") else "it", text)
        if name.lower() in STOPWORDS and re.search(rf"\b{re.escape(name)}\b", text, re.I):
            return None
    text = re.sub(r"\b(?:a|an|the|this)\s+(?:new\s+)?(it|its)\b", r"\1", text, flags=re.I)
    text = re.sub(r"\bit\s+it\b", "it", text)
    text = re.sub(r"`\s*(it|its)\s*`", r"\1", text)
    text = text.strip(" ,;:")
    return text[:1].upper() + text[1:] if text else None


def first_sentence(text: str) -> str:
    """The first sentence of a paragraph, not cut after "e.g." and the like."""
    flat = " ".join(text.split())
    sentence = ""
    for piece in _SENTENCE_END.split(flat):
        sentence = f"{sentence} {piece}".strip()
        if not _ABBREVIATION.search(sentence):
            break
    return sentence


def summary(doc: str, names: Sequence[str], *, drop_leading: bool = False) -> str | None:
    """The question a doc comment gives: its first sentence, markup stripped, names hidden.

    ``None`` when there is no usable sentence: too short or long, pointing elsewhere,
    or about a name that cannot be hidden.
    """
    body = unmark(description(doc))
    lines = body.splitlines()
    while lines and (
        not lines[0].strip() or is_usage_line(lines[0], names, loose=not drop_leading)
    ):
        lines.pop(0)
    paragraph = []
    for line in lines:
        if not line.strip():
            break
        paragraph.append(line)
    if not paragraph or paragraph[0].lstrip().startswith(("#", "```", ">>>", "|", "-", "*")):
        return None
    kernel = re.match(r"^\s*\S+\s+-\s+(.*)$", paragraph[0])
    if kernel and any(name_path(n).match(paragraph[0].strip()) for n in names):
        paragraph[0] = kernel.group(1)
    sentence = first_sentence("\n".join(paragraph))
    lowered = sentence.lower()
    if lowered.startswith(GENERIC_OPENINGS) or "{inherit}" in sentence or ">>>" in sentence:
        return None
    if re.search(r"\b(todo|fixme|xxx)\b|\balias (?:to|for|of)\b", lowered) or sentence.endswith(
        ":"
    ):
        return None
    sentence = re.sub(r"^(?:Public|Private):\s*", "", sentence)
    hidden = hide_names(sentence, names, drop_leading=drop_leading)
    if hidden is None or not MIN_WORDS <= len(words(hidden)) <= MAX_WORDS:
        return None
    if len([word for word in words(hidden) if word not in STOPWORDS]) < MIN_CONTENT_WORDS:
        return None
    if any(name_path(name).search(hidden) for name in names):
        return None
    return hidden
