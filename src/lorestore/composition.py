"""The composition root: turns Settings into a store and a service for an entry point."""

from __future__ import annotations

from lorestore.config import Settings
from lorestore.service import LessonService
from lorestore.storage.sqlite import SQLiteStore


def build_service(settings: Settings) -> LessonService:
    store = SQLiteStore(settings.sqlite_path)
    return LessonService(store, corroborate_at=settings.corroborate_at)
