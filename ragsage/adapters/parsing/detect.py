"""Telling source code from prose, and which language it is, from the text alone.

Clients upload code as ``text/plain`` or under a ``.txt`` name often enough
that trusting the label would read a Go file as prose.  This detector is a set
of weighted line patterns per language (shebangs and PHP's opening tag
decide at once); it imports nothing heavy, so routing stays cheap and
``import ragsage.adapters.parsing`` stays light.  ``tests/unit/parsing/test_code_routing.py``
checks it on a source fixture of each language uploaded as plain text.

It answers only when the text is clearly code: at least half of its
non-blank lines must look like code (brackets, operators, comment markers or
a statement keyword), and the best language must score well ahead of the
second.  Anything else stays plain text.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

# How much text is looked at: enough for a verdict, bounded for a 100 MB upload.
SAMPLE_CHARS = 32 * 1024
MIN_SCORE = 6.0
# The winner must beat the runner-up by this factor (C++ shares most of C's
# signals, TypeScript most of JavaScript's, so their own signals must show).
MARGIN = 1.25
MIN_CODE_LINES = 0.5
_SCRIPT_FAMILY = frozenset({"javascript", "typescript"})
# TypeScript's own signals (types, interfaces) a file needs to be called TypeScript.
_TYPED_SCORE = 4.0
# One pattern counts at most this many times, so a thousand ``#include``
# lines do not outvote everything else.
_CAP = 6

_SHEBANG = re.compile(r"\A#![^\n]*?\b(python[0-9.]*|node|deno|bash|sh|zsh|ksh|ruby|php)\b")
_SHEBANG_LANGUAGE = {
    "node": "javascript",
    "deno": "typescript",
    "bash": "bash",
    "sh": "bash",
    "zsh": "bash",
    "ksh": "bash",
    "ruby": "ruby",
    "php": "php",
}
# A line of code ends in punctuation that prose lines rarely end in, opens
# with a statement keyword, or assigns.  Comment lines (and prose bullets,
# which look the same) count neither way.
_CODE_LINE = re.compile(
    r"([;{}()\[\]\\:]|=>|\bdo|\bthen)\s*$"
    r"|^\s*(@|end\b|else\b|fi\b|done\b|return\b|import\b|package\b|def\b"
    r"|func\b|fn\b|let\b|const\b|var\b|use\b|if\b|for\b|while\b|public\b|private\b)"
    r"|\s(=|:=|==|!=|\+=|->)\s"
)
_COMMENT_LINE = re.compile(r"^\s*(#|//|/\*|\*|--)")
# Markdown's fenced blocks mean a document about code, not code.
_MARKDOWN_FENCE = re.compile(r"^ {0,3}(```|~~~)", re.MULTILINE)


def _rules(*pairs: tuple[str, float]) -> tuple[tuple[re.Pattern[str], float], ...]:
    return tuple((re.compile(pattern, re.MULTILINE), weight) for pattern, weight in pairs)


_SIGNALS: dict[str, tuple[tuple[re.Pattern[str], float], ...]] = {
    "python": _rules(
        (r"^\s*def \w+\(.*\)\s*(->\s*[^:]+)?:\s*(#.*)?$", 3.0),
        (r"^\s*class \w+(\([^)]*\))?:\s*$", 3.0),
        (r"^(from [\w.]+ import \w|import [\w.]+(, [\w.]+)*\s*$)", 2.0),
        (r"\bself\.\w+", 1.0),
        (r"^\s*(elif .*|else|try|finally|except( .*)?):\s*$", 2.0),
        (r'^\s*("""|\'\'\')', 1.0),
        (r"^if __name__ == ['\"]__main__['\"]:", 4.0),
    ),
    "go": _rules(
        (r"^package \w+\s*$", 4.0),
        (r"^func (\(\w+ \*?[\w\[\], ]+\) )?\w+(\[[^\]]*\])?\(", 4.0),
        (r"^import (\($|\"[\w./-]+\"$)", 3.0),
        (r"\w+ := ", 1.0),
        (r"\berr != nil\b", 2.0),
        (r"^type \w+ (struct|interface) \{", 3.0),
    ),
    "rust": _rules(
        (r"^\s*(pub(\([\w:]+\))? )?(async |const |unsafe )*fn \w+", 3.0),
        (r"^\s*use [\w:]+(::\{|::\*|;)", 2.0),
        (r"\blet mut \w+", 2.0),
        (r"^\s*impl(<[^>]*>)? [\w:<>, ]+( for [\w:<>]+)? \{", 3.0),
        (r"^\s*#!?\[\w+", 2.0),
        (r"&(mut )?self\b", 2.0),
        (r"^\s*(pub )?(struct|enum|trait|mod) \w+", 1.0),
        (r"\w+!\(", 0.5),
    ),
    "java": _rules(
        (r"^package [\w.]+;\s*$", 4.0),
        (r"^import (static )?[\w.]+(\.\*)?;\s*$", 3.0),
        (
            r"^\s*(public|private|protected)( abstract| static| final)* (class|interface|enum) \w+",
            3.0,
        ),
        (r"^\s*(public|private|protected)( static| final| synchronized)* [\w<>\[\], ]+ \w+\(", 2.0),
        (r"^\s*@(Override|Test|Deprecated|SuppressWarnings)\b", 2.0),
        (r"\bSystem\.(out|err)\.", 2.0),
        (r"\bnew \w+(<[^>]*>)?\(", 0.5),
    ),
    "kotlin": _rules(
        (r"^package [\w.]+\s*$", 3.0),
        (r"^\s*((private|internal|override|suspend|inline|public) )*fun (<[^>]*> )?[\w.]+\(", 3.0),
        (r"^\s*(val \w+(: [\w<>?]+)? =|var \w+: [\w<>?]+)", 1.0),
        (r"^\s*(data |sealed |open |abstract )class \w+", 3.0),
        (r"^\s*(companion )?object \w*\s*\{", 2.0),
        (r"^import [\w.]+\s*$", 1.0),
    ),
    "csharp": _rules(
        (r"^using System(\.[\w.]+)?;", 4.0),
        (r"^\s*namespace [\w.]+\s*(;|\{|$)", 2.0),
        (r"\{ get; (private |protected |init; |set; )*\}", 3.0),
        (
            r"^\s*(public|private|internal|protected)( static| sealed| abstract| partial)*"
            r" (class|interface|struct|record) \w+",
            2.0,
        ),
        (r"^\s*\[\w+(\(.*\))?\]\s*$", 1.0),
        (r"\b(var \w+ = new|string\[\]|Console\.Write)", 1.0),
    ),
    "c": _rules(
        (r"^#include <\w+(/\w+)*\.h>", 3.0),
        (r"^#include \"[\w/.-]+\.h\"", 2.0),
        (
            r"^(static |extern |inline )*(const )?(unsigned |signed )?"
            r"(void|int|char|long|short|double|float|size_t|bool|struct \w+|\w+_t)"
            r"\s*\**\s*\w+\([^;]*$",
            3.0,
        ),
        (r"^#(define|ifdef|ifndef|endif|if)\b", 1.0),
        (r"\b(malloc|free|printf|fprintf|memcpy|sizeof)\(", 1.0),
        (r"\w->\w", 0.5),
    ),
    "cpp": _rules(
        (r"^#include <\w+>", 3.0),
        (r"\bstd::\w+", 2.0),
        (r"^\s*namespace \w+(::\w+)* \{", 3.0),
        (r"^\s*template\s*<", 3.0),
        (r"^\s*class \w+( final)?\s*(:\s*(public|private|protected) |\{|$)", 2.0),
        (r"^\s*struct \w+( final)?\s*:\s*(public|private|protected) ", 2.0),
        (r"^\s*(public|private|protected):\s*$", 3.0),
        (r"\w+::\w+\(", 1.0),
        (r"\b(nullptr|constexpr|noexcept|override|virtual)\b", 1.0),
        (r"^#(define|ifdef|ifndef|endif|if)\b", 0.5),
    ),
    "javascript": _rules(
        (r"\brequire\(['\"][^'\"]+['\"]\)", 3.0),
        (r"^\s*[\"']use strict[\"'];?\s*$", 4.0),
        (r"\bthis\.\w+", 0.5),
        (r"\bawait \w+", 0.5),
        (r"^\s*class \w+( extends [\w.]+)? \{", 1.0),
        (r"\bmodule\.exports\b|\bexports\.\w+ =", 3.0),
        (r"^\s*(export )?(async )?function\*? \w+\(", 2.0),
        (r"^\s*(export )?(const|let|var) \w+ = (async )?(\([^)]*\)|\w+) =>", 2.0),
        (r"^\s*(import .* from ['\"]|export (default|const|function|class)\b)", 2.0),
        (r"\b(console\.log|document\.|window\.|JSON\.parse|Promise\.)", 1.0),
        (r"\w\)? (===|!==) \S", 1.0),
    ),
    # Only what JavaScript lacks: a TypeScript file also shows every JavaScript
    # signal, and the two are told apart in detect_language.
    "typescript": _rules(
        (r"^\s*(export )?(declare )?interface \w+", 3.0),
        (r"^\s*(export )?type \w+(<[^>]*>)? =", 3.0),
        (r"\w\??: (string|number|boolean|void|unknown|any|never)\b", 2.0),
        (r"\b(private|public|protected) readonly\b|\breadonly \w+:", 2.0),
        (r"^\s*(export )?(async )?function \w+(<[^>]*>)?\([^)]*: ", 2.0),
        (r"\): [\w<>\[\]|]+ (\{|=>)", 2.0),
        (r"\bas (const|unknown|string)\b", 1.0),
    ),
    "ruby": _rules(
        (r"^\s*def (self\.)?\w+[?!=]?(\(.*\))?\s*$", 3.0),
        (r"^\s*end\s*$", 1.0),
        (r"^\s*require(_relative)? ['\"]", 2.0),
        (r"^\s*(module|class) [A-Z]\w*(::\w+)*( < [\w:]+)?\s*$", 3.0),
        (r"\bdo \|[\w, ]+\|", 2.0),
        (r"^\s*attr_(accessor|reader|writer) :", 3.0),
        (r"\b(puts|nil\?|\.each)\b", 0.5),
    ),
    "php": _rules(
        (r"^<\?php", 10.0),
        (r"\$\w+\s*(=|->)", 2.0),
        (r"^\s*((public|private|protected|static|abstract|final) )*function \w+\(", 2.0),
        (r"^\s*(namespace|use) [\w\\]+;", 2.0),
    ),
    "swift": _rules(
        (r"^import (Foundation|UIKit|SwiftUI|AppKit|Combine|XCTest)\s*$", 4.0),
        (
            r"^\s*((public|private|internal|open|static|override|mutating|@\w+) )*"
            r"func \w+(<[^>]*>)?\(",
            3.0,
        ),
        (r"\bguard (let|var) \w+", 3.0),
        (r"\bif let \w+ =", 2.0),
        (r"^\s*(let|var) \w+: [\w<>\[\]?]+( =|$)", 1.0),
        (r"^\s*(struct|protocol|extension) \w+( *:[\w, ]+)? \{", 2.0),
    ),
    "bash": _rules(
        (r"^\s*(function )?[\w-]+\s*\(\)\s*\{?\s*$", 3.0),
        (r"^\s*(fi|done|esac)\s*$", 2.0),
        (r"^\s*(if|elif) \[\[? .* \]\]?; then", 3.0),
        (r"^\s*(for \w+ in .*|while .*); do\s*$", 2.0),
        (r"^\s*(export|local|readonly) \w+=", 2.0),
        (r"\$\{\w+(:-[^}]*)?\}|\"\$@\"|\$\(", 1.0),
        (r"^\s*(echo|printf|set -[euxo]+)\b", 1.0),
    ),
}


def detect_language(text: str) -> str | None:
    """The language ``text`` is clearly written in (a :mod:`~ragsage.adapters.parsing.languages`
    name), or ``None`` when it reads as prose, or as no one language."""
    return _detect(text[:SAMPLE_CHARS])


# Routing asks, and the code reader asks again for the same upload; the
# patterns cost tens of milliseconds on 32 KB of code, so the answer is kept.
@functools.lru_cache(maxsize=16)
def _detect(sample: str) -> str | None:
    shebang = _SHEBANG.match(sample)
    if shebang:
        interpreter = shebang.group(1)
        return "python" if interpreter.startswith("python") else _SHEBANG_LANGUAGE[interpreter]
    lines = [line for line in sample.split("\n") if line.strip()]
    if not lines or _MARKDOWN_FENCE.search(sample) or _code_share(lines) < MIN_CODE_LINES:
        return None
    scores = language_scores(sample)
    # JavaScript's signals count for TypeScript too; TypeScript's own decide.
    typed = scores["typescript"]
    scores["typescript"] += scores["javascript"]
    ranked = sorted(scores.items(), key=lambda item: item[1], reverse=True)
    rivals = [(name, score) for name, score in ranked if name not in _SCRIPT_FAMILY]
    best, top = ranked[0]
    second = rivals[0][1] if best in _SCRIPT_FAMILY else ranked[1][1]
    if top < MIN_SCORE or top < second * MARGIN:
        return None
    if best in _SCRIPT_FAMILY:
        return "typescript" if typed >= _TYPED_SCORE else "javascript"
    return best


def language_scores(sample: str) -> dict[str, float]:
    """Each language's weighted count of its signals in ``sample``."""
    return {
        language: sum(
            weight * min(len(pattern.findall(sample)), _CAP) for pattern, weight in signals
        )
        for language, signals in _SIGNALS.items()
    }


def _code_share(lines: Sequence[str]) -> float:
    counted = [line for line in lines if not _COMMENT_LINE.match(line)]
    if not counted:
        return 0.0
    return sum(1 for line in counted if _CODE_LINE.search(line)) / len(counted)
