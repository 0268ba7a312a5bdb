"""The programming languages ragsage reads along their definitions, by name and extension.

This module is plain data: it imports no grammar, so routing a file costs
nothing.  Each language names the Python module and function that return its
tree-sitter grammar (one small MIT-licensed wheel per language, the ``code``
extra); :mod:`ragsage.adapters.parsing.readers.source` loads it on first use.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

# How source files may be read: along their definitions, or as one block cut
# by lines (the plain reading, kept to measure the other against).
CODE_CHUNKING = ("definitions", "lines")
# Tokens above which a definition's code is cut into windows of about equal
# size (0: never), under the definitions reading: the lines that answer a
# question about a long function come back without the rest of it.
CODE_WINDOW = 0


@dataclass(frozen=True, slots=True)
class Language:
    """A source language: its id, how people name it, its files and its grammar."""

    name: str
    label: str
    extensions: tuple[str, ...]
    grammar_module: str
    grammar_function: str = "language"

    @property
    def fence(self) -> str:
        """The info string of the fenced blocks its code is written in."""
        return self.name


LANGUAGES: tuple[Language, ...] = (
    Language("python", "Python", (".py", ".pyi"), "tree_sitter_python"),
    Language("javascript", "JavaScript", (".js", ".mjs", ".cjs", ".jsx"), "tree_sitter_javascript"),
    Language(
        "typescript",
        "TypeScript",
        (".ts", ".mts", ".cts"),
        "tree_sitter_typescript",
        "language_typescript",
    ),
    Language("tsx", "TSX", (".tsx",), "tree_sitter_typescript", "language_tsx"),
    Language("go", "Go", (".go",), "tree_sitter_go"),
    Language("rust", "Rust", (".rs",), "tree_sitter_rust"),
    Language("java", "Java", (".java",), "tree_sitter_java"),
    Language("c", "C", (".c", ".h"), "tree_sitter_c"),
    Language(
        "cpp",
        "C++",
        (".cc", ".cpp", ".cxx", ".c++", ".hh", ".hpp", ".hxx", ".h++", ".ipp"),
        "tree_sitter_cpp",
    ),
    Language("csharp", "C#", (".cs",), "tree_sitter_c_sharp"),
    Language("ruby", "Ruby", (".rb", ".rake", ".gemspec"), "tree_sitter_ruby"),
    Language("php", "PHP", (".php",), "tree_sitter_php", "language_php"),
    Language("kotlin", "Kotlin", (".kt", ".kts"), "tree_sitter_kotlin"),
    Language("swift", "Swift", (".swift",), "tree_sitter_swift"),
    Language("bash", "Shell", (".sh", ".bash", ".zsh", ".ksh"), "tree_sitter_bash"),
)

# Media types clients send for source files (several per language in the wild).
MEDIA_TYPES: dict[str, str] = {
    "text/x-python": "python",
    "text/x-script.python": "python",
    "application/x-python-code": "python",
    "text/javascript": "javascript",
    "application/javascript": "javascript",
    "application/x-javascript": "javascript",
    "text/typescript": "typescript",
    "application/typescript": "typescript",
    "application/x-typescript": "typescript",
    "text/x-go": "go",
    "text/rust": "rust",
    "text/x-rust": "rust",
    "text/x-java": "java",
    "text/x-java-source": "java",
    "text/x-csrc": "c",
    "text/x-chdr": "c",
    "text/x-c": "c",
    "text/x-c++src": "cpp",
    "text/x-c++hdr": "cpp",
    "text/x-csharp": "csharp",
    "text/x-ruby": "ruby",
    "application/x-ruby": "ruby",
    "text/x-php": "php",
    "application/x-php": "php",
    "application/x-httpd-php": "php",
    "text/x-kotlin": "kotlin",
    "text/x-swift": "swift",
    "text/x-sh": "bash",
    "text/x-shellscript": "bash",
    "application/x-sh": "bash",
    "application/x-shellscript": "bash",
}

BY_NAME: dict[str, Language] = {language.name: language for language in LANGUAGES}
BY_EXTENSION: dict[str, Language] = {
    extension: language for language in LANGUAGES for extension in language.extensions
}


def language_for_filename(filename: str) -> Language | None:
    """The language a file's extension names, or ``None``."""
    return BY_EXTENSION.get(PurePosixPath(filename.replace("\\", "/").lower()).suffix)
