"""Python source: Markdown whose headings are the module, its classes and its functions.

A chunk of code means little without knowing where it sits, so the structure of
the file becomes the heading path the chunker records on every chunk: the
module (with its docstring's first line), then each enclosing ``class`` or
``def`` by its signature.  The code itself is kept verbatim in fenced blocks,
in file order, so every line of the file lands in exactly one block.

Functions nested inside functions stay inline in their parent's block (they are
an implementation detail of it); classes and functions at module or class
level, including those inside ``if``/``try``/``with`` blocks there, get a
heading of their own.  A file that does not decode or parse is still indexed,
as one block under the module heading, with a warning in its metadata.
"""

from __future__ import annotations

import ast
import io
import logging
import tokenize
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from ragsage.parsing.markdown import fenced, heading
from ragsage.parsing.markdown import inline as one_line
from ragsage.text import clean
from ragsage.types import Page, ParsedDocument, RawSource

logger = logging.getLogger(__name__)

# Long parameter lists would crowd the rest of the heading path out of the
# contextualizer's bounded header, so a signature is cut at a parameter boundary.
MAX_SIGNATURE_CHARS = 120
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# Folders that hold packages without being part of their import path.
_SOURCE_ROOTS = frozenset({"src", "lib", "python", "site-packages", "dist-packages"})


@dataclass(slots=True)
class _Section:
    """A heading and the inclusive 1-based line range it owns, minus its children's."""

    title: str
    depth: int
    first: int
    last: int
    children: list[_Section] = field(default_factory=list)


def read_python(source: RawSource) -> ParsedDocument:
    """Read a ``.py`` file into one page of structure headings and fenced code."""
    module = module_name(source.filename)
    try:
        text = _decode(source.content)
        tree = ast.parse(text, filename=source.filename, type_comments=False)
        # ast counts lines by "\n" only; splitlines() would also split on form
        # feeds and the like, and every later section would slip by a line.
        lines = text.split("\n")
        root = _Section(_module_title(module, tree), 0, 1, len(lines))
        root.children = _sections(tree.body, lines, 1)
        blocks: list[str] = []
        _render(root, lines, blocks)
    except (SyntaxError, ValueError, UnicodeDecodeError, LookupError, RecursionError) as exc:
        return _unstructured(source, module, _reason(exc))
    return ParsedDocument(
        pages=(Page(number=1, text="\n\n".join(blocks)),),
        title=module,
        metadata={"language": "python"},
    )


def module_name(filename: str) -> str:
    """The dotted import path a file name suggests: ``pkg/sub/mod.py`` is ``pkg.sub.mod``."""
    path = PurePosixPath(filename.replace("\\", "/"))
    parts = [part for part in path.with_suffix("").parts if part not in ("/", ".", "..")]
    for index in range(len(parts) - 1, -1, -1):
        if parts[index] in _SOURCE_ROOTS:
            parts = parts[index + 1 :]
            break
    if len(parts) > 1 and parts[-1] == "__init__":
        parts = parts[:-1]
    dotted = [part for part in parts if part.isidentifier()] or [path.stem or "module"]
    return ".".join(dotted)


def signature(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> str:
    """A definition's header line as a reader would quote it, decorators first."""
    decorators = " ".join("@" + _short(ast.unparse(d), 60) for d in node.decorator_list)
    if isinstance(node, ast.ClassDef):
        bases = [ast.unparse(base) for base in node.bases]
        bases += [ast.unparse(keyword) for keyword in node.keywords]
        head = f"class {node.name}" + (f"({_joined(bases)})" if bases else "")
    else:
        prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
        params = _parameters(node.args)
        returns = f" -> {_short(ast.unparse(node.returns), 40)}" if node.returns else ""
        head = f"{prefix} {node.name}({_joined(params)}){returns}"
    return one_line(f"{decorators} {head}" if decorators else head)


def _decode(content: bytes) -> str:
    # The coding cookie or BOM decides, as it does for the interpreter.
    encoding, _ = tokenize.detect_encoding(io.BytesIO(content).readline)
    text = content.decode(encoding)
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def _module_title(module: str, tree: ast.Module) -> str:
    docstring = ast.get_docstring(tree, clean=True)
    summary = docstring.strip().split("\n", 1)[0].strip() if docstring else ""
    return f"module {module}" + (f" — {_short(summary, 100)}" if summary else "")


def _sections(body: list[ast.stmt], lines: list[str], depth: int) -> list[_Section]:
    """The definitions directly under a module or class body, looking inside compound blocks."""
    found: list[_Section] = []
    for statement in body:
        if isinstance(statement, _DEFINITIONS):
            first = _first_line(statement, lines)
            last = statement.end_lineno or statement.lineno
            section = _Section(signature(statement), depth, first, last)
            if isinstance(statement, ast.ClassDef):
                section.children = _sections(statement.body, lines, depth + 1)
            found.append(section)
            continue
        for inner in _inner_bodies(statement):
            found.extend(_sections(inner, lines, depth))
    return found


def _inner_bodies(statement: ast.stmt) -> list[list[ast.stmt]]:
    if isinstance(statement, ast.If | ast.For | ast.AsyncFor | ast.While):
        return [statement.body, statement.orelse]
    if isinstance(statement, ast.With | ast.AsyncWith):
        return [statement.body]
    if isinstance(statement, ast.Try | ast.TryStar):
        handlers = [handler.body for handler in statement.handlers]
        return [statement.body, *handlers, statement.orelse, statement.finalbody]
    return []


def _first_line(
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, lines: list[str]
) -> int:
    """Where a definition starts: its first decorator, or the comments right above it."""
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    indent = len(lines[first - 1]) - len(lines[first - 1].lstrip())
    while first > 1:
        above = lines[first - 2]
        stripped = above.lstrip()
        if not stripped.startswith("#") or len(above) - len(stripped) != indent:
            break
        first -= 1
    return first


def _render(section: _Section, lines: list[str], blocks: list[str]) -> None:
    """Emit the section's heading, its own lines as code, and its children in order.

    Lines after a child definition belong to the parent again, so the parent's
    heading is repeated before them: the chunker then files them under the
    parent's path rather than the child's.
    """
    title = heading(min(section.depth + 1, 6), section.title)
    blocks.append(title)
    cursor, after_child = section.first, False
    for child in section.children:
        own = _code(lines, cursor, child.first - 1)
        if own:
            if after_child:
                blocks.append(title)
            blocks.append(fenced(own, "python"))
        _render(child, lines, blocks)
        cursor, after_child = child.last + 1, True
    tail = _code(lines, cursor, section.last)
    if tail:
        if after_child:
            blocks.append(title)
        blocks.append(fenced(tail, "python"))


def _code(lines: list[str], first: int, last: int) -> str:
    """Lines ``first..last`` (1-based, inclusive) with blank edges trimmed."""
    chunk = "\n".join(lines[first - 1 : last])
    return chunk.strip("\n") if chunk.strip() else ""


def _parameters(args: ast.arguments) -> list[str]:
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
    defaults += list(args.defaults)
    params = [_parameter(arg, default) for arg, default in zip(positional, defaults, strict=True)]
    if args.posonlyargs:
        params.insert(len(args.posonlyargs), "/")
    if args.vararg is not None:
        params.append("*" + _parameter(args.vararg, None))
    elif args.kwonlyargs:
        params.append("*")
    params += [
        _parameter(arg, default)
        for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True)
    ]
    if args.kwarg is not None:
        params.append("**" + _parameter(args.kwarg, None))
    return params


def _parameter(arg: ast.arg, default: ast.expr | None) -> str:
    text = arg.arg
    if arg.annotation is not None:
        text += f": {_short(ast.unparse(arg.annotation), 40)}"
    if default is not None:
        text += (" = " if arg.annotation is not None else "=") + _short(ast.unparse(default), 30)
    return text


def _joined(parts: list[str]) -> str:
    """Parameters joined by commas, cut at a parameter boundary with an ellipsis if long."""
    text = ", ".join(parts)
    if len(text) <= MAX_SIGNATURE_CHARS:
        return text
    kept: list[str] = []
    for part in parts:
        if len(", ".join([*kept, part, "…"])) > MAX_SIGNATURE_CHARS:
            break
        kept.append(part)
    return ", ".join([*kept, "…"])


def _short(text: str, limit: int) -> str:
    text = one_line(text)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _reason(exc: BaseException) -> str:
    if isinstance(exc, SyntaxError):
        return f"not valid Python (line {exc.lineno}: {exc.msg})"
    if isinstance(exc, UnicodeDecodeError | LookupError):
        return f"source encoding could not be read ({exc})"
    if isinstance(exc, RecursionError):
        return "nested too deeply to parse"
    return f"source could not be parsed ({exc})"


def _unstructured(source: RawSource, module: str, reason: str) -> ParsedDocument:
    """The whole file as one code block: structure is lost, but nothing is refused."""
    logger.warning("%s: %s; indexed without code structure", source.filename, reason)
    text = clean(source.content.decode("utf-8", errors="replace")).replace("\r\n", "\n")
    page = "\n\n".join([heading(1, f"module {module}"), fenced(text, "python")])
    return ParsedDocument(
        pages=(Page(number=1, text=page),),
        title=module,
        metadata={"language": "python", "parse_warning": reason},
    )
