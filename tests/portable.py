"""Helpers for the portable-records tests: export and import through the service (as the CLI
and REST adapters call it), minimal valid records, and records carrying unknown fields at
every level, as another tool or a newer lorestore would write them."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.conftest import Clock
from tests.pg import Pool

from lorestore.auth.actor import Actor, local_actor
from lorestore.portable.jsonl import read_records
from lorestore.portable.models import ExportParams, ImportParams, ImportResult
from lorestore.service import LessonService
from lorestore.storage.postgres import PostgresStore
from lorestore.storage.protocol import Store
from lorestore.storage.sqlite import SQLiteStore

LOCAL = local_actor(session="s1")
T0 = "2026-01-01T12:00:00.000000Z"


def export_lines(service: LessonService, actor: Actor = LOCAL, **params: Any) -> list[bytes]:
    """The export, line by line (the header first)."""
    export = service.memory_export(actor, ExportParams(**params))
    return b"".join(export.chunks()).splitlines()


def import_lines(
    service: LessonService, lines: list[bytes], actor: Actor = LOCAL, **params: Any
) -> ImportResult:
    data = b"".join(line + b"\n" for line in lines)
    return service.memory_import(actor, ImportParams(**params), read_records([data]))


def line(record: dict[str, Any]) -> bytes:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def lesson(key: str, value: str, scope: str = "repo::acme/app", **fields: Any) -> dict[str, Any]:
    """A minimal valid lesson record, as a hand-written file would hold it."""
    return {
        "type": "lesson",
        "id": str(uuid.uuid4()),
        "scope": scope,
        "key": key,
        "value": value,
        "version": 1,
        "recorded_at": T0,
        "created_at": T0,
        "updated_at": T0,
        **fields,
    }


def header() -> bytes:
    return line({"format": "lorestore-jsonl", "version": 1, "exported_at": T0, "source": {}})


def codes(result: ImportResult) -> list[str]:
    return [p.code for p in result.problems]


@contextmanager
def open_store(
    kind: str, tmp: Path, pool: Pool | None
) -> Iterator[tuple[Store, LessonService, Clock]]:
    """An empty store of either backend (PostgreSQL: a migrated database lent by the pool,
    reached as the app role), with a service on a controllable clock."""
    clock = Clock()
    if kind == "sqlite":
        store: Store = SQLiteStore(tmp / f"{uuid.uuid4().hex}.db")
        name = None
    else:
        assert pool is not None
        name = pool.acquire()
        store = PostgresStore(pool.template.app_url(name), max_size=2)
    try:
        yield store, LessonService(store, clock=clock), clock
    finally:
        store.close()
        if name is not None and pool is not None:
            pool.release(name)
