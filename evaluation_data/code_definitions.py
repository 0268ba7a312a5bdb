"""Definitions found with tree-sitter, each with its doc comment and its whole span."""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from evaluation_data.code_doc_text import strip_markers
from evaluation_data.code_specs import SPECS, LanguageSpec
from ragsage.core.text import words

MIN_CODE_LINES = 3
# Comment lines that steer a tool rather than document the code below them.
_DIRECTIVE = re.compile(
    r"^(//go:|//nolint|//\s*\+build|//export |//line |#\s*shellcheck|#\s*frozen_string_literal"
    r"|#\s*rubocop|#\s*-\*-|#\s*vim?:|#\s*:nocov:|#\s*encoding:|#\s*typed:)"
)


@dataclass(frozen=True, slots=True)
class Definition:
    """A definition found in a file: its names, its span and its doc comment."""

    name: str
    hidden: tuple[str, ...]
    qualname: str
    node_type: str
    start: int  # byte where the span starts (doc comment, attribute or the definition itself)
    end: int
    line: int  # 1-based line where the definition's own code starts
    name_line: int
    doc: str  # the doc comment's text without its markers, or the docstring's value
    doc_ranges: tuple[tuple[int, int], ...]
    header: str
    nodoc: bool = False

    def span(self, source: bytes) -> str:
        """The definition's whole span as it is in the file."""
        return source[self.start : self.end].decode("utf-8")

    def code(self, source: bytes) -> str:
        """The span without its doc comment (or docstring)."""
        pieces, at = [], self.start
        for begin, finish in self.doc_ranges:
            pieces.append(source[at:begin])
            at = finish
        pieces.append(source[at : self.end])
        return b"".join(pieces).decode("utf-8")


@cache
def parser_for(language: str) -> Any:
    """A tree-sitter parser for one of ``SPECS``' languages."""
    import importlib

    from tree_sitter import Language, Parser

    spec = SPECS[language]
    try:
        grammar = importlib.import_module(spec.module)
    except ImportError as exc:
        package = spec.module.replace("_", "-")
        raise SystemExit(
            f"error: the {package} grammar is missing ({exc}); `make setup` installs it"
        ) from exc
    return Parser(Language(getattr(grammar, spec.entry)()))


def _text(node: Any, source: bytes) -> str:
    return source[node.start_byte : node.end_byte].decode("utf-8", errors="replace")


def line_of(source: bytes, offset: int) -> int:
    return source.count(b"\n", 0, offset) + 1


def _c_declarator_name(node: Any, source: bytes) -> str | None:
    current = node.child_by_field_name("declarator")
    while current is not None:
        if current.type in {"identifier", "field_identifier", "type_identifier"}:
            return _text(current, source)
        if current.type == "destructor_name":
            return _text(current, source).lstrip("~").strip()
        if current.type in {"qualified_identifier", "template_function"}:
            current = current.child_by_field_name("name")
            continue
        if current.type == "operator_name":
            return None
        current = current.child_by_field_name("declarator")
    return None


_Names = tuple[str, tuple[str, ...]]


def _named(name: str | None) -> _Names | None:
    return (name, (name,)) if name else None


def _rust_impl_names(node: Any, source: bytes) -> _Names | None:
    names = []
    for field_name in ("type", "trait"):
        part = node.child_by_field_name(field_name)
        while part is not None and part.type in {"generic_type", "scoped_type_identifier"}:
            part = part.child_by_field_name("type") or part.child_by_field_name("name")
        if part is not None:
            names.append(_text(part, source))
    return (names[0], tuple(names)) if names else None


def _c_names(node: Any, source: bytes) -> _Names | None:
    if node.type == "function_definition":
        return _named(_c_declarator_name(node, source))
    if node.child_by_field_name("body") is None:
        return None  # a forward declaration or a use of the type, not its definition
    named = node.child_by_field_name("name")
    if named is not None:
        return _named(_text(named, source).split("<")[0].split("::")[-1].strip())
    if node.parent is not None and node.parent.type == "type_definition":
        return _named(_c_declarator_name(node.parent, source))
    return None


def _js_declaration_names(node: Any, source: bytes) -> _Names | None:
    declarators = [c for c in node.named_children if c.type == "variable_declarator"]
    target = declarators[0].child_by_field_name("name") if len(declarators) == 1 else None
    if target is None or target.type != "identifier":
        return None
    return _named(_text(target, source))


def _js_assignment_names(node: Any, source: bytes) -> _Names | None:
    # ``res.send = function send(body) {...}``: a function or class stored in a property.
    assignment = node.named_children[0] if node.named_child_count else None
    if assignment is None or assignment.type != "assignment_expression":
        return None
    left = assignment.child_by_field_name("left")
    right = assignment.child_by_field_name("right")
    functions = {"function_expression", "function", "arrow_function", "class"}
    if left is None or right is None or right.type not in functions:
        return None
    if left.type == "member_expression":
        left = left.child_by_field_name("property")
    if left is None or left.type not in {"identifier", "property_identifier"}:
        return None
    return _named(_text(left, source))


def definition_names(node: Any, language: str, source: bytes) -> _Names | None:
    """A definition's name and the names a question about it must not show; ``None`` to skip."""
    if language == "rust" and node.type == "impl_item":
        return _rust_impl_names(node, source)
    if language in {"c", "cpp"}:
        return _c_names(node, source)
    if node.type in {"lexical_declaration", "variable_declaration"}:
        return _js_declaration_names(node, source)
    if node.type == "expression_statement":
        return _js_assignment_names(node, source)
    named = node.child_by_field_name("name")
    if named is None or named.type == "computed_property_name":
        return None
    return _named(re.split(r"::|\\", _text(named, source))[-1].lstrip("#$"))


def _outer(node: Any, spec: LanguageSpec) -> Any:
    outer = node
    while outer.parent is not None and outer.parent.type in spec.wrappers:
        parent = outer.parent
        if parent.type == "type_declaration" and parent.named_child_count != 1:
            break
        if parent.type in {"declaration", "field_declaration"} and outer.type not in {
            "struct_specifier",
            "union_specifier",
            "enum_specifier",
            "class_specifier",
        }:
            break
        outer = parent
    return outer


def _is_doc(text: str, style: str) -> bool:
    if style == "rust":
        return (text.startswith("///") and not text.startswith("////")) or (
            text.startswith("/**") and not text.startswith(("/***", "/**/"))
        )
    if style == "javadoc":
        return text.startswith("/**") and not text.startswith("/**/")
    if style == "slash":
        return text.startswith(("//", "/*"))
    return text.startswith("#") and not text.startswith("#!")


def _starts_line(source: bytes, offset: int) -> bool:
    line_start = source.rfind(b"\n", 0, offset) + 1
    return not source[line_start:offset].strip()


def _prefix(
    start: int, items: Sequence[tuple[int, int, str]], source: bytes, style: str
) -> tuple[int, list[tuple[int, int]], bool]:
    """Walk back from a definition over adjacent attributes and doc comments.

    ``items`` are the file's comments (``"comment"``) and attributes
    (``"attribute"``) as sorted ``(start, end, kind)``; the result is where the
    span starts, the doc comments' byte ranges, and whether ``:nodoc:`` was seen.
    """
    position, nodoc = start, False
    ranges: list[tuple[int, int]] = []
    index = _last_before(items, start)
    while index >= 0:
        begin, finish, kind = items[index]
        gap = source[finish:position]
        # JSDoc and PHPDoc blocks are often set one blank line above what they document.
        lines_apart = 2 if style == "javadoc" and not ranges else 1
        if gap.strip() or gap.count(b"\n") > lines_apart or not _starts_line(source, begin):
            break
        text = source[begin:finish].decode("utf-8", errors="replace").strip()
        if kind == "attribute" or _DIRECTIVE.match(text):
            position = begin
        elif _is_doc(text, style) and "copyright" not in text.lower():
            nodoc = nodoc or ":nodoc:" in text
            ranges.insert(0, (begin, finish))
            position = begin
            if style == "javadoc" or (text.startswith("/*") and style == "rust"):
                break
        else:
            break
        index -= 1
    return position, ranges, nodoc


def _last_before(items: Sequence[tuple[int, int, str]], offset: int) -> int:
    low, high = 0, len(items)
    while low < high:
        middle = (low + high) // 2
        if items[middle][1] <= offset:
            low = middle + 1
        else:
            high = middle
    return low - 1


def _docstring(node: Any, source: bytes) -> tuple[str, tuple[tuple[int, int], ...]]:
    body = node.child_by_field_name("body")
    if body is None or not body.named_child_count:
        return "", ()
    first = body.named_children[0]
    if first.type != "expression_statement" or first.named_child_count != 1:
        return "", ()
    string = first.named_children[0]
    if string.type != "string":
        return "", ()
    try:
        value = ast.literal_eval(_text(string, source))
    except (SyntaxError, ValueError):
        return "", ()
    if not isinstance(value, str):
        return "", ()
    return inspect.cleandoc(value), ((first.start_byte, first.end_byte),)


# A line holding only an upper-case macro call with no semicolon (``ABSL_NAMESPACE_BEGIN``,
# ``GTEST_API_``...) derails the C and C++ grammars, which read it as a type.
_BARE_MACRO = re.compile(rb"^[ \t]*[A-Z][A-Z0-9_]{3,}(?:\([^;{}\n]*\))?[ \t]*$", re.MULTILINE)


def mask_macros(source: bytes) -> bytes:
    """The source with bare macro lines blanked, byte offsets unchanged (for parsing only)."""
    return _BARE_MACRO.sub(lambda m: b" " * len(m.group(0)), source)


def find_definitions(language: str, source: bytes) -> list[Definition]:
    """Every definition outside function bodies, with its span and doc comment."""
    spec = SPECS[language]
    tree = parser_for(language).parse(mask_macros(source) if language in {"c", "cpp"} else source)
    items: list[tuple[int, int, str]] = []
    found: list[Definition] = []

    def collect(node: Any) -> None:
        if node.type in spec.comments:
            finish = node.end_byte
            while finish > node.start_byte and source[finish - 1 : finish] in b"\r\n":
                finish -= 1
            items.append((node.start_byte, finish, "comment"))
            return
        if node.type in spec.attributes:
            items.append((node.start_byte, node.end_byte, "attribute"))
            return
        for child in node.children:
            collect(child)

    collect(tree.root_node)
    items.sort()

    def walk(node: Any, outer_names: tuple[str, ...], in_function: bool) -> None:
        for child in node.named_children:
            names = None
            if child.type in spec.definitions and not in_function:
                names = definition_names(child, language, source)
            if names is not None:
                found.append(_definition(child, names, outer_names, spec, items, source))
                inner = (*outer_names, names[0])
            else:
                inner = outer_names
            walk(child, inner, in_function or child.type in spec.functions)

    walk(tree.root_node, (), False)
    return found


def _definition(
    node: Any,
    names: tuple[str, tuple[str, ...]],
    outer_names: tuple[str, ...],
    spec: LanguageSpec,
    items: Sequence[tuple[int, int, str]],
    source: bytes,
) -> Definition:
    outer = _outer(node, spec)
    name, hidden = names
    # The name's first occurrence in the definition: in C the return type may stand
    # on the line above the name, and the header must be the line that names it.
    pattern = rb"(?<![\w$])" + re.escape(name.encode()) + rb"(?![\w$])"
    found = re.search(pattern, source[node.start_byte : node.end_byte])
    at = node.start_byte + (found.start() if found else 0)
    name_line = line_of(source, at)
    line_start = source.rfind(b"\n", 0, at) + 1
    line_end = source.find(b"\n", at)
    header = " ".join(words(source[line_start : line_end if line_end >= 0 else None].decode()))
    nodoc = False
    if spec.doc == "docstring":
        doc, ranges = _docstring(node, source)
        start = outer.start_byte
    else:
        start, doc_ranges, nodoc = _prefix(outer.start_byte, items, source, spec.doc)
        ranges = tuple(doc_ranges)
        doc = "\n".join(strip_markers(source[b:e].decode("utf-8", "replace")) for b, e in ranges)
    return Definition(
        name=name,
        hidden=tuple(dict.fromkeys(h for h in hidden if h)),
        qualname=".".join((*outer_names, name)),
        node_type=node.type,
        start=start,
        end=outer.end_byte,
        line=outer.start_point.row + 1,
        name_line=name_line,
        doc=doc,
        doc_ranges=ranges,
        header=header,
        nodoc=nodoc,
    )
