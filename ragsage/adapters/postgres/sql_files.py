"""The schema's SQL files: read from the package, placeholders filled, statements split.

Placeholders are ``{{name}}`` and stand only for configured values, each
validated before it is written into SQL (see ``sql/README.md``).  Statements
are split at semicolons outside quotes, dollar-quoted bodies and comments, so
a function body keeps its own semicolons.
"""

from __future__ import annotations

import re
from importlib.resources import files
from importlib.resources.abc import Traversable

from ragsage.adapters.postgres.config import PostgresConfig, safe_identifier, safe_setting_name

_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
_DOLLAR_QUOTE = re.compile(r"\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$")
_REQUIRES = re.compile(r"^-- requires: (\d+)$", re.M)
_COMMENTS = re.compile(r"--[^\n]*|/\*.*?\*/", re.S)


def sql_root() -> Traversable:
    return files("ragsage.adapters.postgres").joinpath("sql")


def sql_files(folder: str) -> list[Traversable]:
    """The ``.sql`` files of a folder under ``sql/``, in name order."""
    found = [f for f in sql_root().joinpath(folder).iterdir() if f.name.endswith(".sql")]
    return sorted(found, key=lambda f: f.name)


def config_values(config: PostgresConfig) -> dict[str, str]:
    """The configured values the SQL files may name, each checked before use."""
    return {
        "tsconfig": safe_identifier(config.text_search_config),
        "app_role": safe_identifier(config.app_role),
        "isolation_setting": safe_setting_name(config.isolation_variable),
        "principals_setting": safe_setting_name(config.principals_variable),
        "hnsw_m": str(int(config.hnsw_m)),
        "hnsw_ef_construction": str(int(config.hnsw_ef_construction)),
        "hnsw_type": safe_identifier(config.hnsw_type),
        "embedding_dim": str(int(config.embedding_dim)),
    }


def render(sql: str, values: dict[str, str], *, source: str) -> str:
    """``sql`` with every placeholder replaced; a placeholder without a value is an error."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            raise ValueError(f"{source}: no value for the placeholder {{{{{name}}}}}")
        return values[name]

    rendered = _PLACEHOLDER.sub(value, sql)
    if "{{" in rendered or "}}" in rendered:
        raise ValueError(f"{source}: a placeholder is not written {{{{name}}}}")
    return rendered


def split_statements(sql: str) -> list[str]:
    """The statements of ``sql``, without the comment-only pieces between them.

    Semicolons count only outside quotes (``'...'``, ``E'...'`` with its
    backslash escapes, ``"..."``), dollar-quoted bodies and comments (``--``
    to the end of the line, ``/* ... */`` nested as Postgres nests them).
    """
    statements: list[str] = []
    start = position = 0
    end = len(sql)
    while position < end:
        char = sql[position]
        if sql.startswith("--", position):
            newline = sql.find("\n", position)
            position = end if newline < 0 else newline + 1
        elif sql.startswith("/*", position):
            position = _after_block_comment(sql, position)
        elif char == "'":
            escapes = position > 0 and sql[position - 1] in "eE" and not _in_word(sql, position - 1)
            position = _after_quoted(sql, position, char, backslash=escapes)
        elif char == '"':
            position = _after_quoted(sql, position, char, backslash=False)
        elif (
            char == "$"
            and not _in_word(sql, position)
            and (tag := _DOLLAR_QUOTE.match(sql, position))
        ):
            closing = sql.find(tag.group(0), tag.end())
            if closing < 0:
                raise ValueError(f"unterminated dollar quote {tag.group(0)}")
            position = closing + len(tag.group(0))
        else:
            if char == ";":
                statements.append(sql[start:position])
                start = position + 1
            position += 1
    statements.append(sql[start:])
    return [_without_leading_comments(s) for s in statements if _COMMENTS.sub("", s).strip()]


def _in_word(sql: str, position: int) -> bool:
    """Whether the character before ``position`` continues an identifier (``x$a$``, ``NE'``)."""
    return position > 0 and (sql[position - 1].isalnum() or sql[position - 1] in "_$")


def _after_block_comment(sql: str, opening: int) -> int:
    depth, position = 0, opening
    while position < len(sql):
        if sql.startswith("/*", position):
            depth, position = depth + 1, position + 2
        elif sql.startswith("*/", position):
            depth, position = depth - 1, position + 2
            if depth == 0:
                return position
        else:
            position += 1
    raise ValueError("unterminated /* comment")


def _without_leading_comments(statement: str) -> str:
    # The comments above a statement explain the file; the server needs none of them.
    lines = statement.strip().split("\n")
    while lines and (not lines[0].strip() or lines[0].lstrip().startswith("--")):
        lines.pop(0)
    return "\n".join(lines).strip()


def _after_quoted(sql: str, opening: int, quote: str, *, backslash: bool) -> int:
    position = opening + 1
    while True:
        closing = sql.find(quote, position)
        if closing < 0:
            raise ValueError(f"unterminated {quote} quote")
        if backslash and _escaped(sql, closing):
            position = closing + 1
            continue
        if sql.startswith(quote * 2, closing):
            position = closing + 2  # a doubled quote stands for itself
            continue
        return closing + 1


def _escaped(sql: str, position: int) -> bool:
    backslashes = 0
    while position - backslashes - 1 >= 0 and sql[position - backslashes - 1] == "\\":
        backslashes += 1
    return backslashes % 2 == 1


def file_statements(file: Traversable, values: dict[str, str]) -> tuple[str, ...]:
    """One SQL file's statements with the placeholders filled."""
    return tuple(split_statements(render(file.read_text("utf-8"), values, source=file.name)))


def requirement(file: Traversable) -> int:
    """The schema version a function file needs (its ``-- requires: N`` line)."""
    found = _REQUIRES.search(file.read_text("utf-8"))
    if found is None:
        raise ValueError(f"{file.name} does not say which version it requires")
    return int(found.group(1))
