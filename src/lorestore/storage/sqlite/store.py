"""SQLite implementation of the Store protocol: the connection, its transactions and their
commit, migration on open, and the settings of a bulk import.

One connection per store object, in autocommit mode with explicit transactions: a write
transaction starts with ``BEGIN IMMEDIATE`` so concurrent writers (one MCP server per agent)
queue on the busy timeout instead of failing half-way; WAL lets readers proceed meanwhile.
The primitives inside a transaction are ``dialect.SQLiteTransaction``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from pathlib import Path

from lorestore.core.timestamps import format_ts
from lorestore.semantic.index import Vectors
from lorestore.storage import migrations
from lorestore.storage.sql.word_shares import WordShares
from lorestore.storage.sqlite.bulk import FTS_AUTOMERGE, BulkLoad, fts_automerge, set_fts_automerge
from lorestore.storage.sqlite.dialect import Q, SQLiteTransaction
from lorestore.storage.sqlite.errors import (
    BUSY_TIMEOUT_MS,
    cap_refused,
    foreign,
    replaced,
    store_error,
    unusable,
)
from lorestore.storage.sqlite.files import create_private, warn_if_shared
from lorestore.storage.sqlite.ledger import PACKAGE, SQLiteLedger

__all__ = ["BUSY_TIMEOUT_MS", "Q", "SQLiteStore", "SQLiteTransaction"]
LOG = logging.getLogger("lorestore.storage")


def _null(value: None) -> None:
    return value


# The sqlite3 module binds None only after looking for an adapter of it and failing twice
# to find one on the parameter's protocol and on None itself, raising and clearing an
# AttributeError each time: most of the cost of a row with a few NULLs (an import binds
# ten a lesson). Registered, the adapter is found at once; it returns None, which binds
# NULL exactly as before. The registry is the sqlite3 module's, for the whole process, and
# this adapter changes nothing any caller binds.
sqlite3.register_adapter(type(None), _null)
CACHE_KIB = 32 * 1024


def _identity(path: Path) -> tuple[int, int] | None:
    """The file at ``path`` (device and inode), None when there is none."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


class SQLiteStore:
    """A lesson store in one SQLite file; migrates it on open."""

    # A call on this store is Python holding the GIL nearly throughout (SQLite runs in
    # process): more threads than two only contend for it. 16 clients reading, one server:
    # 1,376-1,438 req/s with anyio's default 40 threads, 1,556-1,664 with two
    # (docs/benchmarks.md, "HTTP load"). Two, not one: a write waiting on its commit's fsync
    # leaves the other thread to readers.
    concurrent_calls = 2

    def __init__(self, path: str | Path, *, semantic: bool = True) -> None:
        self.path = Path(path)
        # Hybrid retrieval's model and vector index; None without the extra or switched off.
        self.vectors = Vectors.open(semantic)
        self.word_shares = WordShares()  # search's and recall's word counts, kept a while
        self._lock = threading.RLock()
        try:
            if str(path) != ":memory:":
                create_private(self.path)
                warn_if_shared(self.path)
            self._conn = sqlite3.connect(
                str(path),
                isolation_level=None,
                check_same_thread=False,
                timeout=BUSY_TIMEOUT_MS / 1000,
            )
        except (OSError, sqlite3.Error) as exc:
            raise unusable(path, exc) from exc
        try:
            self._open()
        except (OSError, sqlite3.Error) as exc:
            self._conn.close()
            raise unusable(path, exc) from exc
        except BaseException:
            self._conn.close()
            raise
        self._registered: set[str] = set()
        self._bulk = BulkLoad(self._conn, self._lock)
        # Absolute: the check below must not depend on the working directory of the moment.
        self._where = Path(os.path.abspath(path))
        self._file = None if str(path) == ":memory:" else _identity(self._where)

    def _open(self) -> None:
        """Set the connection up and migrate the file; an unusable file raises here."""
        self._refuse_foreign()
        self._conn.row_factory = sqlite3.Row
        self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        self._write_ahead_log()
        self._conn.execute("PRAGMA synchronous = NORMAL")
        # Up to 32 MiB of page cache (SQLite's default is 2 MiB): the indexes that recall,
        # search and list walk at 100k lessons do not fit in 2 MiB. Memory is taken as pages
        # are read, per open store.
        self._conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        self._conn.execute("PRAGMA foreign_keys = ON")
        # A hard delete must erase content from the file, not just unlink its pages.
        self._conn.execute("PRAGMA secure_delete = ON")
        self.applied = self._migrate()
        self._check_audit_heads()
        if fts_automerge(self._conn) != FTS_AUTOMERGE:  # an import died before turning it on
            set_fts_automerge(self._conn, FTS_AUTOMERGE)
        self._conn.execute(Q["lesson_docs"])

    def _write_ahead_log(self) -> None:
        """Switch the file to WAL. The switch takes the file's exclusive lock, and first opens
        racing for a new file can deadlock on it, which SQLite ends by failing one of them at
        once, without its busy handler: that one tries again, until the busy timeout."""
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        while True:
            try:
                self._conn.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise
                time.sleep(0.01)

    def _check_audit_heads(self) -> None:
        """Warn when an owner's audit head is not its last stored event: the newest events
        were deleted. One indexed row per owner, so every open can afford it; the full check
        (every link, every count) is `lorestore audit verify`'s, which exits 1 on it."""
        for row in self._conn.execute(Q["audit_heads_behind"]):
            LOG.warning(
                "the audit chain of %s does not end at its head (%d events): events were "
                "deleted from %s; `lorestore audit verify` reports what is missing",
                row["owner"],
                row["events"],
                self.path,
            )

    def _refuse_foreign(self) -> None:
        """Refuse, before anything is written, a SQLite file that holds tables but not
        lorestore's: another program's database must not gain lorestore's schema (nor be
        switched to WAL) because a path pointed at it."""
        names = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master")}
        if names and "schema_migrations" not in names:
            raise foreign(self.path, names)

    def _migrate(self) -> list[migrations.Migration]:
        with self._lock:
            return migrations.migrate(SQLiteLedger(self._conn), PACKAGE)

    @contextmanager
    def transaction(
        self,
        *,
        write: bool,
        actor: str | None = None,
        meanwhile: Callable[[], None] | None = None,
        single: bool = False,
    ) -> Iterator[SQLiteTransaction]:
        """One transaction. There is no row-level security in SQLite: the service's owner
        filters are the boundary (one machine, one trust domain). See ``Store.transaction``
        for ``meanwhile`` and ``single`` (a BEGIN costs SQLite no round trip: a single
        statement's transaction is an ordinary one here)."""
        if single and (write or actor is not None):
            raise ValueError("a single-statement read writes nothing and binds no actor")
        with self._lock:
            if write and self._file is not None and _identity(self._where) != self._file:
                raise replaced(self.path)
            try:
                self._conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            except sqlite3.OperationalError as exc:
                raise store_error(exc) from exc
            try:
                tx = SQLiteTransaction(self._conn, self._bulk)
                tx._vectors = self.vectors
                tx._word_shares = self.word_shares  # one reader: every lesson of the file
                register = write and actor is not None and actor not in self._registered
                if register:
                    tx.ensure_principal(str(actor), format_ts(datetime.now(UTC)))
                yield tx
            except sqlite3.IntegrityError as exc:
                self._conn.execute("ROLLBACK")
                refused = cap_refused(exc)
                if refused is not None:
                    raise refused from exc
                raise
            except sqlite3.DatabaseError as exc:
                self._rollback()
                if isinstance(exc, sqlite3.ProgrammingError):
                    raise  # a bug of ours, not the database's
                raise store_error(exc) from exc
            except BaseException:
                self._rollback()
                raise
            try:
                self._commit(meanwhile)
            except sqlite3.DatabaseError as exc:
                self._rollback()
                raise store_error(exc) from exc
            if register:
                self._registered.add(str(actor))

    def _commit(self, meanwhile: Callable[[], None] | None) -> None:
        """COMMIT; with ``meanwhile``, in a thread of its own while ``meanwhile`` runs here.
        SQLite writes the pages (and checkpoints) without holding the interpreter, so a
        large import reads its next batch during the last one's commit. The store's lock
        stays held by this thread throughout: nothing else uses the connection meanwhile."""
        if meanwhile is None:
            self._conn.execute("COMMIT")
            return
        failed: list[BaseException] = []

        def commit() -> None:
            try:
                self._conn.execute("COMMIT")
            except BaseException as exc:
                failed.append(exc)

        worker = threading.Thread(target=commit, name="lorestore-commit")
        worker.start()
        try:
            meanwhile()
        finally:
            worker.join()
            if failed:  # the commit's failure is the one to report
                raise failed[0]

    def _rollback(self) -> None:
        """Roll back what is open; a rollback that fails too (a vanished disk) leaves SQLite
        to roll back at the next open, and the first error is the one reported."""
        if self._conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")

    def bulk_load(self) -> AbstractContextManager[None]:
        """See ``BulkLoad``: a bigger page cache and fewer checkpoints while importing."""
        return self._bulk.session()

    def flush_erased(self) -> None:
        # Old page images of erased rows live in the WAL until a checkpoint copies the
        # zeroed pages back and truncates it.
        with self._lock:
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def integrity_check(self) -> str:
        with self._lock:
            row = self._conn.execute("PRAGMA integrity_check").fetchone()
            return str(row[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()
