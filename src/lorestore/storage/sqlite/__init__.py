"""The embedded backend: one SQLite file in WAL mode with FTS5, safe for several processes."""

from lorestore.storage.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore"]
