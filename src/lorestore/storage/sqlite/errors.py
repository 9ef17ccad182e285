"""Maps failures of the SQLite file to lorestore's error codes: a lock held past the busy
timeout, a disk or file gone bad, a path that is no lorestore store, a file replaced under an
open store."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from lorestore.core.errors import LorestoreError, cap_exceeded

BUSY_TIMEOUT_MS = 30_000


def cap_refused(exc: sqlite3.IntegrityError) -> LorestoreError | None:
    """The refusal of owner_stats' triggers (migration bound_owner_caps) as cap_exceeded
    naming the cap reached, or None for another integrity error."""
    text = str(exc)
    if not text.startswith("cap_exceeded"):
        return None
    return cap_exceeded("stored_bytes" if text == "cap_exceeded:stored_bytes" else "active_lessons")


def store_error(exc: sqlite3.Error) -> LorestoreError:
    """A failure of the database itself, with a stable code: the write lock held by another
    process past the busy timeout (``busy``: retry), or a disk that is full, read-only or
    gone, or a damaged file (``storage_error``)."""
    text = str(exc)
    if "locked" in text or "busy" in text:
        return LorestoreError(
            "busy",
            f"the SQLite store stayed locked by another writer for {BUSY_TIMEOUT_MS // 1000} s",
            hint="retry in a moment: a long import or purge, or another process, holds the "
            "write lock",
            details={"error": text},
        )
    return LorestoreError(
        "storage_error",
        f"the SQLite store failed: {text}",
        hint="check the disk (space, permissions) and the file: sqlite3 FILE 'PRAGMA "
        "integrity_check'",
        details={"error": text},
    )


def unusable(path: str | Path, exc: Exception) -> LorestoreError:
    """A path SQLite cannot open or a file that is not a lesson store: a configuration error,
    like an unreachable PostgreSQL (a lock held past the busy timeout is ``busy``)."""
    if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
        return store_error(exc)
    return LorestoreError(
        "config_error",
        f"cannot open the SQLite store at {path}: {exc}",
        hint="check LORESTORE_DATABASE_URL (sqlite:///PATH) or LORESTORE_HOME: the path must "
        "name a lorestore SQLite file, or a new file in a directory that can be created",
    )


def replaced(path: Path) -> LorestoreError:
    """The open store's file was deleted or replaced: SQLite would go on writing to the
    unlinked file, and every write would be lost when the process ends."""
    return LorestoreError(
        "storage_error",
        f"the SQLite store {path} was deleted or replaced while this process had it open; "
        "nothing was written",
        hint="restart the server (or command) so that it opens the file now at that path",
        details={"path": str(path)},
    )


def foreign(path: Path, names: set[str]) -> LorestoreError:
    """A SQLite file that holds tables but not lorestore's."""
    return LorestoreError(
        "config_error",
        f"{path} is a SQLite database of something else, not a lorestore store",
        hint="point LORESTORE_DATABASE_URL (sqlite:///PATH) or LORESTORE_HOME at a "
        "lorestore file, or at a path where one can be created",
        details={"path": str(path), "tables": sorted(names)[:10]},
    )
