"""Several processes (one MCP server per agent) writing one database file at once."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from lorestore.auth.actor import local_actor
from lorestore.core.audit import check_chain, first_break
from lorestore.core.errors import LorestoreError
from lorestore.models import ListParams, NoParams, ReadParams, WriteParams
from lorestore.service import LessonService
from lorestore.storage.sqlite import SQLiteStore

WRITERS = 4
PER_WRITER = 500


def _writer(path: str, writer: int, start: multiprocessing.synchronize.Event) -> None:  # type: ignore[name-defined]
    service = LessonService(SQLiteStore(path))
    actor = local_actor(session=f"writer-{writer}")
    start.wait()
    for i in range(PER_WRITER):
        scope = "global" if i % 5 == 0 else f"repo::acme/svc{i % 3}"
        service.memory_write(
            actor,
            WriteParams(
                scope=scope, key=f"w{writer}-{i}", value=f"lesson {i} from writer {writer}"
            ),
        )
        # Every writer also bumps one shared lesson: contended read-modify-write.
        if i % 50 == 0:
            service.memory_write(
                actor, WriteParams(scope="global", key="shared", value=f"shared {writer} {i}")
            )
    service.store.close()


@pytest.mark.slow
def test_four_processes_write_500_each_without_loss(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    SQLiteStore(path).close()  # migrate once up front, as `lorestore` does on first use
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    procs = [ctx.Process(target=_writer, args=(str(path), w, start)) for w in range(WRITERS)]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(timeout=300)
        assert p.exitcode == 0

    store = SQLiteStore(path)
    service = LessonService(store)
    counts = service.memory_scopes(local_actor(), NoParams()).scopes
    assert sum(c.active for c in counts) == WRITERS * PER_WRITER + 1
    keys: set[str] = set()
    for scope in (c.scope for c in counts):
        cursor = None
        while True:
            page = service.memory_list(
                local_actor(), ListParams(scope=scope, limit=200, cursor=cursor)
            )
            keys |= {lesson.key for lesson in page.lessons}
            if not (cursor := page.next_cursor):
                break
    assert keys == {f"w{w}-{i}" for w in range(WRITERS) for i in range(PER_WRITER)} | {"shared"}
    with store.transaction(write=False, actor="user:local") as tx:
        shared = tx.lesson_at("user:local", "global", "shared")
        assert shared is not None
        assert len(tx.versions(shared.pk, shared.lesson.id)) == shared.lesson.version == 40
        assert first_break(tx.audit_chain("user:local")) is None
        head = tx.audit_head("user:local")  # the head kept pace with every writer
        assert check_chain(tx.audit_chain("user:local"), head).faults == ()
    assert store.integrity_check() == "ok"
    store.close()


@pytest.mark.slow
def test_first_open_by_racing_processes_migrates_once(tmp_path: Path) -> None:
    path = tmp_path / "fresh.db"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=SQLiteStore, args=(str(path),)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    store = SQLiteStore(path)
    assert store.applied == [] and store.integrity_check() == "ok"
    store.close()


def test_a_held_write_lock_blocks_neither_opening_nor_reading(tmp_path: Path) -> None:
    path = tmp_path / "locked.db"
    first = LessonService(SQLiteStore(path))
    first.memory_write(local_actor(), WriteParams(scope="global", key="k", value="v"))
    first.store.close()
    other = sqlite3.connect(path, isolation_level=None)  # another process's long import
    other.execute("BEGIN IMMEDIATE")
    try:
        store = SQLiteStore(path)  # opening takes no write lock when nothing is to migrate
        service = LessonService(store)
        read = service.memory_read(local_actor(), ReadParams(scope="global", key="k"))
        assert read.lesson.value == "v"  # the positive control: readers are never blocked
        store._conn.execute("PRAGMA busy_timeout = 50")  # not 30 s of waiting in a test
        with pytest.raises(LorestoreError) as busy:
            service.memory_write(local_actor(), WriteParams(scope="global", key="k2", value="w"))
        assert busy.value.code == "busy" and busy.value.hint  # not a traceback
    finally:
        other.execute("ROLLBACK")
        other.close()
    written = service.memory_write(local_actor(), WriteParams(scope="global", key="k2", value="w"))
    assert written.result == "created"  # once the lock is gone, the same write lands
    store.close()
