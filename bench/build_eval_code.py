"""Build the multi-language source-code retrieval dataset (code) from pinned packages.

    python bench/build_eval_code.py [--cache DIR] [--out DIR] [--files-per-language N]
                                    [--max-bytes N] [--doc-questions N]
                                    [--max-per-document N] [--handwritten FILE] [--seed N]

It downloads the exact package versions pinned in ``SOURCES`` (Debian ``.deb``
files with ``apt-get download``, npm tarballs with ``npm pack``) into ``--cache``,
checks each archive's SHA-256 against the pin, copies a seeded sample of each
language's source files byte for byte to ``<out>/documents/<language>/<package>/``
and writes questions in the QA-span layout read by ``ragsage eval``
(docs/evaluation-dataset.md, section "code"):

* ``doc-comment``: the first sentence of a definition's doc comment (Rust ``///``,
  Javadoc, JSDoc, PHPDoc, Doxygen, Go and C comments, Python docstrings, Ruby and
  shell ``#`` blocks), with markup stripped and the definition's name hidden;
* ``handwritten``: questions written by hand in ``bench/code_questions_handwritten.jsonl``,
  each naming the definition it points at, resolved here to its span.

The answer is the definition's whole span as it stands in the file: its doc
comment and attributes, then its code through its end. Questions carry
``"match": "overlap"``: a chunk answers when the word 8-grams it shares with the
span cover half of the smaller of the two. Definitions are found with tree-sitter
grammars directly, never with ragsage's own code readers, so the data does not
depend on the chunker it judges. The data is never committed.
"""

from __future__ import annotations

import argparse
import ast
import html
import inspect
import json
import random
import re
import sys
import tarfile
import time
import zipfile
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path, PurePosixPath
from statistics import mean
from typing import Any

# Run as a script, this folder is on sys.path: its sibling modules import directly.
from pinned_packages import Pin, fetch, sha256_of, unpack

from ragsage.adapters.parsing.tokens import load_encoding
from ragsage.core.text import STOPWORDS, words
from ragsage.evaluation.writing import (
    QAQuestion,
    positive_int,
    question_line,
    split_of,
    word_overlap,
    write_dataset_folder,
)

DEFAULT_CACHE = Path(".ragsage/cache/code-src")
DEFAULT_OUT = Path(".ragsage/eval/code")
DEFAULT_HANDWRITTEN = Path(__file__).resolve().parent / "code_questions_handwritten.jsonl"
FAMILIES = ("doc-comment", "handwritten")
BUILDER = "bench/build_eval_code.py"


@dataclass(frozen=True, slots=True)
class Source:
    """One pinned package and which of its files are sampled.

    ``root`` is the folder (inside the unpacked package, or inside ``inner``, an
    archive the package ships) that document paths are relative to; ``include``
    are the sub-folders of ``root`` that are sampled.
    """

    language: str
    registry: str  # "deb" or "npm"
    package: str
    version: str
    sha256: str
    licence: str
    root: str
    include: tuple[str, ...] = ("",)
    inner: str = ""

    @property
    def name(self) -> str:
        """The folder name under ``documents/<language>/``."""
        return self.package.lstrip("@").replace("/", "-")

    @property
    def pin(self) -> Pin:
        return Pin(self.registry, self.package, self.version, self.sha256)


_CARGO = "usr/share/cargo/registry"
_GOCODE = "usr/share/gocode/src/github.com"
_GEMS = "usr/share/rubygems-integration/all/gems"
_PHP = "usr/share/php"
# Every input, pinned: the archive's exact version and SHA-256. A rebuild that
# cannot get those bytes stops instead of silently using others. Debian versions
# are those of the bookworm point release (the security archive keeps only its
# newest build); licences are as each package's copyright file or package.json says.
# fmt: off
SOURCES: tuple[Source, ...] = (
    # Rust crate sources, as Debian ships them for its own Rust builds.
    Source("rust", "deb", "librust-semver-dev", "1.0.14-1",
           "bf3719b7aac4b7f16f0d68a7037306dbc1532758fe7a5dea01254e85cecaca8c",
           "MIT or Apache-2.0", f"{_CARGO}/semver-1.0.14", ("src/",)),
    Source("rust", "deb", "librust-itertools-dev", "0.10.3-1",
           "3e13fc328508275c2c84270133f41a300ffb58b9b77001b89373ba7f7ab57fde",
           "MIT or Apache-2.0", f"{_CARGO}/itertools-0.10.3", ("src/",)),
    Source("rust", "deb", "librust-bytes-dev", "1.2.1-1",
           "86fbba5fe9d10f1eeb28944e52cfc8caa75f9a509c3603b70f8107f151744fcc",
           "MIT", f"{_CARGO}/bytes-1.2.1", ("src/",)),
    Source("rust", "deb", "librust-indexmap-dev", "1.9.2-1",
           "691b9efb8df4abdfdb238713c1f66416f31e2c2a33fd15687aae2c4dcb9b5308",
           "Apache-2.0 or MIT", f"{_CARGO}/indexmap-1.9.2", ("src/",)),
    Source("rust", "deb", "librust-anyhow-dev", "1.0.69-1",
           "f877f024d95d8af3c3f62e2cf74e6ba5eb976a3cf27c920bda786cd32029b79d",
           "MIT or Apache-2.0", f"{_CARGO}/anyhow-1.0.69", ("src/",)),
    # Go modules, as Debian ships them under /usr/share/gocode.
    Source("go", "deb", "golang-github-spf13-cobra-dev", "1.6.1-1",
           "4f5d20855133319beef3c5b49d3c21a0406f270bf94fb4b6f4d406b691283cb2",
           "Apache-2.0", f"{_GOCODE}/spf13/cobra"),
    Source("go", "deb", "golang-github-pkg-errors-dev", "0.9.1-2",
           "87227544904795f81d8c660b7854045a1ef78d5c690993bb4a0c43e05104ca64",
           "BSD-2-clause", f"{_GOCODE}/pkg/errors"),
    Source("go", "deb", "golang-github-sirupsen-logrus-dev", "1.9.0-1",
           "51fb87b05452e96be38b97c03d5f997f6ce3a144421f911338d6c4ea2e8aa118",
           "Expat (MIT)", f"{_GOCODE}/sirupsen/logrus"),
    Source("go", "deb", "golang-github-google-go-cmp-dev", "0.5.9-1",
           "b68bd919daa7c1bdf02abfb68894e29e532f19b03b68c8615f50626c48f553b6",
           "BSD-3-clause", f"{_GOCODE}/google/go-cmp"),
    # Python: the standard library of Debian 12's Python 3.11.
    Source("python", "deb", "libpython3.11-stdlib", "3.11.2-6+deb12u8",
           "890b3540dad8a1ccc0deeca025db735bcc82629a76adacbe3b50fcc06ed528ca",
           "PSF-2.0", "usr/lib/python3.11"),
    # Java: the JDK's own sources (lib/src.zip), a few java.base packages.
    Source("java", "deb", "openjdk-17-source", "17.0.19+10-1~deb12u2",
           "2591b37131025f872f057be99467b45f7fa2aed928c8d779208db9c3239e1190",
           "GPL-2 with the Classpath exception", "",
           ("java.base/java/util/", "java.base/java/io/", "java.base/java/time/",
            "java.base/java/nio/file/", "java.net.http/java/net/http/"),
           inner="usr/lib/jvm/openjdk-17/lib/src.zip"),
    # JavaScript: npm packages published as their (JSDoc-commented) sources.
    Source("javascript", "npm", "axios", "1.7.9",
           "634e3ed585d7c8857f00cb7556f79422614e8defd008f8bb34b6018c1faefa0f",
           "MIT", "package", ("lib/",)),
    Source("javascript", "npm", "express", "4.21.2",
           "fc43a91e7dc7affb53c6ad7123a4f35485ed3c45226ae7a3847b7738e783e008",
           "MIT", "package", ("lib/",)),
    Source("javascript", "npm", "ramda", "0.30.1",
           "76a1e5c64d5e46c58067f90fb556f7e803bcc741228312ce8bb88035a2157d9a",
           "MIT", "package", ("src/",)),
    # TypeScript: npm packages whose tarball carries the .ts sources, not only .d.ts.
    Source("typescript", "npm", "rxjs", "7.8.1",
           "c532167725ab7d085123209156c93cef22f2479cb9c8527060f1cd903aa9d149",
           "Apache-2.0", "package", ("src/internal/",)),
    Source("typescript", "npm", "@trpc/server", "10.45.2",
           "7b861ef0a4410e1f988645c29a7680be8c860b459136716e3b91941c0fd1783e",
           "MIT", "package", ("src/",)),
    Source("typescript", "npm", "immer", "10.1.1",
           "946cc79684ad1e080b09d4f2da14247b272aa667f3aaa100f35846148689f08f",
           "MIT", "package", ("src/",)),
    # C: Open vSwitch's library (lib/), from the source tarball Debian ships.
    Source("c", "deb", "openvswitch-source", "3.1.0-2+deb12u1",
           "da7b7d8765447e7359a80b77caf1edc51a465bd7b34c487331d85fdbc0213502",
           "Apache-2.0", "openvswitch", ("lib/",),
           inner="usr/src/openvswitch/openvswitch.tar.gz"),
    # C++: googletest's sources, nlohmann/json's split headers, Abseil's headers.
    Source("cpp", "deb", "googletest", "1.12.1-0.2",
           "927be72067517da503b6538026d451455c9e860f5dbfe237f792543db7d5a928",
           "BSD-3-clause", "usr/src/googletest",
           ("googletest/src/", "googletest/include/", "googlemock/src/",
            "googlemock/include/")),
    Source("cpp", "deb", "nlohmann-json3-dev", "3.11.2-2",
           "ec57940def6b6186c30be0e0ee81d1e58f86d11a54a145b28686a1e3e4aae801",
           "Expat (MIT)", "usr/include/nlohmann"),
    Source("cpp", "deb", "libabsl-dev", "20220623.1-1+deb12u2",
           "24cdc091cd8e88754401f9d18e3be3d354ef96c453934ff138106fcb0245958b",
           "Apache-2.0", "usr/include/absl"),
    # Ruby: gems as Debian ships them.
    Source("ruby", "deb", "ruby-rack", "2.2.22-0+deb12u1",
           "18bab2c3caffa2b1a35cd73d49652d749909e87fd2d5b57dd4a594a02a6ad157",
           "Expat (MIT)", f"{_GEMS}/rack-2.2.22", ("lib/",)),
    Source("ruby", "deb", "ruby-thor", "1.2.1-2",
           "509715d16039ee7336531718e2497d0f81ae125b9ee53f321dd909c2f03fd2e1",
           "Expat (MIT)", f"{_GEMS}/thor-1.2.1", ("lib/",)),
    # PHP: libraries as Debian ships them under /usr/share/php.
    Source("php", "deb", "php-monolog", "2.9.1-1",
           "f8a26688b521e33cf6ef73b75ae5eac0cb026d986a336161456dd37dbb710681",
           "Expat (MIT)", f"{_PHP}/Monolog"),
    Source("php", "deb", "php-guzzlehttp-psr7", "2.4.5-1+deb12u1",
           "62a536ac1e6f7fc47e6f36562e0049da3023b3adeac1be114c9fda2fbc08eb52",
           "Expat (MIT)", f"{_PHP}/GuzzleHttp/Psr7"),
    Source("php", "deb", "php-symfony-console", "5.4.53+dfsg-0+deb12u1",
           "64bd4cbdd9556ee3fd212e444a8df4aa0af00e09c81abb8634eff819a7bab62b",
           "Expat (MIT)", f"{_PHP}/Symfony/Component/Console"),
    # Shell: dracut's bash libraries and module scripts.
    Source("shell", "deb", "dracut-core", "059-4",
           "d0598a5f7b5dcdd1172303a9da4c156a2b6df75fd85a97bc3d228bfafa5f39f9",
           "GPL-2+", "usr/lib/dracut"),
    Source("shell", "deb", "sharness", "1.0.0-1.1",
           "22b6e766cae4b348efda9a7769d729a55af45c861fa0ed47a6135242b7c35023",
           "GPL-2+", "usr/share/sharness"),
    Source("shell", "deb", "virtualenvwrapper", "4.8.4-4",
           "5e21ec8986b63303ff7ba234f35145151486f00be7fb1dae1ed89c8db4e01054",
           "ISC", "usr/share/virtualenvwrapper"),
)
# fmt: on
LANGUAGE_ORDER = (
    "rust",
    "go",
    "python",
    "java",
    "javascript",
    "typescript",
    "c",
    "cpp",
    "ruby",
    "php",
    "shell",
)
EXTENSIONS = {
    "rust": (".rs",),
    "go": (".go",),
    "python": (".py",),
    "java": (".java",),
    "javascript": (".js", ".mjs", ".cjs"),
    "typescript": (".ts",),
    "c": (".c", ".h"),
    "cpp": (".cc", ".cpp", ".hpp", ".h"),
    "ruby": (".rb",),
    "php": (".php",),
    "shell": (".sh",),
}
# Folders that hold tests, examples, benchmarks, vendored or generated code, or
# (for Python) tools rather than library code.
EXCLUDED_PARTS = frozenset(
    {"tests", "testing", "testdata", "__tests__", "spec", "specs", "example", "examples"}
    | {"sample", "samples", "benches", "bench", "fixtures", "vendor", "third_party"}
    | {"thirdparty", "generated", "__pycache__", "idlelib", "lib2to3", "turtledemo"}
    | {"ensurepip", "pydoc_data", "encodings", "site-packages", "dist-packages", "tkinter"}
    | {"msilib", "internal_test", "ci"}
)
_TEST_FILE = re.compile(
    r"(^test_|^tests?\.\w+$|_test\.|_unittest\.|Tests?\.java$|\.test\.|\.spec\.|\.min\.js$"
    r"|\.d\.ts$|^(package|module)-info\.java$)",
    re.I,
)
MIN_FILE_BYTES = 1_000


# ---------------------------------------------------------------- fetching


def excluded(relative: str, language: str) -> bool:
    """Whether a path (below the source root) is a test, example, vendored or tool file."""
    parts = PurePosixPath(relative).parts
    folders = [part.lower() for part in parts[:-1]]
    if any(part in EXCLUDED_PARTS or part.startswith(("test", "config-")) for part in folders):
        return True
    return bool(_TEST_FILE.search(parts[-1])) or not parts[-1].endswith(EXTENSIONS[language])


def source_files(source: Source, tree: Path, max_bytes: int) -> dict[str, bytes]:
    """The candidate files of one source: path below its root -> bytes."""
    found: dict[str, bytes] = {}

    def keep(relative: str, size: int) -> bool:
        return (
            relative.startswith(source.include)
            and MIN_FILE_BYTES <= size <= max_bytes
            and not excluded(relative, source.language)
        )

    if source.inner:
        inner = tree / source.inner
        prefix = f"{source.root}/" if source.root else ""
        if inner.name.endswith(".zip"):
            with zipfile.ZipFile(inner) as zipped:
                for info in zipped.infolist():
                    relative = info.filename.removeprefix(prefix)
                    if info.filename.startswith(prefix) and keep(relative, info.file_size):
                        found[relative] = zipped.read(info)
        else:
            with tarfile.open(inner) as tarred:
                for member in tarred.getmembers():
                    relative = member.name.removeprefix(prefix)
                    if member.isfile() and member.name.startswith(prefix):
                        if keep(relative, member.size):
                            handle = tarred.extractfile(member)
                            assert handle is not None
                            found[relative] = handle.read()
        return dict(sorted(found.items()))
    root = tree / source.root
    if not root.is_dir():
        raise SystemExit(f"error: {source.package} {source.version} has no folder {source.root}")
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if path.is_file() and not path.is_symlink() and keep(relative, path.stat().st_size):
            found[relative] = path.read_bytes()
    return found


def sample_files(
    candidates: Sequence[tuple[Source, Sequence[str]]], limit: int, seed: int
) -> list[tuple[Source, str]]:
    """A seeded sample of one language's files, taken in turn from each of its packages."""
    queues = []
    for source, paths in candidates:
        shuffled = sorted(paths)
        random.Random(f"{seed}:{source.package}").shuffle(shuffled)
        queues.append([(source, path) for path in shuffled])
    taken: list[tuple[Source, str]] = []
    while len(taken) < limit and any(queues):
        for queue in queues:
            if queue and len(taken) < limit:
                taken.append(queue.pop(0))
    return sorted(taken, key=lambda item: (item[0].name, item[1]))


# ---------------------------------------------------------------- definitions


@dataclass(frozen=True, slots=True)
class LanguageSpec:
    """How one language's definitions and doc comments are found in its syntax tree."""

    module: str
    entry: str
    definitions: frozenset[str]
    # Node types whose insides are not searched for definitions (function bodies).
    functions: frozenset[str]
    # Parents that belong to a definition's span and carry its doc comment
    # (decorators, ``export``, ``template<...>``, a one-type ``type`` declaration).
    wrappers: frozenset[str] = frozenset()
    comments: frozenset[str] = frozenset({"comment"})
    # Nodes above a definition that are part of its span but are not its doc (Rust attributes).
    attributes: frozenset[str] = frozenset()
    # "docstring", "rust" (/// and /**), "javadoc" (one /** block), "slash" (// and /*), "hash" (#).
    doc: str = "javadoc"


_JS_FUNCTIONS = frozenset(
    {"function_declaration", "generator_function_declaration", "method_definition"}
    | {"function_expression", "function", "arrow_function", "generator_function"}
)
_JS_DEFINITIONS = frozenset(
    {"function_declaration", "generator_function_declaration", "class_declaration"}
    | {"method_definition", "lexical_declaration", "variable_declaration", "expression_statement"}
)
_C_DEFINITIONS = frozenset(
    {"function_definition", "struct_specifier", "union_specifier", "enum_specifier"}
)
SPECS: dict[str, LanguageSpec] = {
    "rust": LanguageSpec(
        "tree_sitter_rust",
        "language",
        frozenset({"function_item", "struct_item", "enum_item", "union_item", "trait_item"})
        | frozenset({"impl_item", "type_item", "macro_definition", "mod_item"}),
        frozenset({"function_item", "closure_expression"}),
        comments=frozenset({"line_comment", "block_comment"}),
        attributes=frozenset({"attribute_item"}),
        doc="rust",
    ),
    "go": LanguageSpec(
        "tree_sitter_go",
        "language",
        frozenset({"function_declaration", "method_declaration", "type_spec"}),
        frozenset({"function_declaration", "method_declaration", "func_literal"}),
        wrappers=frozenset({"type_declaration"}),
        doc="slash",
    ),
    "python": LanguageSpec(
        "tree_sitter_python",
        "language",
        frozenset({"function_definition", "class_definition"}),
        frozenset({"function_definition", "lambda"}),
        wrappers=frozenset({"decorated_definition"}),
        doc="docstring",
    ),
    "java": LanguageSpec(
        "tree_sitter_java",
        "language",
        frozenset({"class_declaration", "interface_declaration", "enum_declaration"})
        | frozenset({"record_declaration", "annotation_type_declaration"})
        | frozenset({"method_declaration", "constructor_declaration"}),
        frozenset({"method_declaration", "constructor_declaration", "lambda_expression"}),
        comments=frozenset({"block_comment", "line_comment"}),
    ),
    "javascript": LanguageSpec(
        "tree_sitter_javascript",
        "language",
        _JS_DEFINITIONS,
        _JS_FUNCTIONS,
        wrappers=frozenset({"export_statement"}),
    ),
    "typescript": LanguageSpec(
        "tree_sitter_typescript",
        "language_typescript",
        _JS_DEFINITIONS
        | frozenset({"interface_declaration", "type_alias_declaration", "enum_declaration"})
        | frozenset({"abstract_class_declaration"}),
        _JS_FUNCTIONS,
        wrappers=frozenset({"export_statement"}),
    ),
    "c": LanguageSpec(
        "tree_sitter_c",
        "language",
        _C_DEFINITIONS,
        frozenset({"function_definition"}),
        wrappers=frozenset({"type_definition", "declaration"}),
        doc="slash",
    ),
    "cpp": LanguageSpec(
        "tree_sitter_cpp",
        "language",
        _C_DEFINITIONS | frozenset({"class_specifier"}),
        frozenset({"function_definition", "lambda_expression"}),
        wrappers=frozenset({"type_definition", "declaration", "template_declaration"})
        | frozenset({"friend_declaration", "field_declaration"}),
        doc="slash",
    ),
    "ruby": LanguageSpec(
        "tree_sitter_ruby",
        "language",
        frozenset({"method", "singleton_method", "class", "module"}),
        frozenset({"method", "singleton_method", "lambda", "block", "do_block"}),
        doc="hash",
    ),
    "php": LanguageSpec(
        "tree_sitter_php",
        "language_php",
        frozenset({"function_definition", "method_declaration", "class_declaration"})
        | frozenset({"interface_declaration", "trait_declaration", "enum_declaration"}),
        frozenset({"function_definition", "method_declaration", "anonymous_function"})
        | frozenset({"arrow_function"}),
    ),
    "shell": LanguageSpec(
        "tree_sitter_bash",
        "language",
        frozenset({"function_definition"}),
        frozenset({"function_definition"}),
        doc="hash",
    ),
}
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


def _line_of(source: bytes, offset: int) -> int:
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
    name_line = _line_of(source, at)
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


# ---------------------------------------------------------------- doc comments -> questions

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


def _name_path(name: str) -> re.Pattern[str]:
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
        found = _name_path(name).match(stripped)
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
        pattern = _name_path(name)
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
    if kernel and any(_name_path(n).match(paragraph[0].strip()) for n in names):
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
    if any(_name_path(name).search(hidden) for name in names):
        return None
    return hidden


# ---------------------------------------------------------------- questions


@dataclass(frozen=True, slots=True)
class CodeQuestion:
    """One line of questions.jsonl, with the answer's code (no doc comment) for the report."""

    id: str
    question: str
    document: str
    answer: str
    kind: str  # the language
    family: str
    code: str = field(repr=False, default="")


@dataclass(frozen=True, slots=True)
class Document:
    """A sampled file: where it comes from and where it goes under ``documents/``."""

    source: Source
    relative: str
    content: bytes

    @property
    def path(self) -> str:
        """Its path below ``documents/``."""
        return f"{self.source.language}/{self.source.name}/{self.relative}"


def doc_comment_questions(document: str, language: str, source: bytes) -> list[CodeQuestion]:
    """Every doc-comment question one file offers, before the cross-file dedup and the pick."""
    found = find_definitions(language, source)
    headers = Counter(item.header for item in found)
    questions = []
    for item in found:
        # A header written twice (overloads with one signature, platform variants) is ambiguous.
        if not item.doc or item.nodoc or not item.header or headers[item.header] > 1:
            continue
        code = item.code(source)
        if sum(1 for line in code.splitlines() if line.strip()) < MIN_CODE_LINES:
            continue
        text = summary(item.doc, item.hidden, drop_leading=language == "go")
        if text is None:
            continue
        ident = f"doc-comment:{document}:{item.qualname}:{item.line}"
        questions.append(
            CodeQuestion(ident, text, document, item.span(source), language, "doc-comment", code)
        )
    return questions


def deduplicate(questions: Sequence[CodeQuestion]) -> list[CodeQuestion]:
    """Drop every question whose wording (as word tokens) is asked of more than one definition."""
    counts = Counter(tuple(words(q.question)) for q in questions)
    return [q for q in questions if counts[tuple(words(q.question))] == 1]


def choose(
    questions: Sequence[CodeQuestion], limit: int, per_document: int, seed: int
) -> list[CodeQuestion]:
    """Per language, a seeded pick of at most ``limit``, at most ``per_document`` per file."""
    by_language: dict[str, list[CodeQuestion]] = defaultdict(list)
    for q in sorted(questions, key=lambda q: q.id):
        by_language[q.kind].append(q)
    taken: list[CodeQuestion] = []
    for language in sorted(by_language):
        pool = by_language[language]
        random.Random(f"{seed}:{language}").shuffle(pool)
        per_file: Counter[str] = Counter()
        chosen = 0
        for q in pool:
            if chosen < limit and per_file[q.document] < per_document:
                per_file[q.document] += 1
                taken.append(q)
                chosen += 1
    return sorted(taken, key=lambda q: q.id)


@dataclass(frozen=True, slots=True)
class Handwritten:
    """One line of bench/code_questions_handwritten.jsonl."""

    id: str
    question: str
    language: str
    document: str
    definition: str
    line: int


def read_handwritten(path: Path) -> list[Handwritten]:
    """The hand-written questions, every field checked."""
    found = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            item = Handwritten(
                id=str(record["id"]),
                question=str(record["question"]),
                language=str(record["language"]),
                document=str(record["document"]),
                definition=str(record["definition"]),
                line=int(record["line"]),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise SystemExit(
                f"error: {path}:{number}: not a hand-written question ({exc})"
            ) from exc
        if item.language not in SPECS or not item.document.startswith(f"{item.language}/"):
            raise SystemExit(f"error: {path}:{number}: language and document do not agree")
        found.append(item)
    idents = Counter(item.id for item in found)
    if duplicated := sorted(ident for ident, count in idents.items() if count > 1):
        raise SystemExit(f"error: {path}: duplicate ids {', '.join(duplicated)}")
    return found


def resolve(item: Handwritten, source: bytes) -> Definition:
    """The definition a hand-written question points at, by name and line; fails loudly."""
    matches = []
    for found in find_definitions(item.language, source):
        if item.definition not in {found.name, found.qualname}:
            continue
        if _line_of(source, found.start) <= item.line <= found.name_line:
            matches.append(found)
    if len(matches) != 1:
        lines = sorted(
            f"{f.qualname}@{f.line}"
            for f in find_definitions(item.language, source)
            if f.name == item.definition
        )
        raise SystemExit(
            f"error: hand-written question {item.id}: {len(matches)} definitions named "
            f"{item.definition!r} span line {item.line} of {item.document} "
            f"(definitions of that name: {', '.join(lines) or 'none'})"
        )
    return matches[0]


def handwritten_questions(
    items: Sequence[Handwritten], documents: dict[str, Document]
) -> list[CodeQuestion]:
    """The hand-written questions resolved to their definitions' spans."""
    made = []
    for item in items:
        document = documents.get(item.document)
        if document is None:
            raise SystemExit(f"error: hand-written question {item.id}: no document {item.document}")
        found = resolve(item, document.content)
        if _name_path(found.name).search(item.question):
            raise SystemExit(f"error: hand-written question {item.id} names {found.name!r}")
        made.append(
            CodeQuestion(
                f"handwritten:{item.id}",
                item.question,
                item.document,
                found.span(document.content),
                item.language,
                "handwritten",
                found.code(document.content),
            )
        )
    return made


# ---------------------------------------------------------------- building


def _utf8(content: bytes) -> bool:
    try:
        content.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def gather(
    cache: Path, max_bytes: int, files_per_language: int, seed: int, forced: set[str]
) -> tuple[list[Document], dict[str, str]]:
    """Fetch every pinned source, sample each language's files; the documents and archive hashes.

    Files named in ``forced`` (those the hand-written questions point at) are always kept.
    """
    cache = cache.resolve()
    archives: dict[str, str] = {}
    documents: list[Document] = []
    for language in LANGUAGE_ORDER:
        candidates: list[tuple[Source, list[str]]] = []
        contents: dict[tuple[str, str], bytes] = {}
        for source in (s for s in SOURCES if s.language == language):
            archive = fetch(source.pin, cache)
            archives[source.package] = archive.name
            files = source_files(source, unpack(source.pin, archive, cache), max_bytes)
            files = {path: data for path, data in files.items() if _utf8(data)}
            if not files:
                raise SystemExit(f"error: {source.package} offers no {language} files to sample")
            candidates.append((source, sorted(files)))
            contents.update({(source.name, path): data for path, data in files.items()})
        picked = sample_files(candidates, files_per_language, seed)
        chosen = {f"{language}/{s.name}/{path}": (s, path) for s, path in picked}
        for source, paths in candidates:
            for path in paths:
                name = f"{language}/{source.name}/{path}"
                if name in forced:
                    chosen.setdefault(name, (source, path))
        for _, (source, path) in sorted(chosen.items()):
            documents.append(Document(source, path, contents[(source.name, path)]))
    known = {document.path for document in documents}
    if missing := sorted(forced - known):
        raise SystemExit(
            "error: hand-written questions name files that are not candidates (too large, "
            f"excluded, or not in SOURCES): {', '.join(missing)}"
        )
    return documents, archives


def write_dataset(
    out: Path,
    documents: Sequence[Document],
    questions: Sequence[CodeQuestion],
    meta: dict[str, Any],
) -> int:
    """Replace ``out`` with the dataset; the number of bytes written.

    A folder that holds files but no ``dataset.json`` is refused rather than deleted.
    """
    lines = [
        question_line(
            QAQuestion(q.id, q.question, q.document, q.answer, q.kind),
            family=q.family,
            match="overlap",
        )
        for q in questions
    ]
    return write_dataset_folder(out, ((d.path, d.content) for d in documents), meta, lines)


def report(
    documents: Sequence[Document],
    questions: Sequence[CodeQuestion],
    count_tokens: Callable[[str], int],
    chunk_tokens: int = 512,
) -> list[str]:
    """The summary table: per language and family, files, questions, answer sizes, overlap."""
    files: Counter[str] = Counter(d.source.language for d in documents)
    size: Counter[str] = Counter()
    chunks: Counter[str] = Counter()
    for document in documents:
        in_document = count_tokens(document.content.decode("utf-8"))
        size[document.source.language] += len(document.content)
        chunks[document.source.language] += -(-in_document // chunk_tokens)
    header = (
        f"{'language':<11}{'family':<12}{'files':>6}{'KB':>6}{'~chunks':>8}{'questions':>10}"
        f"{'dev':>5}{'test':>5}{'lines':>7}{'tokens':>8}{'>512':>6}{'overlap':>9}{'code-only':>10}"
    )
    table = [header, "-" * len(header)]
    groups = [(lang, fam) for fam in FAMILIES for lang in LANGUAGE_ORDER] + [
        ("all", fam) for fam in FAMILIES
    ]
    for language, family in groups:
        chosen = [q for q in questions if q.family == family and language in {"all", q.kind}]
        if not chosen:
            continue
        in_files = sum(files.values()) if language == "all" else files[language]
        kb = (sum(size.values()) if language == "all" else size[language]) // 1000
        est = sum(chunks.values()) if language == "all" else chunks[language]
        splits = Counter(split_of(q.id) for q in chosen)
        lines = mean(len(q.answer.splitlines()) for q in chosen)
        tokens = [count_tokens(q.answer) for q in chosen]
        overlaps = [o for q in chosen if (o := word_overlap(q.question, q.answer)) is not None]
        code_overlaps = [o for q in chosen if (o := word_overlap(q.question, q.code)) is not None]
        table.append(
            f"{language:<11}{family:<12}{in_files:>6}{kb:>6}{est:>8}{len(chosen):>10}"
            f"{splits['dev']:>5}{splits['test']:>5}{lines:>7.1f}{mean(tokens):>8.0f}"
            f"{sum(t > chunk_tokens for t in tokens):>6}{mean(overlaps or [0]):>9.2f}"
            f"{mean(code_overlaps or [0]):>10.2f}"
        )
    return table


def build(args: argparse.Namespace) -> int:
    """Fetch, sample, make and pick the questions, write the dataset, print a summary."""
    started = time.monotonic()
    handwritten_path: Path = args.handwritten
    handwritten = read_handwritten(handwritten_path) if handwritten_path.is_file() else []
    if not handwritten:
        print(f"warning: no hand-written questions in {handwritten_path}", file=sys.stderr)
    documents, archives = gather(
        args.cache,
        args.max_bytes,
        args.files_per_language,
        args.seed,
        {item.document for item in handwritten},
    )
    by_path = {document.path: document for document in documents}
    offered: list[CodeQuestion] = []
    for document in documents:
        offered += doc_comment_questions(document.path, document.source.language, document.content)
    unique = deduplicate(offered)
    questions = choose(unique, args.doc_questions, args.max_per_document, args.seed)
    questions += handwritten_questions(handwritten, by_path)
    questions.sort(key=lambda q: q.id)
    meta = {
        "name": "code",
        "format": "qa-spans",
        "description": (
            f"{len(documents)} source files in {len(LANGUAGE_ORDER)} languages from pinned "
            f"Debian and npm packages; {len(questions)} questions (doc-comment, handwritten) "
            "answered by a definition's whole span (doc comment and code), judged by word "
            "8-gram overlap; split dev/test by SHA-1 of the id"
        ),
        "source": "pinned Debian and npm packages, listed under sources",
        "builder": BUILDER,
        "seed": args.seed,
        "options": {
            "files_per_language": args.files_per_language,
            "max_bytes": args.max_bytes,
            "doc_questions": args.doc_questions,
            "max_per_document": args.max_per_document,
        },
        "sources": [
            {
                "language": s.language,
                "registry": s.registry,
                "package": s.package,
                "version": s.version,
                "archive": archives[s.package],
                "sha256": s.sha256,
                "licence": s.licence,
            }
            for s in SOURCES
        ],
        "handwritten": {
            "path": "bench/code_questions_handwritten.jsonl",
            "sha256": sha256_of(handwritten_path.read_bytes()) if handwritten else None,
        },
        "documents": {
            d.path: sha256_of(d.content) for d in sorted(documents, key=lambda d: d.path)
        },
    }
    size = write_dataset(args.out, documents, questions, meta)
    encoding = load_encoding()
    table = report(documents, questions, lambda text: len(encoding.encode_ordinary(text)))
    print(
        f"packages: {len(SOURCES)}  files: {len(documents)}  doc-comment candidates: "
        f"{len(offered)}, after dedup: {len(unique)}, kept: "
        f"{sum(q.family == 'doc-comment' for q in questions)}; hand-written: {len(handwritten)}"
    )
    print("\n".join(table))
    print(f"wrote {args.out} ({size:,} bytes) in {time.monotonic() - started:.0f} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--cache",
        type=Path,
        default=DEFAULT_CACHE,
        help=f"where archives are downloaded and unpacked (default {DEFAULT_CACHE})",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help=f"dataset directory, replaced (default {DEFAULT_OUT})",
    )
    parser.add_argument(
        "--files-per-language",
        type=positive_int,
        default=40,
        help="files sampled per language, in turn from its packages (default 40)",
    )
    parser.add_argument(
        "--max-bytes", type=positive_int, default=60_000, help="skip larger files (default 60000)"
    )
    parser.add_argument(
        "--doc-questions",
        type=positive_int,
        default=60,
        help="doc-comment questions kept per language (default 60)",
    )
    parser.add_argument(
        "--max-per-document",
        type=positive_int,
        default=8,
        help="doc-comment questions from one file (default 8)",
    )
    parser.add_argument(
        "--handwritten",
        type=Path,
        default=DEFAULT_HANDWRITTEN,
        help="hand-written questions (default bench/code_questions_handwritten.jsonl)",
    )
    parser.add_argument("--seed", type=int, default=11)
    return build(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
