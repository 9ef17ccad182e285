"""Every named query the storage code asks for exists in the backend's .sql file it reads.

The code is read with ``ast``, not run: each string passed to a query helper (``_one``,
``_all``, ``_exec``, ``_count``, ``_inserted``, ``_executemany``, ``_insert_rows``, recall's
``fetch``), named in a ``(name, params)`` pair of ``_all_at_once``'s list, or used as a key of
``Q``; an f-string over a table name (``select_{table}``) stands
for every copied table, and a name bound by ``for name in ("a", "b")`` for each of them. Code
under ``sqlite/`` asks the SQLite files, code under ``postgres/`` the PostgreSQL ones, and
shared code both."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import lorestore.storage
from lorestore.storage.queries import load_queries
from lorestore.storage.reconciliation import TABLES

STORAGE = Path(lorestore.storage.__file__).parent
BACKENDS = ("sqlite", "postgres")
HELPERS = {"_one", "_all", "_exec", "_count", "_inserted", "_executemany", "_insert_rows", "fetch"}
TABLE_NAMES = [table.name for table in TABLES]
# Tables migrate writes through the store's own primitives have no insert_* query.
BY_PRIMITIVE = {f"insert_{table.name}" for table in TABLES if table.by_primitive}


def _expand(node: ast.expr, loops: dict[str, list[str]]) -> list[str]:
    """The query names an expression can stand for; [] when it is no name we can read."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Name):
        return loops.get(node.id, [])
    if isinstance(node, ast.JoinedStr):
        names = [""]
        for part in node.values:
            if isinstance(part, ast.Constant):
                names = [n + str(part.value) for n in names]
            else:  # a formatted table name
                names = [n + t for n in names for t in TABLE_NAMES]
        return [n for n in names if n not in BY_PRIMITIVE]
    return []


def _loops(tree: ast.AST) -> dict[str, list[str]]:
    """Names bound by ``for NAME in ("a", "b", ...)``."""
    found: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.For)
            and isinstance(node.target, ast.Name)
            and isinstance(node.iter, ast.Tuple | ast.List)
        ):
            values = [e.value for e in node.iter.elts if isinstance(e, ast.Constant)]
            found[node.target.id] = [v for v in values if isinstance(v, str)]
    return found


def asked_for(source: str) -> set[str]:
    """Every query name the module's code asks for."""
    tree = ast.parse(source)
    loops = _loops(tree)
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in HELPERS:
                names.update(_expand(node.args[0], loops))
            elif called == "_all_at_once" and isinstance(node.args[0], ast.List | ast.Tuple):
                for call in node.args[0].elts:  # (name, params) pairs
                    if isinstance(call, ast.Tuple) and call.elts:
                        names.update(_expand(call.elts[0], loops))
        elif isinstance(node, ast.Subscript):
            value = node.value
            if (isinstance(value, ast.Name) and value.id == "Q") or (
                isinstance(value, ast.Attribute) and value.attr == "Q"
            ):
                names.update(_expand(node.slice, loops))
    return names


def _sql_file(path: Path) -> str:
    """Which of a backend's files the module's queries come from: ``lorestore migrate``'s
    modules read transfer.sql, the webhook primitives webhooks.sql, every other module
    queries.sql."""
    if path.name == "transfer.py":
        return "transfer.sql"
    return "webhooks.sql" if path.name == "webhooks.py" else "queries.sql"


def _modules(backend: str) -> list[Path]:
    """The modules whose queries ``backend``'s files must hold: its own and the shared ones."""
    shared = [p for p in STORAGE.rglob("*.py") if p.parent.name not in BACKENDS]
    return sorted(shared + list((STORAGE / backend).glob("*.py")))


def missing(backend: str, sources: dict[Path, str] | None = None) -> list[str]:
    """``file: name (module)`` for each name asked for that the backend's file lacks."""
    found = []
    for path in _modules(backend):
        source = (sources or {}).get(path) or path.read_text("utf-8")
        filename = _sql_file(path)
        defined = load_queries(f"lorestore.storage.{backend}", filename)
        for name in sorted(asked_for(source) - set(defined)):
            found.append(f"{backend}/{filename}: {name} ({path.relative_to(STORAGE)})")
    return found


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_query_the_code_asks_for_exists(backend: str) -> None:
    assert missing(backend) == []


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("filename", ["queries.sql", "transfer.sql", "webhooks.sql"])
def test_every_query_in_the_files_is_asked_for(backend: str, filename: str) -> None:
    # The other way round: a query no code asks for is dead SQL that still reads as if it ran.
    asked: set[str] = set()
    for path in _modules(backend):
        if _sql_file(path) == filename:
            asked |= asked_for(path.read_text("utf-8"))
    defined = load_queries(f"lorestore.storage.{backend}", filename)
    assert sorted(set(defined) - asked) == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_scan_sees_the_queries_of_every_part(backend: str) -> None:
    # The positive control: the scan finds names through each kind of use it claims to read.
    shared = asked_for((STORAGE / "sql" / "lessons.py").read_text("utf-8"))
    assert {"lesson_at", "search", "insert_lesson", "recall_by_text", "recall_pages"} <= shared
    at_once = asked_for((STORAGE / "sql" / "bulk.py").read_text("utf-8"))
    assert {"live_tombstones", "rejected_values", "lookalike_keys"} <= at_once
    transfer = asked_for((STORAGE / "transfer.py").read_text("utf-8"))
    assert {"source_counts", "select_lessons", "insert_lessons"} <= transfer
    dialect = asked_for((STORAGE / backend / "dialect.py").read_text("utf-8"))
    assert "versions_of" in dialect


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("sqlite/dialect.py", "insert_org"),
        ("postgres/dialect.py", "create_org"),
        ("sql/tenancy.py", "count_request"),
        ("sqlite/transfer.py", "applied_migrations"),
    ],
)
def test_a_misspelled_name_is_caught(module: str, name: str) -> None:
    path = STORAGE / module
    source = path.read_text("utf-8")
    assert f'"{name}"' in source
    mutated = source.replace(f'"{name}"', f'"{name}x"', 1)
    backends = [module.split("/")[0]] if module.split("/")[0] in BACKENDS else list(BACKENDS)
    for backend in backends:
        assert any(f": {name}x (" in line for line in missing(backend, {path: mutated}))


def test_no_postgresql_query_reads_the_lessons_search_vector_back() -> None:
    """Rows of lessons are read through lesson_rows (migration 0038), without the tsvector
    only the database's matching and ranking use; a query may still name lessons.search."""
    texts = {
        name: text
        for file in ("queries.sql", "transfer.sql", "webhooks.sql")
        for name, text in load_queries("lorestore.storage.postgres", file).items()
    }
    assert any("lesson_rows" in text for text in texts.values())  # the control
    every_column = re.compile(r"SELECT\s+\*\s+FROM\s+lessons\b|(\w+)\.\*")
    for name, text in texts.items():
        for found in every_column.finditer(text):
            alias = found.group(1)
            if alias is None:
                raise AssertionError(f"{name}: SELECT * FROM lessons")
            assert not re.search(rf"\blessons\s+AS\s+{alias}\b", text), (name, alias)
