"""The embedded store's settings while an import runs (``BulkLoad``): a bigger page cache,
fewer checkpoints, and FTS5's segment merging deferred until the import ends."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from lorestore.storage.sqlite.errors import store_error

# While an import runs: a page cache of at least 16 MiB for the indexes an import touches at
# random (the store's own is 32 MiB; SQLite's default 2 MiB), and a checkpoint every 16,000
# WAL pages (64 MiB of log at 4 KiB) instead of after every commit of more than 1,000. Both
# are bounded, whatever the file's size; both go back to what they were when the import ends.
BULK_CACHE_KIB = 16 * 1024
BULK_CHECKPOINT_PAGES = 16_000
# FTS5 merges its index segments as it goes ("automerge", 4 segments a level by default):
# during an import that is a fifth of the cost of each lesson, and work the next batch
# redoes. An import that inserts lessons turns it off (in the transaction of its first
# insert, so an import that lands nothing leaves the file as it was) and, when it ends,
# turns it back on and merges what waits, a few hundred pages a transaction. The setting
# lives in the database file, so a store that finds it off at open (an import that died)
# turns it back on.
FTS_AUTOMERGE = 4
FTS_MERGE_PAGES = 500


def set_fts_automerge(conn: sqlite3.Connection, segments: int) -> None:
    conn.execute("INSERT INTO lessons_fts (lessons_fts, rank) VALUES ('automerge', ?)", (segments,))


def fts_automerge(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT v FROM lessons_fts_config WHERE k = 'automerge'").fetchone()
    return FTS_AUTOMERGE if row is None else int(row[0])


def merge_fts(conn: sqlite3.Connection) -> None:
    """Merge the segments an import left, as automerge would have: each ``merge`` is its own
    short transaction, and one that wrote (almost) nothing means nothing is left to merge."""
    while True:
        before = conn.total_changes
        conn.execute(
            "INSERT INTO lessons_fts (lessons_fts, rank) VALUES ('merge', ?)", (FTS_MERGE_PAGES,)
        )
        if conn.total_changes - before < 2:
            return


class BulkLoad:
    """The SQLite store's settings for many large write transactions in a row (``lorestore
    import``). Imports may overlap (a server runs several): the first in sets the
    connection up, the last out puts it back and checkpoints the log it let grow."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.RLock) -> None:
        self._conn = conn
        self._lock = lock
        self._depth = 0
        self._saved: tuple[int, int] = (0, 0)
        self._merging_deferred = False

    def defer_fts_merging(self) -> None:
        """Called before lessons are inserted in bulk: during an import, from the first such
        insert on, leave FTS5's segments unmerged until the import ends."""
        if self._depth and not self._merging_deferred:
            set_fts_automerge(self._conn, 0)
            self._merging_deferred = True

    @contextmanager
    def session(self) -> Iterator[None]:
        with self._lock:
            if self._depth == 0:
                cache = int(self._conn.execute("PRAGMA cache_size").fetchone()[0])
                pages = int(self._conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0])
                self._saved = (cache, pages)
                # A negative cache_size is KiB; never make the store's own cache smaller.
                self._set(min(cache, -BULK_CACHE_KIB), BULK_CHECKPOINT_PAGES)
            self._depth += 1
        try:
            yield
        except BaseException:
            self._leave(quiet=True)  # the import's own failure is the one to report
            raise
        self._leave(quiet=False)

    def _leave(self, *, quiet: bool) -> None:
        """The last import out puts the settings back, turns FTS5's merging back on and
        merges, and checkpoints. Each step is tried even when one before failed (a full
        disk): the settings come back first, and merging left undone is done by the next
        open, which finds automerge off. A failure is ``storage_error``, unless ``quiet``."""
        with self._lock:
            self._depth -= 1
            if self._depth:
                return
            failure: sqlite3.Error | None = None
            steps: list[Callable[[], object]] = [lambda: self._set(*self._saved)]
            if self._merging_deferred:
                self._merging_deferred = False
                steps.append(lambda: set_fts_automerge(self._conn, FTS_AUTOMERGE))
                steps.append(lambda: merge_fts(self._conn))
            steps.append(lambda: self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)"))
            for step in steps:
                try:
                    step()
                except sqlite3.Error as exc:
                    failure = failure or exc
            if failure is not None and not quiet:
                raise store_error(failure) from failure

    def _set(self, cache: int, pages: int) -> None:
        # PRAGMA takes no bound parameters; both values are integers of ours.
        self._conn.execute(f"PRAGMA cache_size = {int(cache)}")
        self._conn.execute(f"PRAGMA wal_autocheckpoint = {int(pages)}")
