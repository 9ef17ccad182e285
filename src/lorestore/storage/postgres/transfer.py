"""PostgreSQL as one side of ``lorestore migrate``: one connection as a role that bypasses
row-level security (migrate copies every tenant at once), holding one transaction — a
read-only repeatable-read snapshot for a source, the write for a target."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row

from lorestore.core.errors import TARGET_CAP_HINT, LorestoreError
from lorestore.core.jsontext import dumps
from lorestore.core.timestamps import format_ts
from lorestore.storage.postgres.dialect import PostgresTransaction, rows_json
from lorestore.storage.postgres.errors import CAPS
from lorestore.storage.postgres.setup import check_migrations
from lorestore.storage.protocol import Transaction
from lorestore.storage.queries import load_queries
from lorestore.storage.reconciliation import Row
from lorestore.storage.transfer import Endpoint

Q = load_queries("lorestore.storage.postgres", "transfer.sql")
_ITERSIZE = 1000
_BYPASS_HINT = (
    "use a superuser URL (the one given to `lorestore db init`) or a role with BYPASSRLS; "
    "lorestore_app cannot see other tenants, by design"
)


def describe(url: str) -> tuple[str, tuple[str, ...]]:
    """A printable form of the URL without its password, and what identifies the database."""
    try:
        params = conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        raise LorestoreError(
            "invalid_argument",
            f"cannot parse the PostgreSQL URL: {exc}",
            hint="use postgresql://ROLE@HOST:PORT/DATABASE",
        ) from exc
    host, port = str(params.get("host", "")), str(params.get("port", ""))
    dbname = str(params.get("dbname", ""))
    user = f"{params['user']}@" if params.get("user") else ""
    label = f"postgresql://{user}{host}{':' + port if port else ''}/{dbname}"
    return label, ("postgres", host, port or "5432", dbname)


def _canonical(row: dict[str, Any]) -> Row:
    out: Row = {}
    for name, value in row.items():
        if isinstance(value, datetime):
            value = format_ts(value)
        elif isinstance(value, uuid.UUID):
            value = str(value)
        elif isinstance(value, dict | list):
            value = dumps(value)
        out[name] = value
    return out


class PostgresEndpoint(Endpoint):
    """One connection holding one transaction, as a role that bypasses row-level security."""

    Q = Q
    _canonical = staticmethod(_canonical)

    def _stream(self, table: str) -> Iterator[Any]:
        # A server-side cursor streams large tables instead of loading them whole.
        with self._conn.cursor(name=f"lorestore_{table}") as cursor:
            cursor.itersize = _ITERSIZE
            cursor.execute(Q[f"select_{table}"])
            yield from cursor

    def _insert_rows(self, query: str, rows: Sequence[Row]) -> None:
        # The batch in one statement: its counting triggers (migration 0033) run once.
        self._conn.execute(query, {"rows": rows_json(rows)})

    def _refusals(self, table: str) -> AbstractContextManager[None]:
        return _translated(table)

    def _transaction(self) -> Transaction:
        return PostgresTransaction(self._conn, write=True)

    def lock_audit_chains(self, owners: Iterable[str]) -> None:
        self._conn.execute(Q["lock_audit_chains"], {"owners": list(owners)})

    def finish(self, *, commit: bool) -> None:
        if commit:
            self._conn.commit()
        else:
            self._conn.rollback()


@contextmanager
def _translated(table: str) -> Iterator[None]:
    """Database refusals as lorestore errors naming the table, so the CLI can explain them."""
    try:
        yield
    except pg_errors.InsufficientPrivilege as exc:
        raise LorestoreError(
            "config_error",
            f"the role may not use {table}: {exc.diag.message_primary}",
            hint=_BYPASS_HINT,
        ) from exc
    except psycopg.Error as exc:
        if exc.sqlstate in CAPS:
            raise LorestoreError(
                "cap_exceeded",
                (exc.diag.message_primary or "").removeprefix("cap_exceeded: "),
                hint=TARGET_CAP_HINT,
                details={"cap": CAPS[exc.sqlstate]},
            ) from exc
        code = "conflict" if isinstance(exc, psycopg.IntegrityError) else "internal"
        raise LorestoreError(
            code,
            f"PostgreSQL refused {table}: {exc.diag.message_primary or exc}",
            details={"table": table, "detail": exc.diag.message_detail},
        ) from exc


def connect(url: str, *, write: bool) -> PostgresEndpoint:
    """Connect and refuse, before anything moves, a role that row-level security confines
    or a database without the current lorestore schema."""
    try:
        conn = psycopg.connect(url, row_factory=dict_row, connect_timeout=10)
    except psycopg.Error as exc:
        raise LorestoreError(
            "config_error",
            f"cannot connect to PostgreSQL ({describe(url)[0]}): {exc}",
            hint="check the URL, and that the server accepts this role",
        ) from exc
    try:
        _require_bypass(conn, url)
        check_migrations(conn)
        conn.rollback()
        if not write:
            conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            conn.read_only = True
    except BaseException:
        conn.close()
        raise
    return PostgresEndpoint(conn)


def _require_bypass(conn: psycopg.Connection[dict[str, Any]], url: str) -> None:
    row = conn.execute(
        "SELECT current_user AS role, rolsuper OR rolbypassrls AS bypass "
        "FROM pg_roles WHERE rolname = current_user"
    ).fetchone()
    if row is None or not row["bypass"]:
        role = row["role"] if row else "this role"
        raise LorestoreError(
            "config_error",
            f"{describe(url)[0]} connects as {role}, which row-level security confines to its "
            "own tenants; migrate copies every tenant",
            hint=_BYPASS_HINT,
        )
