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
from pathlib import PurePosixPath

from ragsage.adapters.parsing.formats import refuse_binary
from ragsage.adapters.parsing.markdown import inline as one_line
from ragsage.adapters.parsing.readers.code_sections import (
    MAX_SIGNATURE_CHARS,
    Section,
    render,
    shorten,
    unstructured,
)
from ragsage.core.documents import RawSource
from ragsage.core.pages import Page, ParsedDocument
from ragsage.core.text import clean

logger = logging.getLogger(__name__)

_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# Folders that hold packages without being part of their import path.
_SOURCE_ROOTS = frozenset({"src", "lib", "python", "site-packages", "dist-packages"})


def read_python(source: RawSource) -> ParsedDocument:
    """Read a ``.py`` file into one page of structure headings and fenced code."""
    refuse_binary(source, "a source file")
    module = module_name(source.filename)
    try:
        text = _decode(source.content)
        tree = ast.parse(text, filename=source.filename, type_comments=False)
        # ast counts lines by "\n" only; splitlines() would also split on form
        # feeds and the like, and every later section would slip by a line.
        lines = text.split("\n")
        root = Section(_module_title(module, tree), 0, 1, len(lines))
        root.children = _sections(tree.body, lines, 1)
        blocks = render(root, lines, "python")
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
    decorators = " ".join("@" + shorten(ast.unparse(d), 60) for d in node.decorator_list)
    if isinstance(node, ast.ClassDef):
        bases = [ast.unparse(base) for base in node.bases]
        bases += [ast.unparse(keyword) for keyword in node.keywords]
        head = f"class {node.name}" + (f"({_joined(bases)})" if bases else "")
    else:
        prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
        params = _parameters(node.args)
        returns = f" -> {shorten(ast.unparse(node.returns), 40)}" if node.returns else ""
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
    return f"module {module}" + (f" — {shorten(summary, 100)}" if summary else "")


def _sections(body: list[ast.stmt], lines: list[str], depth: int) -> list[Section]:
    """The definitions directly under a module or class body, looking inside compound blocks."""
    found: list[Section] = []
    for statement in body:
        if isinstance(statement, _DEFINITIONS):
            first = _first_line(statement, lines)
            last = statement.end_lineno or statement.lineno
            section = Section(signature(statement), depth, first, last)
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
        text += f": {shorten(ast.unparse(arg.annotation), 40)}"
    if default is not None:
        text += (" = " if arg.annotation is not None else "=") + shorten(ast.unparse(default), 30)
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
    page = unstructured(f"module {module}", text, "python")
    return ParsedDocument(
        pages=(Page(number=1, text=page),),
        title=module,
        metadata={"language": "python", "parse_warning": reason},
    )
