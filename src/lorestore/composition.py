"""The composition root: turns Settings into a store and a service for an entry point."""

from __future__ import annotations

from lorestore.config import Settings
from lorestore.service import LessonService
from lorestore.storage.protocol import Store

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def open_store(settings: Settings) -> Store:
    """The backend named by LORESTORE_DATABASE_URL: PostgreSQL (as the app role) or SQLite."""
    if settings.database_url.startswith(POSTGRES_SCHEMES):
        from lorestore.storage.postgres import PostgresStore

        return PostgresStore(settings.database_url)
    from lorestore.storage.sqlite import SQLiteStore

    return SQLiteStore(settings.sqlite_path)


def build_service(settings: Settings) -> LessonService:
    return LessonService(open_store(settings), corroborate_at=settings.corroborate_at)
