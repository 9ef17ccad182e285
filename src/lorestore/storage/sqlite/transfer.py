"""The embedded store as one side of ``lorestore migrate``: a raw connection holding one
transaction (a read snapshot for a source, the write lock for a target), speaking rows in the
canonical form of ``storage/transfer.py``."""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from lorestore.core.errors import TARGET_CAP_HINT, LorestoreError
from lorestore.core.jsontext import dumps
from lorestore.storage import migrations
from lorestore.storage.protocol import Transaction
from lorestore.storage.queries import load_queries
from lorestore.storage.reconciliation import Row
from lorestore.storage.sqlite.dialect import SQLiteTransaction
from lorestore.storage.sqlite.errors import BUSY_TIMEOUT_MS, cap_refused
from lorestore.storage.sqlite.ledger import PACKAGE
from lorestore.storage.sqlite.store import SQLiteStore
from lorestore.storage.transfer import Endpoint

Q = load_queries("lorestore.storage.sqlite", "transfer.sql")
# SQLite keeps JSON as text and booleans as 0/1; the canonical form has canonical JSON text
# and real booleans, as PostgreSQL's side produces them.
_JSON = frozenset(
    [
        "tags",
        "source",
        "depends_on",
        "review",
        "ext",
        "detail",
        "context",
        "offered",
        "held",
        "scopes",
        "orgs",
        "record",
    ]
)
_BOOLEAN = frozenset({"require_review"})


def _canonical(row: sqlite3.Row) -> Row:
    out: Row = {}
    for name in row.keys():  # noqa: SIM118 - sqlite3.Row iterates values, not names
        value = row[name]
        if name in _JSON and value is not None:
            value = dumps(json.loads(value))
        elif name in _BOOLEAN:
            value = bool(value)
        out[name] = value
    return out


class SQLiteEndpoint(Endpoint):
    """One file, one connection, one transaction; ``scratch`` is a directory to remove on
    close (a dry run's copy)."""

    Q = Q
    _canonical = staticmethod(_canonical)

    def __init__(self, path: Path, *, write: bool, scratch: Path | None = None) -> None:
        self._scratch = scratch
        conn = sqlite3.connect(str(path), isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
        super().__init__(conn)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA foreign_keys = ON")
        # A target takes the write lock up front so that what it reads first (chain heads,
        # addresses, tombstones) stays true until it commits.
        conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")

    def _insert_rows(self, query: str, rows: Sequence[Row]) -> None:
        self._conn.executemany(query, rows)

    def _transaction(self) -> Transaction:
        return SQLiteTransaction(self._conn)

    @contextmanager
    def _refusals(self, table: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.IntegrityError as exc:
            refused = cap_refused(exc)
            if refused is not None:
                raise LorestoreError(
                    "cap_exceeded",
                    f"an owner would pass its cap in the target ({refused.message})",
                    hint=TARGET_CAP_HINT,
                    details=refused.details,
                ) from exc
            raise LorestoreError(
                "conflict", f"SQLite refused {table}: {exc}", details={"table": table}
            ) from exc

    def applied_migrations(self) -> dict[int, tuple[str, str]]:
        rows = self._conn.execute(Q["applied_migrations"]).fetchall()
        return {int(r["number"]): (str(r["name"]), str(r["checksum"])) for r in rows}

    def lock_audit_chains(self, owners: Iterable[str]) -> None:
        """Nothing to add: BEGIN IMMEDIATE already holds the only write lock."""

    def finish(self, *, commit: bool) -> None:
        if self._conn.in_transaction:
            self._conn.execute("COMMIT" if commit else "ROLLBACK")

    def close(self) -> None:
        super().close()
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)


def open_source(path: Path) -> SQLiteEndpoint:
    """An existing store, read as it is: a source is never created or migrated."""
    if not path.is_file():
        raise LorestoreError(
            "config_error",
            f"there is no SQLite store at {path}",
            hint="check the --from path; a source must exist",
        )
    endpoint = SQLiteEndpoint(path, write=False)
    try:
        _check_current(endpoint, path)
    except BaseException:
        endpoint.close()
        raise
    return endpoint


def _check_current(endpoint: SQLiteEndpoint, path: Path) -> None:
    try:
        applied = endpoint.applied_migrations()
    except sqlite3.DatabaseError as exc:
        raise LorestoreError(
            "config_error",
            f"{path} is not a lorestore store ({exc})",
            hint="--from names a lorestore.db file",
        ) from exc
    migrations.require_current(
        PACKAGE,
        applied,
        what=str(path),
        hint=f"open it once with this lorestore (e.g. LORESTORE_DATABASE_URL=sqlite:///{path} "
        "lorestore scopes) to bring it up to date, then migrate",
    )


def open_target(path: Path, *, dry_run: bool) -> SQLiteEndpoint:
    """The target file, created and migrated as any lorestore command would; for a dry run,
    a scratch copy of it instead, so that not even the migrations touch the real file."""
    if not dry_run:
        SQLiteStore(path).close()
        return SQLiteEndpoint(path, write=True)
    scratch = Path(tempfile.mkdtemp(prefix="lorestore-dry-run-"))
    copy = scratch / "lorestore.db"
    try:
        if path.is_file():
            _backup(path, copy)
        SQLiteStore(copy).close()
        return SQLiteEndpoint(copy, write=True, scratch=scratch)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise


def _backup(path: Path, copy: Path) -> None:
    original, duplicate = sqlite3.connect(str(path)), sqlite3.connect(str(copy))
    try:
        original.backup(duplicate)
    finally:
        original.close()
        duplicate.close()
