"""PostgreSQL implementation of the Store protocol: the connection pool and its transactions.

Connects as the application role, which owns nothing and cannot bypass row-level security.
Each transaction first binds its actor with ``set_config('lorestore.actor', ..., true)``;
the policies read that setting, so a query that forgot its owner filter still sees only
the actor's tenants. The primitives inside a transaction are ``dialect.PostgresTransaction``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress

import psycopg
from psycopg.abc import AdaptContext, Buffer
from psycopg.adapt import Loader
from psycopg.pq import TransactionStatus
from psycopg.rows import dict_row
from psycopg.types.datetime import TimestamptzLoader
from psycopg.types.string import TextLoader
from psycopg_pool import ConnectionPool

from lorestore.core.errors import LorestoreError
from lorestore.core.timestamps import format_ts
from lorestore.semantic.index import Vectors
from lorestore.storage.postgres.dialect import PostgresTransaction, Q, Row
from lorestore.storage.postgres.errors import translate
from lorestore.storage.sql.word_shares import WordShares

__all__ = ["PostgresStore", "PostgresTransaction"]

_OPEN = (TransactionStatus.INTRANS, TransactionStatus.INERROR)


class _CanonicalTime(Loader):
    """A timestamptz as lorestore's canonical text (core/timestamps.py:
    ``2026-11-30T12:00:00.000000Z``), as SQLite stores it, from the server's text in the
    session's UTC (``2026-11-30 12:00:00+00``; PostgreSQL drops a fraction's trailing zeros).
    Anything else (an offset, a year past 9999, infinity) goes through a datetime."""

    def __init__(self, oid: int, context: AdaptContext | None = None) -> None:
        super().__init__(oid, context)
        self._datetime = TimestamptzLoader(oid, context)

    def load(self, data: Buffer) -> str:
        text = bytes(data).decode()
        if len(text) < 22 or text[10] != " " or text[19] not in ".+" or text[-3:] != "+00":
            return format_ts(self._datetime.load(data))
        clock = text[11:-3]
        if len(clock) == 8:
            return f"{text[:10]}T{clock}.000000Z"
        return f"{text[:10]}T{clock.ljust(15, '0')}Z"


def _rows_as_text(conn: psycopg.Connection[Row]) -> None:
    """jsonb and timestamptz columns arrive as text, as SQLite's do: JSON decoded only where a
    value is used (storage/rows.py, json_field), times in their canonical form (building a
    datetime for every time of every row, then its text, took a recall at 100k lessons about a
    millisecond: it reads 150-200 lesson rows of five times each and offers a dozen). The
    session's time zone is UTC, which the times are written in and the queries name."""
    conn.execute("SET TIME ZONE 'UTC'")
    conn.adapters.register_loader("jsonb", TextLoader)
    conn.adapters.register_loader("timestamptz", _CanonicalTime)


class PostgresStore:
    """A lesson store in PostgreSQL, reached through a connection pool as the app role."""

    def __init__(
        self, url: str, *, min_size: int = 1, max_size: int = 10, semantic: bool = True
    ) -> None:
        self.url = url
        # A call waits on the server with the GIL released; more calls at once than pooled
        # connections would only wait for one.
        self.concurrent_calls = max_size
        # Hybrid retrieval's model and vector index; None without the extra or switched off.
        self.vectors = Vectors.open(semantic)
        self.word_shares = WordShares()  # search's and recall's word counts, kept a while
        self._pool: ConnectionPool[psycopg.Connection[Row]] = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            # Autocommit: each transaction sends its own BEGIN inside a pipeline (below), where
            # psycopg's implicit one would wait for the server's answer first.
            kwargs={"row_factory": dict_row, "autocommit": True},
            configure=_rows_as_text,
            open=False,
        )
        try:
            # One connection first: a server that is down or a wrong URL is said at once, with
            # PostgreSQL's own reason, not after the pool's retries (each a logged warning).
            psycopg.connect(url, connect_timeout=10).close()
            self._pool.open(wait=True, timeout=10)
        except psycopg.Error as exc:
            raise LorestoreError(
                "config_error",
                f"cannot connect to PostgreSQL: {exc}",
                hint="check LORESTORE_DATABASE_URL; `lorestore db init` prints the app URL",
            ) from exc
        self._registered: set[str] = set()
        self._check_schema()

    def role_bypassing_rls(self) -> str | None:
        """The connected role's name when it is a superuser or has BYPASSRLS (row-level
        security would then filter nothing: every tenant's rows reach every caller); None
        for a role the policies bind, as the app role is."""
        with self._pool.connection() as conn:
            row = conn.execute(
                "SELECT current_user AS role, rolsuper OR rolbypassrls AS bypasses "
                "FROM pg_roles WHERE rolname = current_user"
            ).fetchone()
        return str(row["role"]) if row and row["bypasses"] else None

    def _check_schema(self) -> None:
        from lorestore.storage.postgres.setup import check_migrations

        with self._pool.connection() as conn:
            check_migrations(conn)

    @contextmanager
    def transaction(
        self,
        *,
        write: bool,
        actor: str | None = None,
        meanwhile: Callable[[], None] | None = None,
        single: bool = False,
    ) -> Iterator[PostgresTransaction]:
        """One transaction as ``actor`` (``set_actor``: what row-level security reads).
        ``meanwhile`` runs after the commit (see ``Store.transaction``).

        The statements are pipelined: each is sent at once and the client waits on the
        server only where it needs an answer (a row read, a key returned, a count of rows
        changed) and once at the end, for the COMMIT; reads sent together are answered after
        one wait (``SQLBase._all_at_once``), and a read asked for early (``SQLBase._ask``)
        comes with the next wait. A created lesson, fourteen round trips statement by
        statement (BEGIN, twelve statements, COMMIT), waits three times; the statements,
        the policies they run under and what they leave are the same. A statement that
        fails is reported at the next wait (at the latest by the COMMIT) and the whole
        transaction is rolled back."""
        if single:  # one read statement, no actor: it runs alone in autocommit
            if write or actor is not None:
                raise ValueError("a single-statement read writes nothing and binds no actor")
            with self._pool.connection() as conn, translate():
                yield PostgresTransaction(conn, write=False)
            return
        register = write and actor is not None and actor not in self._registered
        with self._pool.connection() as conn, translate():
            try:
                with conn.pipeline() as pipeline:
                    conn.execute("BEGIN")
                    conn.execute(Q["set_actor"], {"actor": actor or ""})
                    if register:
                        conn.execute(Q["register_actor"])
                    tx = PostgresTransaction(conn, write=write, pipeline=pipeline)
                    tx._vectors = self.vectors
                    # Word counts cover the lessons row-level security lets the actor read.
                    tx._word_shares, tx._reader = self.word_shares, actor or ""
                    yield tx
                    conn.execute("COMMIT")
            except BaseException:
                # A failed statement leaves the transaction aborted, and a ROLLBACK queued
                # behind it in the pipeline would be skipped: end it now, outside the
                # pipeline. psycopg's rollback also forgets its prepared statements, which
                # an aborted pipeline may have left it believing the server holds.
                if conn.info.transaction_status in _OPEN:
                    with suppress(psycopg.Error):  # a broken connection: the pool drops it
                        conn.rollback()
                raise
        if register:
            self._registered.add(str(actor))
        if meanwhile is not None:
            meanwhile()

    def flush_erased(self) -> None:
        """Deleted tuples are removed by (auto)vacuum; nothing is kept in a side log we own."""

    def bulk_load(self) -> AbstractContextManager[None]:
        """Nothing to tune: each import batch is one transaction like any other."""
        return nullcontext()

    def close(self) -> None:
        self._pool.close()
