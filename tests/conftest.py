"""Shared fixtures: real SQLite files in a temporary LORESTORE_HOME, PostgreSQL databases lent by
a pool (tests/pg.py) or copied for one test (``fresh_database``), a controllable clock, and the
CLI through its real Typer app; the network blocked for every test (tests/offline.py)."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from tests.offline import network_blocked
from tests.pg import Pool, Template, admin_url
from typer.testing import CliRunner

from lorestore.auth.actor import local_actor
from lorestore.cli.main import app
from lorestore.service import LessonService
from lorestore.storage.postgres import PostgresStore
from lorestore.storage.protocol import Store
from lorestore.storage.sqlite import SQLiteStore


class Clock:
    """A clock tests move by hand."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture(scope="session", autouse=True)
def offline() -> Iterator[None]:
    """Every test runs with the network blocked (tests/offline.py): nothing, the embedding
    model of the semantic extra included, may download at run time."""
    with network_blocked():
        yield


# Debian's chromium (`make test` installs it): the browser the dashboard's tests drive through
# Playwright's executable_path, never a browser build Playwright would download.
CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless chromium for one test module. Under CI=true a browser test that cannot run
    fails, as a PostgreSQL test does (tests/pg.py); elsewhere it is skipped, saying why."""
    problem = None
    if not CHROMIUM.exists():
        problem = f"no browser at {CHROMIUM}: `make test` installs Debian's chromium (as root)"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        problem = "Playwright is not installed: `make .venv/.dev-installed`"
    if problem is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(problem + " (CI=true: browser tests never skip)")
        pytest.skip(problem)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        yield chromium
        chromium.close()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private LORESTORE_HOME; the CLI and spawned servers use its lorestore.db."""
    path = tmp_path / "home"
    monkeypatch.setenv("LORESTORE_HOME", str(path))
    monkeypatch.delenv("LORESTORE_DATABASE_URL", raising=False)
    monkeypatch.delenv("LORESTORE_SESSION", raising=False)
    return path


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(scope="session")
def pg_template() -> Iterator[Template]:
    template = Template()
    yield template
    template.drop(template.name)


@pytest.fixture(scope="session")
def pg_pool(pg_template: Template) -> Iterator[Pool]:
    pool = Pool(pg_template)
    yield pool
    pool.close()


@pytest.fixture
def pg_database(request: pytest.FixtureRequest, pg_template: Template) -> Iterator[str]:
    """An empty migrated database; yields its name. It is lent by the pool and emptied after
    the test, unless the test is marked ``fresh_database`` (it changes the schema, a role or
    the migrations): then it is a copy of the template of its own, dropped after."""
    if request.node.get_closest_marker("fresh_database"):
        name = pg_template.copy()
        yield name
        pg_template.drop(name)
        return
    pool: Pool = request.getfixturevalue("pg_pool")
    name = pool.acquire()
    yield name
    pool.release(name)


@pytest.fixture
def sqlite_store(home: Path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(home / "lorestore.db")
    yield s
    s.close()


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, home: Path) -> Iterator[Store]:
    """The contract fixture: every test using it runs on both backends; hybrid retrieval on,
    unless the test is marked ``lexical`` (it checks what the full-text index alone finds)."""
    semantic = request.node.get_closest_marker("lexical") is None
    if request.param == "sqlite":
        s: Store = SQLiteStore(home / "lorestore.db", semantic=semantic)
    else:
        template: Template = request.getfixturevalue("pg_template")
        name = request.getfixturevalue("pg_database")
        s = PostgresStore(template.app_url(name), max_size=4, semantic=semantic)
    yield s
    s.close()


def dump_text(store: Store) -> str:
    """Every row of every table as text, read past row-level security: for proving that a
    refused call changed nothing and that erased text is gone."""
    if isinstance(store, SQLiteStore):
        return "\n".join(sqlite3.connect(store.path).iterdump())
    assert isinstance(store, PostgresStore)
    url = conninfo_to_dict(store.url)
    url.pop("user", None)
    admin = conninfo_to_dict(admin_url())
    admin["dbname"] = url["dbname"]
    lines = []
    with psycopg.connect(make_conninfo(**admin)) as conn:
        tables = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename"
        ).fetchall()
        for (table,) in tables:
            rows = conn.execute(
                sql.SQL("SELECT t::text FROM {} AS t ORDER BY t::text").format(
                    sql.Identifier(table)
                )
            ).fetchall()
            lines += [f"{table}: {r[0]}" for r in rows]
    return "\n".join(lines)


@pytest.fixture
def service(store: Store, clock: Clock) -> LessonService:
    return LessonService(store, clock=clock)


@pytest.fixture
def actor():  # type: ignore[no-untyped-def]
    return local_actor(session="session-1")


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)

    def error(self) -> dict[str, Any]:
        body: dict[str, Any] = json.loads(self.stderr)["error"]
        return body


class Cli:
    """Runs ``lorestore`` through its Typer app, as the console script does."""

    def __init__(self) -> None:
        self.runner = CliRunner()

    def __call__(self, *args: str, input: str | None = None) -> CliResult:
        result = self.runner.invoke(app, list(args), input=input, catch_exceptions=False)
        return CliResult(result.exit_code, result.stdout, result.stderr)

    def ok(self, *args: str, input: str | None = None) -> Any:
        result = self(*args, "--json", input=input)
        assert result.exit_code == 0, result.stderr
        return result.json()


@pytest.fixture
def cli(home: Path, monkeypatch: pytest.MonkeyPatch) -> Cli:
    """The CLI in a folder that is no git checkout (the test's own, holding ``home``): the CLI
    reads its context from the working directory's git, which would otherwise be wherever the
    suite runs from (a clone's origin names a repository). A test that wants a checkout
    changes into one."""
    monkeypatch.chdir(home.parent)
    return Cli()


@contextmanager
def app_connection(store: Store, actor: str = "user:local") -> Iterator[Any]:
    """A raw connection with the application's own rights (on PostgreSQL: the app role with
    the actor bound), for proving what the database itself refuses."""
    if isinstance(store, SQLiteStore):
        conn = sqlite3.connect(store.path, isolation_level=None)
        try:
            yield conn
        finally:
            conn.close()
        return
    assert isinstance(store, PostgresStore)
    with psycopg.connect(store.url, autocommit=True) as pg:
        pg.execute("SELECT set_config('lorestore.actor', %s, false)", [actor])
        yield pg


def table_rows(store: Store, table: str) -> list[str]:
    """The rows of one table as text lines, as `dump_text` shows them."""
    marker = f'INSERT INTO "{table}"' if isinstance(store, SQLiteStore) else f"{table}: "
    return [line for line in dump_text(store).splitlines() if line.startswith(marker)]


def break_table(store: Store, table: str) -> None:
    """Make a table unusable (renamed away), to prove what happens when a check cannot run."""
    if isinstance(store, SQLiteStore):
        conn = sqlite3.connect(store.path)
        conn.execute(f'ALTER TABLE "{table}" RENAME TO "{table}_broken"')
        conn.commit()
        conn.close()
        return
    assert isinstance(store, PostgresStore)
    admin = conninfo_to_dict(admin_url())
    admin["dbname"] = conninfo_to_dict(store.url)["dbname"]
    with psycopg.connect(make_conninfo(**admin), autocommit=True) as conn:
        conn.execute(
            sql.SQL("ALTER TABLE {} RENAME TO {}").format(
                sql.Identifier(table), sql.Identifier(f"{table}_broken")
            )
        )


def set_cap(store: Store, owner: str, limit: int) -> None:
    """An operator's change of an owner's cap: on PostgreSQL with the superuser's rights, as
    `lorestore db cap --database-url` makes it (the app role may not raise caps)."""
    if isinstance(store, SQLiteStore):
        with store.transaction(write=True, actor=owner) as tx:
            tx.set_max_active(owner, limit)
        return
    assert isinstance(store, PostgresStore)
    admin = conninfo_to_dict(admin_url())
    admin["dbname"] = conninfo_to_dict(store.url)["dbname"]
    kind, _, name = owner.partition(":")
    with psycopg.connect(make_conninfo(**admin), autocommit=True) as conn:
        conn.execute(  # an owner not yet seen is registered first, as its first write would
            "INSERT INTO principals (id, kind, name) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
            [owner, kind, name],
        )
        conn.execute(
            "INSERT INTO owner_stats (owner, max_active) VALUES (%s, %s) "
            "ON CONFLICT (owner) DO UPDATE SET max_active = excluded.max_active",
            [owner, limit],
        )


def tamper_audit(store: Store, event_id: int) -> None:
    """What an attacker with the database's owner rights could do: switch off the append-only
    guard and rewrite one event's reason. Only the hash chain can tell afterwards."""
    if isinstance(store, SQLiteStore):
        conn = sqlite3.connect(store.path)
        conn.execute("DROP TRIGGER audit_log_no_update")
        conn.execute("UPDATE audit_log SET reason = 'nothing to see' WHERE id = ?", (event_id,))
        conn.commit()
        conn.close()
        return
    assert isinstance(store, PostgresStore)
    admin = conninfo_to_dict(admin_url())
    admin["dbname"] = conninfo_to_dict(store.url)["dbname"]
    with psycopg.connect(make_conninfo(**admin), autocommit=True) as conn:
        conn.execute("ALTER TABLE audit_log DISABLE TRIGGER audit_log_append_only")
        conn.execute("UPDATE audit_log SET reason = 'nothing to see' WHERE id = %s", (event_id,))


@contextmanager
def operator_store(store: Store) -> Iterator[Store]:
    """The store as an operator opens it: on PostgreSQL with the superuser's rights."""
    if not isinstance(store, PostgresStore):
        yield store
        return
    admin = conninfo_to_dict(admin_url())
    admin["dbname"] = conninfo_to_dict(store.url)["dbname"]
    operator = PostgresStore(make_conninfo(**admin), max_size=1)
    try:
        yield operator
    finally:
        operator.close()


def operator_approve(store: Store, org: str, pattern: str, *, reject: bool = False) -> bool:
    """An operator's decision on a pending scope binding, as `lorestore db approve-binding`
    makes it."""
    from lorestore.core.timestamps import format_ts
    from lorestore.service.orgs import approve_binding

    with operator_store(store) as operator:
        at = format_ts(datetime.now(UTC))
        return approve_binding(operator, org, pattern, reject=reject, at=at)


def approve_pending(store: Store) -> None:
    """The operator approves every pending scope binding: for a setup that binds a scope while
    people outside the org already hold something."""
    with operator_store(store) as operator:
        with operator.transaction(write=False, actor=None) as tx:
            pending = tx.pending_bindings()
        for binding in pending:
            operator_approve(operator, binding.org, binding.pattern)
