"""Sharding readiness: what a distributed Postgres (Citus, by ``namespace``) needs of ragsage.

Citus is not installable on the development machines, so readiness is a
lint over the schema the migrations build and the SQL the code sends.  Four
rules, each a test, and beside each a test that its checker catches a
deliberate violation:

1. every tenant table's primary key and unique indexes lead with ``namespace``:
   a distributed table can enforce a unique index only on one shard, so the
   index must hold the distribution column (reference tables are listed);
2. no row-level-security policy holds a subquery: Citus refuses such a policy;
3. the session's namespace and principals are set by ``SET LOCAL``: Citus
   forwards only those commands to the nodes that hold the rows, where the
   policies read them (``set_config(..., true)`` stays on the coordinator);
4. every statement on a tenant table names its namespace, so a distributed
   planner can route it to the one shard group holding the tenant (under
   Row-Level Security alone the value hides in a ``current_setting`` call).

A tenant table is read from the catalogue, never listed by hand: every
``ragsage_*`` base table with a ``namespace`` column.  Each allowance below says
why it is one.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

import ragsage
from ragsage.adapters.postgres import Database, PostgresConfig
from ragsage.adapters.postgres.isolation import Statement, isolation_preamble
from ragsage.core.scopes import Scope

ROOT = Path(ragsage.__file__).resolve().parent.parent
CODE = ("ragsage", "worker", "api")
SQL_DIR = ROOT / "ragsage" / "adapters" / "postgres" / "sql"

# ------------------------------------------------------------------ the catalogue

_TENANT_TABLES = """
SELECT c.relname FROM pg_class c
JOIN pg_namespace s ON s.oid = c.relnamespace AND s.nspname = current_schema()
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'namespace' AND NOT a.attisdropped
WHERE c.relkind IN ('r', 'p') AND c.relname LIKE 'ragsage\\_%' ORDER BY 1
"""
# Every unique index (primary keys and unique constraints are enforced by one)
# and exclusion constraint, with its key columns in order (an expression: NULL).
_KEYS = """
SELECT t.relname, i.relname, x.indisprimary,
    (SELECT array_agg(a.attname ORDER BY k.n) FROM unnest(x.indkey[0:x.indnkeyatts - 1])
        WITH ORDINALITY AS k(attnum, n)
        LEFT JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum)
FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
JOIN pg_namespace s ON s.oid = t.relnamespace AND s.nspname = current_schema()
WHERE (x.indisunique OR x.indisexclusion) AND t.relname LIKE 'ragsage\\_%' ORDER BY 1, 2
"""
# Every foreign key, with its columns and the columns they reference, in order.
_FOREIGN_KEYS = """
SELECT f.conname, t.relname, r.relname,
    (SELECT array_agg(a.attname ORDER BY k.n) FROM unnest(f.conkey) WITH ORDINALITY AS k(attnum, n)
        JOIN pg_attribute a ON a.attrelid = f.conrelid AND a.attnum = k.attnum),
    (SELECT array_agg(a.attname ORDER BY k.n) FROM unnest(f.confkey) WITH ORDINALITY AS k(attnum, n)
        JOIN pg_attribute a ON a.attrelid = f.confrelid AND a.attnum = k.attnum)
FROM pg_constraint f JOIN pg_class t ON t.oid = f.conrelid JOIN pg_class r ON r.oid = f.confrelid
JOIN pg_namespace s ON s.oid = t.relnamespace AND s.nspname = current_schema()
WHERE f.contype = 'f' AND t.relname LIKE 'ragsage\\_%' ORDER BY 1
"""
_POLICIES = """
SELECT tablename, policyname, qual, with_check FROM pg_policies
WHERE schemaname = current_schema() ORDER BY 1, 2
"""


async def tenant_tables(connection: AsyncConnection) -> frozenset[str]:
    return frozenset(await connection.scalars(text(_TENANT_TABLES)))


@dataclass(frozen=True, slots=True)
class Key:
    """A unique index (or exclusion constraint) of a table, with its key columns."""

    table: str
    index: str
    primary: bool
    columns: tuple[str | None, ...]


async def keys(connection: AsyncConnection) -> list[Key]:
    rows = await connection.execute(text(_KEYS))
    return [Key(r[0], r[1], bool(r[2]), tuple(r[3] or ())) for r in rows]


@dataclass(frozen=True, slots=True)
class ForeignKey:
    name: str
    table: str
    referenced: str
    columns: tuple[str, ...]
    referenced_columns: tuple[str, ...]


async def foreign_keys(connection: AsyncConnection) -> list[ForeignKey]:
    rows = await connection.execute(text(_FOREIGN_KEYS))
    return [ForeignKey(r[0], r[1], r[2], tuple(r[3]), tuple(r[4])) for r in rows]


@dataclass(frozen=True, slots=True)
class Policy:
    table: str
    name: str
    using: str | None
    check: str | None


async def policies(connection: AsyncConnection) -> list[Policy]:
    return [Policy(*row) for row in await connection.execute(text(_POLICIES))]


# ------------------------------------------------------------ rule 1: keys lead with namespace

# Unique indexes of tenant tables that do not lead with namespace, by index name.
ALLOWED_KEYS = {
    "ragsage_api_keys_hash": (
        "the key lookup by hash (migration 3, functions/find_api_key.sql): a request "
        "presents only its key, so the key's row is found before any namespace is "
        "known, and the hash must be unique across namespaces.  The key table is "
        "small and rarely written: on Citus it is a reference table, copied to "
        "every node, not distributed by namespace."
    ),
}


def unled_keys(found: Iterable[Key], tenants: Collection[str]) -> list[str]:
    """Each key of a tenant table whose first column is not ``namespace``."""
    return [
        f"{key.index} on {key.table} ({', '.join(c or '<expression>' for c in key.columns)})"
        for key in found
        if key.table in tenants and (not key.columns or key.columns[0] != "namespace")
    ]


def unpaired_foreign_keys(found: Iterable[ForeignKey], tenants: Collection[str]) -> list[str]:
    """Each foreign key between tenant tables that does not match namespace to namespace.

    Citus accepts a foreign key between distributed tables only when it holds
    the distribution column on both sides: the rows it joins share a shard.
    """
    return [
        f"{key.name} on {key.table} ({', '.join(key.columns)}) -> {key.referenced}"
        for key in found
        if key.table in tenants
        and key.referenced in tenants
        and ("namespace", "namespace") not in zip(key.columns, key.referenced_columns, strict=True)
    ]


def disallowed(violations: Iterable[str], allowed: Collection[str]) -> list[str]:
    return [v for v in violations if v.split(" ", 1)[0] not in allowed]


async def test_every_tenant_key_leads_with_namespace(db: Database) -> None:
    async with db.owner_connection() as connection:
        tenants = await tenant_tables(connection)
        found = await keys(connection)
        references = await foreign_keys(connection)
    # The catalogue, not a list: the tables every migration so far made.
    assert {"ragsage_chunks", "ragsage_jobs", "ragsage_webhook_events"} <= tenants
    assert "ragsage_schema" not in tenants
    assert {key.table for key in found if key.primary} >= tenants  # each has a primary key
    violations = unled_keys(found, tenants)
    assert disallowed(violations, ALLOWED_KEYS) == []
    # Each allowance still names a key that needs it.
    assert sorted(v.split(" ", 1)[0] for v in violations) == sorted(ALLOWED_KEYS)
    # A chunk's document, a delivery's endpoint and event: on the same shard.
    assert {(k.table, k.referenced) for k in references} >= {
        ("ragsage_chunks", "ragsage_documents"),
        ("ragsage_webhook_deliveries", "ragsage_webhooks"),
    }
    assert unpaired_foreign_keys(references, tenants) == []


async def test_a_key_not_led_by_namespace_is_caught(db: Database) -> None:
    async with db.owner_connection() as connection:
        await connection.execute(
            text(
                "CREATE TABLE ragsage_shard_probe (id text PRIMARY KEY, namespace text NOT NULL, "
                "label text, UNIQUE (namespace, label))"
            )
        )
        await connection.execute(
            text(
                "CREATE UNIQUE INDEX ragsage_shard_probe_lower "
                "ON ragsage_shard_probe (lower(label))"
            )
        )
        await connection.execute(
            text(
                "CREATE TABLE ragsage_shard_probe_part (namespace text NOT NULL, "
                "probe text REFERENCES ragsage_shard_probe (id), PRIMARY KEY (namespace, probe), "
                "FOREIGN KEY (namespace, probe) REFERENCES ragsage_documents (namespace, id))"
            )
        )
        tenants = await tenant_tables(connection)
        found = await keys(connection)
        references = await foreign_keys(connection)
        await connection.rollback()
    assert "ragsage_shard_probe" in tenants  # found by its namespace column alone
    assert disallowed(unled_keys(found, tenants), ALLOWED_KEYS) == [
        "ragsage_shard_probe_lower on ragsage_shard_probe (<expression>)",
        "ragsage_shard_probe_pkey on ragsage_shard_probe (id)",
    ]
    assert unpaired_foreign_keys(references, tenants) == [
        "ragsage_shard_probe_part_probe_fkey on ragsage_shard_probe_part (probe) "
        "-> ragsage_shard_probe"
    ]


# --------------------------------------------------------------- rule 2: no policy subquery

_LITERAL = re.compile(r"'(?:[^']|'')*'")


def subquery_policies(found: Iterable[Policy]) -> list[str]:
    """Each policy whose USING or WITH CHECK expression holds a ``SELECT``."""
    return [
        f"{policy.name} on {policy.table}"
        for policy in found
        if any(
            re.search(r"\bSELECT\b", _LITERAL.sub("''", expression), re.I)
            for expression in (policy.using, policy.check)
            if expression
        )
    ]


async def test_no_policy_uses_a_subquery(db: Database) -> None:
    async with db.owner_connection() as connection:
        found = await policies(connection)
    assert {p.table for p in found} >= {"ragsage_chunks", "ragsage_documents", "ragsage_jobs"}
    assert subquery_policies(found) == []


async def test_a_policy_with_a_subquery_is_caught(db: Database) -> None:
    async with db.owner_connection() as connection:
        await connection.execute(
            text(
                "CREATE POLICY ragsage_shard_probe ON ragsage_pages FOR SELECT USING ("
                "EXISTS (SELECT 1 FROM ragsage_documents d WHERE d.namespace = namespace "
                "AND d.content_hash = content_hash AND d.title <> 'SELECT'))"
            )
        )
        await connection.execute(
            text(
                "CREATE POLICY ragsage_shard_probe_check ON ragsage_blobs FOR INSERT "
                "WITH CHECK (namespace IN (SELECT namespace FROM ragsage_namespace_settings))"
            )
        )
        found = await policies(connection)
        await connection.rollback()
    assert subquery_policies(found) == [
        "ragsage_shard_probe_check on ragsage_blobs",
        "ragsage_shard_probe on ragsage_pages",
    ]
    # A word in a string literal is not a subquery.
    quoted = Policy("t", "p", "(note = 'SELECT 1'::text)", None)
    assert subquery_policies([quoted]) == []


# ------------------------------------------------------- rule 3: settings a planner forwards

_SET_LOCAL = re.compile(
    r"SET\s+LOCAL\s+(?P<name>[a-z_][\w.]*)\s*(?:=|\bTO\b)\s*'(?P<value>(?:[^']|'')*)'", re.I
)


def commands(sql: str) -> list[str]:
    """``sql``'s commands: split at each semicolon outside a string literal."""
    found, start, quoted = [], 0, False
    for i, char in enumerate(sql):
        if char == "'":
            quoted = not quoted
        elif char == ";" and not quoted:
            found.append(sql[start:i])
            start = i + 1
    found.append(sql[start:])
    return [command.strip() for command in found if command.strip()]


def unforwarded_settings(statements: Sequence[Statement], wanted: Mapping[str, str]) -> list[str]:
    """Each setting of ``wanted`` not set by exactly one ``SET LOCAL name = 'value'`` command.

    A value bound as a parameter, set by ``set_config``, or by a plain ``SET``
    (which outlives the transaction) is not forwarded, or not safely.
    """
    set_local: dict[str, list[str]] = {}
    for statement in statements:
        for command in commands(statement.sql):
            matched = _SET_LOCAL.fullmatch(command)
            if matched:
                value = matched["value"].replace("''", "'")
                set_local.setdefault(matched["name"].lower(), []).append(value)
    problems = []
    for name, value in wanted.items():
        values = set_local.get(name.lower(), [])
        if values != [value]:
            problems.append(f"{name}: SET LOCAL to {values!r}, wanted [{value!r}]")
    return problems


_CONFIG = PostgresConfig(dsn="postgresql://owner@localhost/ragsage")
_APP_LOGIN = PostgresConfig(
    dsn="postgresql://owner@localhost/ragsage", app_dsn="postgresql://ragsage_app@localhost/ragsage"
)


@pytest.mark.parametrize("config", [_CONFIG, _APP_LOGIN], ids=["role-switch", "app-login"])
@pytest.mark.parametrize(
    ("scope", "namespace", "principals"),
    [
        (Scope("acme"), "acme", "*"),
        (
            Scope("acme", frozenset({"team:b", "alice@example.com"})),
            "acme",
            "alice@example.com,team:b",
        ),
        (None, "", ""),
    ],
    ids=["unbound", "bound", "system"],
)
def test_scoped_settings_are_set_local(
    config: PostgresConfig, scope: Scope | None, namespace: str, principals: str
) -> None:
    preamble = isolation_preamble(config, scope)
    wanted = {config.isolation_variable: namespace, config.principals_variable: principals}
    assert unforwarded_settings(preamble, wanted) == []


def test_settings_a_planner_cannot_forward_are_caught() -> None:
    wanted = {"ragsage.namespace": "acme", "ragsage.principals": "*"}
    by_function = Statement(
        "SELECT set_config(:n0, :v0, true), set_config(:n1, :v1, true)",
        {"n0": "ragsage.namespace", "v0": "acme", "n1": "ragsage.principals", "v1": "*"},
    )
    assert len(unforwarded_settings([by_function], wanted)) == 2
    session_wide = Statement("SET ragsage.namespace = 'acme'; SET LOCAL ragsage.principals = '*'")
    assert unforwarded_settings([session_wide], wanted) == [
        "ragsage.namespace: SET LOCAL to [], wanted ['acme']"
    ]
    other = Statement("SET LOCAL ragsage.namespace = 'globex'; SET LOCAL ragsage.principals = '*'")
    assert unforwarded_settings([other], wanted) == [
        "ragsage.namespace: SET LOCAL to ['globex'], wanted ['acme']"
    ]
    right = Statement("SET LOCAL ragsage.namespace = 'acme'; SET LOCAL ragsage.principals TO '*'")
    assert unforwarded_settings([right], wanted) == []


def set_config_calls(statements: Iterable[Sql]) -> list[str]:
    """Each SQL text of the code that sets a setting by ``set_config`` (never forwarded)."""
    return [s.where for s in statements if re.search(r"\bset_config\s*\(", s.blanked, re.I)]


def test_no_code_sets_a_setting_by_set_config() -> None:
    assert set_config_calls(code_sql()) == []
    sample = Sql("probe.py::pin", 1, "SELECT set_config('hnsw.ef_search', '80', true)")
    assert set_config_calls([sample]) == ["probe.py::pin"]


# ----------------------------------------------- rule 4: every statement names its namespace


@dataclass(frozen=True, slots=True)
class Sql:
    """One SQL text of the code: where it is (``path::function``), its line, the text.

    A Python text's parts computed at run time (an f-string's values that are
    not module constants, a non-literal operand of ``+``) read as ``{?}``.
    """

    where: str
    line: int
    sql: str

    @property
    def blanked(self) -> str:
        return blank(self.sql)


HOLE = "{?}"


def blank(sql: str) -> str:
    """``sql`` without comments, each string literal's content replaced by spaces.

    The length is kept, so positions in the result are positions in ``sql``.
    """
    out = []
    i, n = 0, len(sql)
    while i < n:
        if sql.startswith("--", i):
            end = sql.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
        elif sql[i] == "'":
            end = i + 1
            while end < n:
                if sql[end] == "'" and sql.startswith("''", end):
                    end += 2
                elif sql[end] == "'":
                    break
                else:
                    end += 1
            out.append("'" + " " * (min(end, n) - i - 1) + ("'" if end < n else ""))
            i = end + 1
        else:
            out.append(sql[i])
            i += 1
    return "".join(out)


# ------------------------------------------------------------ SQL texts in Python

_DML = re.compile(r"^[\s(]*(SELECT|INSERT|UPDATE|DELETE|WITH)\b", re.I)


class _Module:
    """One Python module's string constants, resolved through ``from ... import``."""

    def __init__(self, path: Path, tree: ast.Module) -> None:
        self.path, self.tree = path, tree
        self.assigned: dict[str, ast.expr] = {}
        self.imported: dict[str, tuple[str, str]] = {}
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name):
                    self.assigned[target.id] = node.value
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                if node.value is not None:
                    self.assigned[node.target.id] = node.value
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    self.imported[alias.asname or alias.name] = (node.module, alias.name)


@cache
def _modules() -> dict[str, _Module]:
    found = {}
    for top in CODE:
        for path in sorted((ROOT / top).rglob("*.py")):
            dotted = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[dotted.removesuffix(".__init__")] = _Module(path, ast.parse(path.read_text()))
    return found


def _constant(module: _Module, name: str, seen: frozenset[str] = frozenset()) -> str | None:
    """The string a module-level name holds, if the code writes it out (else None)."""
    key = f"{module.path}:{name}"
    if key in seen:
        return None
    if name in module.assigned:
        return _fold(module, module.assigned[name], seen | {key})
    if name in module.imported:
        source, original = module.imported[name]
        other = _modules().get(source)
        return None if other is None else _constant(other, original, seen | {key})
    return None


def _fold(module: _Module, node: ast.expr, seen: frozenset[str] = frozenset()) -> str | None:
    """The text of a string expression: literals, f-strings and ``+`` chains folded.

    None when ``node`` is not a string expression at all.
    """
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue) and isinstance(value.value, ast.Name):
                parts.append(_constant(module, value.value.id, seen) or HOLE)
            else:
                parts.append(HOLE)
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _fold(module, node.left, seen), _fold(module, node.right, seen)
        if left is None and right is None:
            return None
        return (HOLE if left is None else left) + (HOLE if right is None else right)
    if isinstance(node, ast.Name) and seen:
        return _constant(module, node.id, seen)
    return None


def _docstrings(tree: ast.Module) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def _python_sql(module: _Module) -> Iterator[Sql]:
    relative = module.path.relative_to(ROOT).as_posix()
    docstrings = _docstrings(module.tree)

    def visit(node: ast.AST, where: str) -> Iterator[Sql]:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            where = node.name if where == "<module>" else f"{where}.{node.name}"
        if isinstance(node, ast.Assign) and where == "<module>" and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                where = target.id  # a module constant: named by itself
        if isinstance(node, ast.expr) and id(node) not in docstrings:
            folded = _fold(module, node)
            if folded is not None:
                yield Sql(f"{relative}::{where}", node.lineno, folded)
                return
        for child in ast.iter_child_nodes(node):
            yield from visit(child, where)

    yield from visit(module.tree, "<module>")


def python_sql() -> list[Sql]:
    """Every string expression of the code that is, or is part of, SQL on a table."""
    return [
        sql
        for module in _modules().values()
        for sql in _python_sql(module)
        if _DML.match(sql.sql) or _TABLE_REF.search(sql.blanked)
    ]


# ------------------------------------------------------------ SQL texts in SQL files


def sql_file_statements(path: Path, content: str | None = None) -> list[Sql]:
    """A function file's statements: the text between semicolons, from its first command.

    PL/pgSQL bodies hold one statement per semicolon; the declarations and
    control words before a statement's first command are left out.
    """
    content = path.read_text() if content is None else content
    blanked = blank(content)
    found, start = [], 0
    for piece in re.split(r"(;)", blanked):
        if piece != ";":
            first = re.search(r"\b(SELECT|INSERT|UPDATE|DELETE|WITH|PERFORM)\b", piece, re.I)
            if first is not None:
                at = start + first.start()
                text_ = content[at : start + len(piece)]
                found.append(
                    Sql(
                        f"sql/{path.relative_to(SQL_DIR).as_posix()}",
                        content.count("\n", 0, at) + 1,
                        text_,
                    )
                )
        start += len(piece)
    return found


def file_sql() -> list[Sql]:
    files = [*sorted((SQL_DIR / "functions").glob("*.sql")), SQL_DIR / "nearest.sql"]
    return [sql for path in files for sql in sql_file_statements(path)]


@cache
def code_sql() -> tuple[Sql, ...]:
    return (*python_sql(), *file_sql())


# ------------------------------------------------------------ the check


_KEYWORDS = {
    "where", "set", "on", "using", "join", "left", "right", "inner", "full", "cross",
    "natural", "order", "group", "limit", "returning", "union", "intersect", "except",
    "for", "window", "having", "offset", "values", "select", "default", "lateral",
    "tablesample", "fetch", "as", "into", "from", "do", "when", "then", "and", "or",
}  # fmt: skip
# A table after a keyword that takes one; a table named at run time only after an
# upper-case keyword (the code's SQL is written so; prose says "from {name}").
_TABLE_REF = re.compile(
    r"\b(?:(?i:(FROM|JOIN|INTO|UPDATE|USING))\s+(?i:ONLY\s+)?\"?(ragsage_\w+)\"?"
    rf"|(FROM|JOIN|INTO|UPDATE|USING)\s+\"?({re.escape(HOLE)})\"?)"
    r"(?:\s+(?i:AS\s+)?(\w+))?"
)
# Another table of a comma-separated FROM list.
_LISTED_REF = re.compile(r",\s*(ragsage_\w+)\b(?!\s*\()(?:\s+(?:AS\s+)?(\w+))?", re.I)


@dataclass(frozen=True, slots=True)
class Ref:
    """A table a statement reads or writes: its name, alias, keyword and position."""

    table: str
    alias: str | None
    keyword: str
    start: int
    end: int


def _alias(word: str | None) -> str | None:
    return None if word is None or word.lower() in _KEYWORDS else word


def table_refs(blanked: str, tenants: Collection[str]) -> list[Ref]:
    """Each reference to a tenant table (or to a table named at run time) in ``blanked``."""
    refs = []
    for m in _TABLE_REF.finditer(blanked):
        named = 2 if m.group(2) else 4
        keyword, table = m.group(named - 1).upper(), m.group(named)
        called = blanked[m.end(named) :].lstrip().startswith("(")
        if called and keyword != "INTO":
            continue  # a function: FROM ragsage_keyword_search(...)
        if table == HOLE or table in tenants:
            refs.append(Ref(table, _alias(m.group(5)), keyword, m.start(), m.end(named)))
    for m in _LISTED_REF.finditer(blanked):
        # Only within a FROM list: the last clause keyword before it is FROM.
        before = re.findall(r"\b(FROM|SELECT|WHERE|SET|VALUES|ON)\b", blanked[: m.start()], re.I)
        if m.group(1) in tenants and before and before[-1].upper() == "FROM":
            refs.append(Ref(m.group(1), _alias(m.group(2)), "FROM", m.start(), m.end(1)))
    return refs


def _groups(blanked: str) -> list[tuple[int, int]]:
    """Each parenthesised group as (index of ``(``, index of its ``)``)."""
    pairs, stack = [], []
    for i, char in enumerate(blanked):
        if char == "(":
            stack.append(i)
        elif char == ")" and stack:
            pairs.append((stack.pop(), i))
    pairs.extend((opening, len(blanked)) for opening in stack)
    return pairs


def block(blanked: str, at: int) -> tuple[str, str]:
    """The query block around position ``at``: whole, and with its subqueries blanked.

    The innermost parenthesised group holding ``at`` (or the whole text), cut at
    its own ``UNION``/``INTERSECT``/``EXCEPT`` and semicolons.  A name qualified
    by the ref's alias may appear in the block's subqueries (a correlated
    condition); an unqualified ``namespace`` there is the subquery's own.
    """
    groups = _groups(blanked)
    start, end = max(((o, c) for o, c in groups if o < at < c), default=(-1, len(blanked)))
    inner = [(o, c) for o, c in groups if start < o and c < end]
    top = [(o, c) for o, c in inner if not any(p < o and c < q for p, q in inner)]
    masked, flat = list(blanked), list(blanked)
    for o, c in top:
        masked[o + 1 : c] = " " * (c - o - 1)
        if re.match(r"\(\s*(SELECT|WITH)\b", blanked[o:c], re.I):
            flat[o + 1 : c] = " " * (c - o - 1)
    cuts = [start + 1, end]
    level = "".join(masked[start + 1 : end])
    cuts += [start + 1 + m.start() for m in re.finditer(r"\b(UNION|INTERSECT|EXCEPT)\b|;", level)]
    cuts.sort()
    lo, hi = next((lo, hi) for lo, hi in zip(cuts, cuts[1:], strict=False) if lo <= at < hi)
    return blanked[lo:hi], "".join(flat[lo:hi])


_EQUALS = r"(?<![<>!:])=(?!>)"
_CONCATENATED = r"(?:\|\|\s*''\s*\)\s*)?"  # keyword_search.sql's ``(c.namespace || '') = ns``


def _constrains(column: str) -> re.Pattern[str]:
    """``column`` compared for equality or membership, or a join's ``USING (namespace)``."""
    return re.compile(
        rf"{column}\s*{_CONCATENATED}(?:{_EQUALS}|\bIN\b|\bIS\s+NOT\s+DISTINCT\s+FROM\b)"
        rf"|{_EQUALS}\s*\(?\s*{column}"
        rf"|\(\s*{column}\s*,[^()]*\)\s*(?:=|\bIN\b)"
        r"|\bUSING\s*\([^()]*\bnamespace\b[^()]*\)",
        re.I,
    )


_UNQUALIFIED = _constrains(r"(?<![\w.:(])namespace\b")
# A namespace column (not ``:namespace``, ``%(namespace)s``, nor a trigger's ``NEW.namespace``).
_COLUMN = r"(?:(?<![\w.])(?!NEW\.|OLD\.)\w+\.(?i:namespace)|(?<![\w.:(])(?i:namespace))\b"
# What a namespace may be compared with to route a statement: a bound parameter,
# a literal (or format()'s ``%L`` of one, in a statement a function builds), a
# setting, a function's argument or variable, a trigger's row.  Not
# another table's column: a join on namespace routes only a statement that
# constrains one side by a value.
_VALUE = (
    r"(?::\w|%\(|%(?:\d+\$)?L\b|'|(?i:current_setting)\s*\(|NEW\.|OLD\."
    r"|(?!(?i:SELECT|ANY|ALL|SOME)\b)[A-Za-z_]\w*\b(?!\s*[.(]))"
)
_VALUE_BEFORE = r"(?:(?<![\w.:])(?!namespace\b)[A-Za-z_]\w*|:\w+|%\(\w+\)s|'|(?:NEW|OLD)\.\w+)"
_ANCHOR = re.compile(
    rf"{_COLUMN}\s*{_CONCATENATED}{_EQUALS}\s*\(?\s*{_VALUE}"
    rf"|{_VALUE_BEFORE}\s*{_EQUALS}\s*\(?\s*{_COLUMN}"
    rf"|{_COLUMN}\s*(?:\bIN\b|=\s*ANY\b)"
    rf"|\(\s*{_COLUMN}\s*,[^()]*\)\s*(?:=|\bIN\b)"
)


def anchored(blanked: str, tenants: Collection[str]) -> bool:
    """Whether some namespace is compared with a value, or set by ``INSERT ... VALUES``.

    An ``INSERT`` that reads tenant tables too must compare a namespace itself.
    """
    if _ANCHOR.search(blanked):
        return True
    refs = table_refs(blanked, tenants)
    return bool(refs) and all(
        ref.keyword == "INTO" and _inserts_namespace(blanked, ref) for ref in refs
    )


def _insert_columns(blanked: str, ref: Ref) -> str | None:
    """The column list after ``INSERT INTO table``, or None if it has none."""
    m = re.match(r"\s*(?:AS\s+\w+\s*)?\(", blanked[ref.end :], re.I)
    if m is None:
        return None
    opening = ref.end + m.end() - 1
    closing = next((c for o, c in _groups(blanked) if o == opening), len(blanked))
    return blanked[opening + 1 : closing]


def _inserts_namespace(blanked: str, ref: Ref) -> bool:
    columns = _insert_columns(blanked, ref)
    return columns is not None and re.search(r"\bnamespace\b", columns) is not None


def _names_namespace(blanked: str, ref: Ref) -> bool:
    if ref.keyword == "INTO" and re.search(r"\bINSERT\s*$", blanked[: ref.start], re.I):
        return _inserts_namespace(blanked, ref)
    whole, own = block(blanked, ref.start)
    name = ref.alias or ref.table
    if name != HOLE and _constrains(rf"\b{re.escape(name)}\.namespace\b").search(whole):
        return True
    return _UNQUALIFIED.search(own) is not None


@dataclass(frozen=True, slots=True)
class Unrouted:
    """A statement whose tenant table names no namespace (``what`` says which)."""

    sql: Sql
    what: str

    def __str__(self) -> str:
        snippet = " ".join(self.sql.sql.split())[:150]
        return f"{self.sql.where} (line {self.sql.line}): {self.what}: {snippet}"


def unrouted(statements: Iterable[Sql], tenants: Collection[str]) -> list[Unrouted]:
    """What of ``statements`` a distributed planner could not route by namespace.

    Each reference to a tenant table must have its namespace constrained (or
    set, by an ``INSERT``'s column list): compared with a value, or joined to
    another table's on it.  And a statement with such references must compare
    some namespace with a value, or it would run on every shard (a fragment,
    which is not a statement by itself, is checked for the first rule only).
    """
    found = []
    for statement in statements:
        blanked = statement.blanked
        refs = table_refs(blanked, tenants)
        for ref in refs:
            if not _names_namespace(blanked, ref):
                named = ref.table if ref.table != HOLE else "a table named at run time"
                alias = f" {ref.alias}" if ref.alias else ""
                found.append(Unrouted(statement, f"{ref.keyword} {named}{alias}"))
        if refs and _DML.match(blanked) and not anchored(blanked, tenants):
            found.append(Unrouted(statement, "no namespace compared with a value"))
    return found


# Texts that may touch tenant tables without naming one namespace, by where they
# are: ``path::function`` for Python (a module constant: ``path::NAME``), the
# file for a SQL function.  Migrations are not scanned: their data fix-ups run
# once, as the owner, over every namespace.
ALLOWED_STATEMENTS = {
    # The named cross-namespace functions (each tested not to leak).
    "sql/functions/find_api_key.sql": (
        "the key lookup by hash: a request's key is all it presents, so the key "
        "table is read before any namespace is known (a reference table on Citus)"
    ),
    "sql/functions/next_job.sql": (
        "the fair queue: which namespace's job runs next, chosen across every "
        "namespace with queued work"
    ),
    "sql/functions/job_counts.sql": (
        "jobs by namespace and state, for the metrics, the readiness probe and "
        "the operator's queue overview"
    ),
    "sql/functions/stale_jobs.sql": (
        "the watchdog's sweep for jobs whose worker died or whose message was "
        "lost, in every namespace (each is then re-queued in its own namespace)"
    ),
    "sql/functions/namespaces.sql": (
        "the list of namespaces holding documents, for the operator's re-index of everything"
    ),
    "sql/functions/claim_webhook_deliveries.sql": (
        "the webhook dispatcher's claim of due deliveries, fair across endpoints and namespaces"
    ),
    "sql/functions/purge_webhook_events.sql": (
        "the retention sweep of old webhook events, in every namespace"
    ),
    "sql/functions/graph_candidates.sql": (
        "the chunk counts of every namespace's live generations, for the owner's "
        "choice of which namespaces get an HNSW graph of their own"
    ),
    "sql/functions/webhook_backlog.sql": (
        "the metrics' count and age of undelivered webhook events over every namespace"
    ),
    "ragsage/adapters/postgres/namespaces.py::queue_overview": (
        "the operator's overview of every namespace's queue and slots, read "
        "through ragsage_job_counts as ragsage_system"
    ),
    "ragsage/adapters/postgres/keys.py::seal_signing_secrets": (
        "the owner's one-time sealing of delegate keys' signing secrets stored in "
        "plaintext before migration 36, found in every namespace as ragsage_system "
        "(each is then written pinned to its own namespace)"
    ),
    # The namespace purge.
    "ragsage/adapters/postgres/document_store.py::purge_namespace": (
        "the namespace purge: a DELETE with no WHERE clause on purpose, each "
        "limited to the session's namespace by Row-Level Security alone (a "
        "hand-written predicate would be a second, weaker copy of that guarantee)"
    ),
}


async def test_every_statement_names_its_namespace(db: Database) -> None:
    async with db.owner_connection() as connection:
        tenants = await tenant_tables(connection)
    statements = code_sql()
    # The scan sees the code's SQL: Python and the SQL function files alike.
    wheres = {s.where for s in statements}
    assert "ragsage/adapters/postgres/jobs/store.py::claim" in wheres
    assert "sql/functions/keyword_search.sql" in wheres and "sql/nearest.sql" in wheres
    found = unrouted(statements, tenants)
    assert [str(u) for u in found if u.sql.where not in ALLOWED_STATEMENTS] == []
    # Each allowance still names something that needs it.
    assert {u.sql.where for u in found} == set(ALLOWED_STATEMENTS)


_TENANTS = frozenset({"ragsage_chunks", "ragsage_documents", "ragsage_jobs", "ragsage_generations"})


def _sql(text_: str) -> Sql:
    return Sql("probe.py::probe", 1, text_)


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT * FROM ragsage_documents WHERE id = :id",
        # RLS alone: the value is hidden in a function call... of another table.
        "DELETE FROM ragsage_jobs WHERE document_id = :id AND state = 'queued'",
        # The namespace only in a column list or a string.
        "SELECT namespace, id FROM ragsage_jobs WHERE note = 'namespace = x'",
        # A join on namespace, but no table's namespace compared with a value.
        "SELECT count(*) FROM ragsage_chunks c JOIN ragsage_generations g "
        "ON g.namespace = c.namespace AND g.id = c.generation",
        # One side of a UNION names it, the other does not.
        "SELECT id FROM ragsage_documents WHERE namespace = :namespace "
        "UNION SELECT document_id FROM ragsage_jobs WHERE id = :id",
        # A subquery's table names no namespace of its own.
        "SELECT id FROM ragsage_documents WHERE namespace = :namespace "
        "AND id IN (SELECT document_id FROM ragsage_jobs WHERE state = 'failed')",
        # An INSERT ... SELECT reading a tenant table of every namespace.
        "INSERT INTO ragsage_generations (namespace, id) "
        "SELECT :namespace, coalesce(max(id), 0) + 1 FROM ragsage_generations",
        # An INSERT without a column list.
        "INSERT INTO ragsage_jobs VALUES (:namespace, :id)",
        # A table named at run time.
        "UPDATE {?} SET access = :access WHERE document_id = :id",
    ],
)
def test_a_statement_that_names_no_namespace_is_caught(statement: str) -> None:
    assert unrouted([_sql(statement)], _TENANTS) != []


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT * FROM ragsage_documents WHERE namespace = :namespace AND id = :id",
        "UPDATE ragsage_jobs j SET state = 'queued' WHERE j.namespace = %(namespace)s",
        "INSERT INTO ragsage_jobs (namespace, id) VALUES (:namespace, :id)",
        "SELECT count(*) FROM ragsage_chunks c JOIN ragsage_generations g "
        "ON g.namespace = c.namespace AND g.id = c.generation WHERE c.namespace = ns",
        "SELECT 1 FROM ragsage_chunks c WHERE (c.namespace || '') = ns AND c.ctid = r.at",
        "SELECT d.id FROM ragsage_documents d WHERE d.namespace = :namespace AND NOT EXISTS "
        "(SELECT 1 FROM ragsage_jobs j WHERE j.namespace = d.namespace AND j.id = d.id)",
        "SELECT count(*) FROM ragsage_jobs WHERE namespace = current_setting('x.y', true)",
        # Not a tenant table, nor a table: nothing to route.
        "SELECT * FROM ragsage_keyword_search(:query)",
        "SELECT * FROM ragsage_schema",
    ],
)
def test_a_statement_that_names_its_namespace_passes(statement: str) -> None:
    assert unrouted([_sql(statement)], _TENANTS) == []


def test_the_scan_reads_python_and_sql_files_as_the_code_writes_them() -> None:
    source = (
        "COLUMNS = 'id, state'\n"
        "async def get(session, job_id):\n"
        "    '''SELECT the job FROM ragsage_jobs (a docstring is not SQL).'''\n"
        "    where = 'id = :id'\n"
        "    await session.execute(text(f'SELECT {COLUMNS} FROM ragsage_jobs '\n"
        "        'WHERE ' + where))\n"
        "    raise ValueError(f'cannot delete from {job_id}')\n"
    )
    path = ROOT / "ragsage" / "probe.py"
    module = _Module(path, ast.parse(source))
    found = list(_python_sql(module))
    assert [(s.where, s.sql) for s in found if _DML.match(s.sql)] == [
        ("ragsage/probe.py::get", "SELECT id, state FROM ragsage_jobs WHERE {?}"),
    ]
    assert [u.what for u in unrouted(found, _TENANTS)] == [
        "FROM ragsage_jobs",
        "no namespace compared with a value",
    ]
    body = (
        "CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $fn$\n"
        "    DECLARE ns text := current_setting('x.y', true);\n"
        "    BEGIN\n"
        "        UPDATE ragsage_jobs SET state = 'done' WHERE namespace = ns; -- ok\n"
        "        DELETE FROM ragsage_documents WHERE id = 'a;b';\n"
        "    END $fn$;\n"
    )
    statements = sql_file_statements(SQL_DIR / "functions" / "probe.sql", body)
    assert [s.sql.split()[0] for s in statements] == ["UPDATE", "DELETE"]
    assert [u.sql.line for u in unrouted(statements, _TENANTS)] == [5, 5]
