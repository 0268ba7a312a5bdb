"""Word-level text helpers shared by the offline adapters and the query engine."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

# A word: letters and digits, with apostrophes kept inside (don't, l’eau).
WORD_PATTERN = r"[^\W_]+(?:['’][^\W_]+)*"
_WORD = re.compile(WORD_PATTERN, re.UNICODE)

# Function words and question words: they match everywhere, so letting them count
# as overlap would make every passage look relevant to every question.
STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just let me more most my myself no nor not now of off on once only
    or other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    us very was we were what when where which while who whom why will with would you your
    yours yourself yourselves tell explain describe please thanks thank give show know
    s t don doesn didn isn aren wasn weren won
    """.split()
)


# Kinds of Markdown line, as quotes are cut from passages and citations aligned
# with them (the parser's own block reader keeps its stricter patterns).
FENCE_LINE = re.compile(r"[ \t]*(?:```|~~~)")
HEADING_LINE = re.compile(r"[ \t]{0,3}#{1,6}(?:[ \t]|$)")
LIST_ITEM = re.compile(r"[ \t]*(?:[-*+]|\d{1,3}[.)])[ \t]+")
TABLE_RULE = re.compile(r"[ \t]*\|?[ \t]*:?-{3,}:?[ \t]*(?:\|[ \t]*:?-{3,}:?[ \t]*)*\|?[ \t]*$")


def is_table_row(line: str) -> bool:
    return line.lstrip().startswith("|")


def unmarked_title(lines: Sequence[str], index: int) -> bool:
    """Whether ``lines[index]`` is a title that text drawn from a PDF carries without marks.

    Such a heading is a short line that follows a finished sentence (or opens
    the paragraph), ends no clause itself, and is followed by a longer line; a
    quote that kept it would glue it to the sentence after it.
    """
    if index + 1 >= len(lines):
        return False
    line, following = lines[index].strip(), lines[index + 1].strip()
    before = lines[index - 1].rstrip() if index else ""
    return (
        0 < len(line.split()) <= 10
        and not line.endswith(_ENDS_A_CLAUSE)
        and (not before or before.endswith(_ENDS_A_SENTENCE))
        and len(line) < 0.8 * len(following)
        and following[:1].isalnum()
    )


def between_titles(lines: Sequence[str], *, first_is_text: bool = False) -> list[range]:
    """The runs of ``lines`` (as index ranges) between their unmarked titles, titles left out.

    ``first_is_text`` says the first line cannot be a title (a list item's).
    """
    runs: list[range] = []
    start = 0
    for index in range(len(lines)):
        if (index or not first_is_text) and unmarked_title(lines, index):
            if index > start:
                runs.append(range(start, index))
            start = index + 1
    if len(lines) > start:
        runs.append(range(start, len(lines)))
    return runs


_ENDS_A_CLAUSE = tuple(".!?:;,-)")
_ENDS_A_SENTENCE = tuple(".!?:")


def words(text: str) -> list[str]:
    """Lower-cased word tokens, punctuation dropped, apostrophes kept inside words."""
    found = _WORD.findall(text)
    if "’" in text:
        return [word.lower().replace("’", "'") for word in found]
    return [word.lower() for word in found]


def content_words(text: str) -> list[str]:
    """Words that carry meaning: tokens minus stop words, in order, repeats kept."""
    return [word for word in words(text) if word not in STOPWORDS]


@functools.lru_cache(maxsize=1 << 17)
def stem(word: str) -> str:
    # Just enough folding that "policy" and "policies" or "refund" and "refunds"
    # meet; the offline adapters are not trying to be a real stemmer.
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def terms(text: str) -> list[str]:
    """Content words folded for matching: what the offline retrieval adapters compare."""
    return [stem(word) for word in content_words(text)]


# Code and technical prose name things as dotted paths (os.path.join), file paths
# and camelCase/PascalCase words (getLogger, HTTPServer).  Postgres's text-search
# parser keeps a dotted or slashed name as one token and never splits camelCase,
# so "join" or "ThreadPoolExecutor" would not find "concurrent.futures.
# ThreadPoolExecutor".  These patterns must match the SQL function
# ragsage_name_words (storage migrations 7 and 34) so both stores see one vocabulary.
_IDENTIFIER = re.compile(
    r"[A-Za-z_][A-Za-z0-9_]*(?:[./:]+[A-Za-z_][A-Za-z0-9_]*)+"
    r"|[A-Za-z0-9]*[a-z][A-Z][A-Za-z0-9]*"
    r"|[A-Z]+[A-Z][a-z][A-Za-z0-9]*"
)
# Runs of the characters an identifier match is made of (one character holds none).
_IDENTIFIER_RUN = re.compile(r"[A-Za-z0-9_./:]{2,}")
# A snake_case name: both parsers cut it at its underscores, so its parts match
# everywhere and the name itself nowhere; it is also indexed run together
# (``run_connecting`` as ``runconnecting``), one rare word for the whole name.
_SNAKE = re.compile(r"[A-Za-z0-9]+(?:_+[A-Za-z0-9]+)+")
_SEGMENT_SEPARATORS = re.compile(r"[./:]+")
_ACRONYM_THEN_WORD = re.compile(r"([A-Z]+)([A-Z][a-z])")
_LOWER_THEN_UPPER = re.compile(r"([a-z0-9])([A-Z])")


# How code is named in a question: a snake_case, camelCase or dotted name, a
# qualified one (Type::method, Class#method) or a call.
_NAMES_CODE = re.compile(
    r"[A-Za-z0-9]_+[A-Za-z0-9]|[a-z][A-Z]|[A-Z]{2,}[a-z]|::|\w#\w|\w\.\w|\w\(\)?"
)


def names_code(text: str) -> bool:
    """Whether ``text`` names something as code writes it (``run_connecting``, ``Foo::bar``)."""
    return _NAMES_CODE.search(text) is not None


def identifier_words(text: str) -> str:
    """The parts of the identifiers in ``text``, lower-cased and space-separated.

    ``concurrent.futures.ThreadPoolExecutor`` gives its segments and the words
    of each camelCase segment: ``concurrent futures threadpoolexecutor thread
    pool executor``; then every snake_case name run together (``max_retry_count``
    gives ``maxretrycount``).  Indexed beside the original tokens, so both the
    whole name and its parts match.  Plain words contribute nothing.
    """
    parts = [part for identifier in _identifiers(text) for part in _parts(identifier)]
    if "_" in text:
        parts.extend(name.replace("_", "").lower() for name in _SNAKE.findall(text))
    return " ".join(parts)


def _identifiers(text: str) -> list[str]:
    """What ``_IDENTIFIER.finditer(text)`` matches, found at about twice its speed.

    A match never crosses a run of the characters it is made of, and needs a
    separator or a change of case inside one; most runs are plain words, which
    are skipped before the pattern, whose leading ``[A-Za-z0-9]*`` would
    otherwise be tried from every letter of them.
    """
    found: list[str] = []
    for run in _IDENTIFIER_RUN.findall(text):
        if (
            "." in run
            or "/" in run
            or ":" in run
            or not (run[1:].islower() or run.isupper() or run.isdigit())
        ):
            found.extend(match.group(0) for match in _IDENTIFIER.finditer(run))
    return found


@functools.lru_cache(maxsize=65_536)
def _parts(identifier: str) -> tuple[str, ...]:
    # Names repeat all through a manual or a source file: each is split once.
    segments = [s for s in _SEGMENT_SEPARATORS.split(identifier) if s]
    pieces = [s for s in segments if s != identifier]
    for segment in segments:
        pieces.extend(word for word in _camel_words(segment) if word != segment)
    return tuple(piece.lower() for piece in pieces)


def _camel_words(segment: str) -> list[str]:
    """``HTTPServerError`` as ``HTTP``, ``Server``, ``Error``; a plain word as itself."""
    return _LOWER_THEN_UPPER.sub(r"\1 \2", _ACRONYM_THEN_WORD.sub(r"\1 \2", segment)).split()


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def name_words(text: str, limit: int = 64) -> list[str]:
    """The words the compound names in ``text`` are made of, each once, first use first.

    ``retryFailedUpload``, ``retry_failed_upload`` and ``RETRY_FAILED_UPLOAD``
    all give ``retry``, ``failed``, ``upload``: the words a question uses for
    what code calls by one name.  Names of one word are skipped (the text holds
    them as they are), and so are one-letter parts.  At most ``limit`` words.
    """
    found: dict[str, None] = {}
    for match in _NAME.finditer(text):
        parts = [part for segment in match.group(0).split("_") for part in _camel_words(segment)]
        if len(parts) < 2:
            continue
        for part in parts:
            word = part.lower()
            if len(word) > 1 and word not in found:
                found[word] = None
                if len(found) >= limit:
                    return list(found)
    return list(found)


def clean(text: str) -> str:
    """``text`` without NUL characters or unpaired surrogates.

    Neither can be stored in Postgres text, and both arrive in the wild (JSON
    allows ``\\u0000`` and lone ``\\ud800`` escapes); dropping NULs and replacing
    broken surrogates keeps such input working instead of failing deep in a query.
    """
    if "\x00" in text:
        text = text.replace("\x00", "")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text
