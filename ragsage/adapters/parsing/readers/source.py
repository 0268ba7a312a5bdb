"""Source code in any language tree-sitter reads, as headings that follow its definitions.

The file becomes one page of Markdown (see :mod:`.code_sections`): a heading
for the file (its path, its package or module, and the first line of a leading
doc comment), a heading for each class, impl, trait, interface, namespace or
module inside it, and one for each function, method or type, titled by its
signature.  Every line of the file lands verbatim in exactly one fenced block,
so indentation is kept and the chunker gives each definition its own chunk,
with its doc comment, under a heading path that says where it sits.

A file tree-sitter cannot make sense of (more than :data:`MAX_ERROR_SHARE` of
its bytes under error nodes), or one whose grammar is not installed, is still
indexed: as one fenced block under the file heading, cut by lines, with a
warning in the document's metadata.
"""

from __future__ import annotations

import importlib
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from ragsage.adapters.parsing.formats import refuse_binary
from ragsage.adapters.parsing.languages import Language
from ragsage.adapters.parsing.readers.code_sections import (
    LICENCE_WORDS,
    MAX_SIGNATURE_CHARS,
    Section,
    comment_words,
    render,
    shorten,
    unstructured,
)
from ragsage.adapters.parsing.readers.source_specs import BODY_TYPES, SPECS, Spec
from ragsage.core.documents import RawSource
from ragsage.core.pages import Page, ParsedDocument

if TYPE_CHECKING:
    import tree_sitter

logger = logging.getLogger(__name__)

# Above this share of bytes in error nodes the tree says more about the
# grammar's confusion than about the file, and its headings would mislead.
MAX_ERROR_SHARE = 0.3
_SUMMARY_CHARS = 100
_TRIM_TITLE = " \t{:=;"
# Lines that only close what a container opened.
_CLOSER = re.compile(r"\s*([)}\]];?|end|esac|fi|done)*\s*((//|#|/\*).*)?")
# A first comment like ``# frozen_string_literal: true`` or ``// @ts-check`` is a
# setting for a tool, not a summary of the file.
_PRAGMA = re.compile(r"^(@?[\w-]+:\s*\S+|@[\w-]+|[\w-]+)$")


class GrammarMissing(Exception):
    """The grammar package of a language is not installed (the ``code`` extra)."""


def read_source(
    source: RawSource, language: Language, *, structured: bool = True
) -> ParsedDocument:
    """Read a source file into one page of definition headings and fenced code.

    ``structured=False`` skips the grammar and writes the file as one fenced
    block under its heading: the plain reading, cut by lines only.
    """
    text, warning = _decode(source)
    title = source.filename or "source"
    metadata: dict[str, str] = {"language": language.name}
    if not structured:
        page = unstructured(title, text, language.fence)
        return ParsedDocument(pages=(Page(number=1, text=page),), title=title, metadata=metadata)
    try:
        page = _structured_page(text, source.filename, language)
    except (GrammarMissing, _TooBroken) as exc:
        warning = str(exc)
        logger.warning("%s: %s; indexed without code structure", source.filename, warning)
        page = unstructured(title, text, language.fence)
    if warning:
        metadata["parse_warning"] = warning
    return ParsedDocument(pages=(Page(number=1, text=page),), title=title, metadata=metadata)


class _TooBroken(Exception):
    pass


def _decode(source: RawSource) -> tuple[str, str | None]:
    refuse_binary(source, "a source file")
    content = source.content
    warning = None
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        # Old sources in Latin-1 are common; a few odd characters must not
        # keep a whole file out of the index.
        text = content.decode("utf-8", errors="replace")
        warning = f"not valid UTF-8 (byte offset {exc.start}); undecodable bytes replaced"
    return text.replace("\r\n", "\n").replace("\r", "\n"), warning


@cache
def parser_for(language: Language) -> tree_sitter.Parser:
    """A parser for ``language``, its grammar loaded once per process."""
    try:
        import tree_sitter

        module = importlib.import_module(language.grammar_module)
    except ImportError as exc:
        raise GrammarMissing(
            f"no tree-sitter grammar for {language.label} is installed "
            f"({language.grammar_module}; install ragsage[code])"
        ) from exc
    return tree_sitter.Parser(tree_sitter.Language(getattr(module, language.grammar_function)()))


def _structured_page(text: str, filename: str, language: Language) -> str:
    data = text.encode("utf-8")
    tree = parser_for(language).parse(data)
    share = error_share(tree.root_node, len(data))
    if share > MAX_ERROR_SHARE:
        raise _TooBroken(
            f"{share:.0%} of the file did not parse as {language.label}, "
            f"over the {MAX_ERROR_SHARE:.0%} allowed"
        )
    lines = text.split("\n")
    walker = _Walker(data, lines, SPECS[language.name])
    root = Section(_file_title(filename, language, walker, tree.root_node), 0, 1, len(lines))
    root.children = walker.sections(tree.root_node, root)
    return "\n\n".join(render(root, lines, language.fence))


def error_share(root: tree_sitter.Node, size: int) -> float:
    """The share of the file's bytes the grammar could not place in a well-formed node.

    An error node often wraps whole well-formed definitions (tree-sitter makes
    the root itself an error when one statement fails at top level), so only
    the bytes of an error node outside its well-formed named children count.
    """
    if size == 0 or not root.has_error:
        return 0.0
    broken = 0
    stack = [root]
    # An explicit stack: a deeply nested file must not exhaust Python's recursion.
    while stack:
        node = stack.pop()
        if node.is_missing:
            broken += 1
            continue
        if node.is_error:
            sound = sum(
                child.end_byte - child.start_byte
                for child in node.named_children
                if not child.has_error
            )
            broken += max(node.end_byte - node.start_byte - sound, 0)
        stack.extend(child for child in node.children if child.has_error)
    return min(broken / size, 1.0)


@dataclass(slots=True)
class _Walker:
    data: bytes
    lines: list[str]
    spec: Spec

    def sections(
        self,
        node: tree_sitter.Node,
        parent: Section,
        lead: list[tree_sitter.Node] | None = None,
    ) -> list[Section]:
        """The definitions directly under ``node``, as sections inside ``parent``'s lines.

        ``lead`` holds comments that precede ``node`` but belong to its first member.
        """
        found: list[Section] = []
        for member, first in self._members(node, lead or []):
            last = _last_row(member) + 1
            # A member may start on a file's first line, but not on its container's.
            low = found[-1].last if found else parent.first - (parent.depth == 0)
            if first <= low or last > parent.last:
                # Sharing a line with what came before (two definitions on one
                # line, a one-line class): it stays in the code around it.
                continue
            inner = _inner(member, self.spec)
            section = Section(self.signature(inner, member), parent.depth + 1, first, last)
            if inner.type in self.spec.containers:
                body = _body(inner)
                if body is not None:
                    section.children = self.sections(
                        body, section, _comments_before(inner, body, self.spec)
                    )
            found.append(section)
        if found:
            self._close_over(found[-1], parent)
        return found

    def _close_over(self, last: Section, parent: Section) -> None:
        """Give the container's closing lines (``}``, ``end``) to its last member.

        Alone they would make a chunk of one brace under the container's path.
        """
        tail = self.lines[last.last : parent.last]
        if parent.depth > 0 and all(_CLOSER.fullmatch(line) for line in tail):
            node: Section | None = last
            while node is not None:
                node.last = parent.last
                node = node.children[-1] if node.children else None

    def _members(
        self, node: tree_sitter.Node, lead: list[tree_sitter.Node]
    ) -> Iterator[tuple[tree_sitter.Node, int]]:
        """Definitions under ``node`` (through transparent blocks), with their first line.

        A definition's first line is that of the comments and attributes right
        above it, with no blank line between: its doc comment goes with it.
        """
        previous_end = _last_row(lead[-1]) if lead else -1
        for child in node.named_children:
            kind = child.type
            if kind in self.spec.comments and _is_shebang(child):
                previous_end = _last_row(child)
                continue
            if kind in self.spec.comments or kind in self.spec.attributes:
                joins = not lead or child.start_point.row <= _last_row(lead[-1]) + 1
                # A comment on the line that ends the previous statement is its tail.
                own_line = child.start_point.row > previous_end
                lead = [*lead, child] if joins and own_line else ([child] if own_line else [])
                previous_end = _last_row(child)
                continue
            if self._is_definition(child):
                attached = lead and child.start_point.row <= _last_row(lead[-1]) + 1
                start = lead[0].start_point.row if attached else child.start_point.row
                yield child, start + 1
            elif kind in self.spec.transparent:
                yield from self._members(child, [])
            lead = []
            previous_end = _last_row(child)

    def _is_definition(self, node: tree_sitter.Node) -> bool:
        inner = _inner(node, self.spec)
        kind = inner.type
        if kind in ("lexical_declaration", "variable_declaration"):
            return _declares_function(inner, self.spec)
        return kind in self.spec.definitions or kind in self.spec.containers

    def signature(self, inner: tree_sitter.Node, outer: tree_sitter.Node) -> str:
        """The definition's header as written: from its first keyword to its body."""
        start = outer.start_byte
        # Leading annotations on their own lines (Java, C#) stay in the header,
        # but comments inside the node's span (rare) do not start it.
        body = _body(inner) if inner.type not in ("lexical_declaration",) else _value_body(inner)
        end = body.start_byte if body is not None and body.start_byte > start else None
        # A comment between the header and the body (Ruby, Python) is not the header.
        for child in inner.children:
            if child.type in self.spec.comments and child.start_byte > start:
                end = child.start_byte if end is None else min(end, child.start_byte)
                break
        if end is None:
            end = self.data.find(b"\n", start)
            end = outer.end_byte if end < 0 or end > outer.end_byte else end
        header = self.data[start:end].decode("utf-8", errors="replace")
        header = shorten(header, MAX_SIGNATURE_CHARS * 2).rstrip(_TRIM_TITLE)
        return shorten(header, MAX_SIGNATURE_CHARS) or inner.type

    def unit(self, root: tree_sitter.Node) -> str | None:
        """The package or namespace a file declares, as written (``package io``)."""
        for child in root.named_children:
            if child.type in self.spec.units and _body(child) is None:
                text = self.data[child.start_byte : child.end_byte].decode("utf-8", "replace")
                return shorten(text, 80).rstrip(";{ ")
        return None

    def summary(self, root: tree_sitter.Node) -> str | None:
        """The first line of a comment that opens the file, unless it is a licence header
        or the doc comment of the definition right below it."""
        opening: list[tree_sitter.Node] = []
        for child in root.named_children:
            if child.type in self.spec.comments:
                opening.append(child)
                continue
            if opening and self._is_definition(child):
                if child.start_point.row <= _last_row(opening[-1]) + 1:
                    opening = opening[:-1]
            break
        for comment in opening:
            if _is_shebang(comment):
                continue
            text = self.data[comment.start_byte : comment.end_byte].decode("utf-8", "replace")
            line = comment_words(text)
            if _PRAGMA.match(line):
                continue
            if line and not any(word in line.lower() for word in LICENCE_WORDS):
                return shorten(line, _SUMMARY_CHARS)
        return None


def _file_title(filename: str, language: Language, walker: _Walker, root: tree_sitter.Node) -> str:
    parts = [PurePosixPath(filename.replace("\\", "/")).as_posix() or "source"]
    unit = walker.unit(root)
    if unit is None and language.name == "rust":
        unit = rust_module(filename)
    if unit:
        parts.append(unit)
    summary = walker.summary(root)
    if summary:
        parts.append(summary)
    return " — ".join(parts)


def rust_module(filename: str) -> str | None:
    """The module path a Rust file's place in its crate gives it (``src/a/b.rs``: ``a::b``)."""
    parts = list(PurePosixPath(filename.replace("\\", "/")).with_suffix("").parts)
    if "src" in parts:
        parts = parts[len(parts) - parts[::-1].index("src") :]
    if parts and parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    names = [part for part in parts if part.isidentifier()]
    return "mod " + "::".join(names) if names else None


def _last_row(node: tree_sitter.Node) -> int:
    """The 0-based row of a node's last character (a line comment's span ends past its newline)."""
    row, column = node.end_point
    return row - 1 if column == 0 and row > node.start_point.row else row


def _is_shebang(comment: tree_sitter.Node) -> bool:
    return comment.start_byte == 0 and comment.text is not None and comment.text.startswith(b"#!")


def _comments_before(
    container: tree_sitter.Node, body: tree_sitter.Node, spec: Spec
) -> list[tree_sitter.Node]:
    """Comments a grammar hangs on the container just before its body (Ruby does)."""
    run: list[tree_sitter.Node] = []
    for child in container.named_children:
        if child.start_byte >= body.start_byte:
            break
        if child.type not in spec.comments:
            run = []
        elif run and child.start_point.row > _last_row(run[-1]) + 1:
            run = [child]
        else:
            run.append(child)
    return run


def _inner(node: tree_sitter.Node, spec: Spec) -> tree_sitter.Node:
    """The definition a wrapper (export, decorator, template) holds, or the node itself."""
    while node.type in spec.wrappers:
        held = node.child_by_field_name("definition") or node.child_by_field_name("declaration")
        if held is None:
            kinds = spec.definitions | spec.containers | spec.wrappers
            held = next((c for c in node.named_children if c.type in kinds), None)
        if held is None:
            return node
        node = held
    return node


def _body(node: tree_sitter.Node) -> tree_sitter.Node | None:
    body = node.child_by_field_name("body")
    if body is not None:
        return body
    return next((child for child in node.named_children if child.type in BODY_TYPES), None)


def _declares_function(node: tree_sitter.Node, spec: Spec) -> bool:
    for declarator in node.named_children:
        value = declarator.child_by_field_name("value")
        if value is not None and value.type in spec.function_values:
            return True
    return False


def _value_body(node: tree_sitter.Node) -> tree_sitter.Node | None:
    for declarator in node.named_children:
        value = declarator.child_by_field_name("value")
        if value is not None:
            return _body(value)
    return None
