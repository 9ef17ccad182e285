"""Migration 0031: a lesson's recalls are found through lesson_recalls, kept by triggers on
the recall log on both backends: a recall adds a row per lesson it offered or held, the
retention sweep's delete takes them away, an older store gets them backfilled, and on
PostgreSQL the app role reads its owners' rows and writes none."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg
import pytest
from tests.conftest import Clock, app_connection
from tests.migrating import _select, admin_of
from tests.pg import Template

from lorestore.auth.actor import local_actor
from lorestore.models import (
    DisputeParams,
    ReadParams,
    RecallParams,
    RecallsParams,
    WriteParams,
)
from lorestore.service import LessonService
from lorestore.service.maintenance import Maintenance, SweepPlan
from lorestore.storage.postgres import PostgresStore
from lorestore.storage.postgres.setup import init_database
from lorestore.storage.protocol import Store
from lorestore.storage.sqlite import SQLiteStore

ME = local_actor(session="recalls-1")
SINCE = "2020-01-01T00:00:00Z"
REPO = "repo::acme/app"
OTHER = "repo::acme/other"


def pairs_kept(store: Store) -> Counter[tuple[str, str, str]]:
    return Counter(
        (r["owner"], str(r["lesson_id"]), str(r["recall_id"]))
        for r in _select(store, "lesson_recalls")
    )


def pairs_of_the_log(store: Store) -> Counter[tuple[str, str, str]]:
    """What the triggers should hold: each (recall, lesson) it offered or held, once."""
    found: set[tuple[str, str, str]] = set()
    for row in _select(store, "recall_log"):
        entries: list[Any] = []
        for column in ("offered", "held"):
            value = row[column]
            entries += value if isinstance(value, list) else json.loads(value)
        found |= {(row["owner"], e["lesson_id"], str(row["recall_id"])) for e in entries}
    return Counter(found)


def recalled(service: LessonService, clock: Clock) -> dict[str, str]:
    """Two lessons of acme/app, recalled twice (the second time one is held: disputed), and
    one of acme/other recalled once, a minute apart; their ids by key."""
    for scope, key, value in [
        (REPO, "pg", "The test database listens on port 5433."),
        (REPO, "ci", "CI caches the database image between runs."),
        (OTHER, "style", "Prefer small functions with one purpose."),
    ]:
        service.memory_write(ME, WriteParams(scope=scope, key=key, value=value))
    service.memory_recall(ME, RecallParams(repo="acme/app", task="test database"))
    clock.advance(minutes=1)
    service.memory_dispute(ME, DisputeParams(scope=REPO, key="ci", reason="stale"))
    service.memory_recall(ME, RecallParams(repo="acme/app", task="database image"))
    clock.advance(minutes=1)
    service.memory_recall(ME, RecallParams(repo="acme/other", task="small functions"))
    return {
        key: service.memory_read(ME, ReadParams(scope=scope, key=key)).lesson.id
        for scope, key in [(REPO, "pg"), (REPO, "ci"), (OTHER, "style")]
    }


def test_a_lessons_recalls_come_from_the_index_with_only_its_entries(
    store: Store, clock: Clock
) -> None:
    service = LessonService(store, clock=clock)
    ids = recalled(service, clock)
    assert pairs_kept(store) == pairs_of_the_log(store) and pairs_kept(store)
    every = service.memory_recalls(ME, RecallsParams(since=SINCE)).recalls
    assert len(every) == 3  # the positive control: all three, whole
    ci = service.memory_recalls(ME, RecallsParams(since=SINCE, lesson_id=ids["ci"])).recalls
    assert [
        (r.recall_id, [e.lesson_id for e in r.offered], [e.lesson_id for e in r.held]) for r in ci
    ] == [
        (every[1].recall_id, [], [ids["ci"]]),  # held once disputed, newest first
        (every[2].recall_id, [ids["ci"]], []),
    ]
    assert ci[0].held[0].reasons  # why it was held travels with it
    style = service.memory_recalls(ME, RecallsParams(since=SINCE, lesson_id=ids["style"]))
    assert [r.recall_id for r in style.recalls] == [every[0].recall_id]  # not acme/app's
    pg = service.memory_recalls(ME, RecallsParams(since=SINCE, lesson_id=ids["pg"])).recalls
    assert [r.recall_id for r in pg] == [every[1].recall_id, every[2].recall_id]
    # The window and the limit still apply.
    clock.advance(days=2)
    assert service.memory_recalls(ME, RecallsParams(lesson_id=ids["pg"])).recalls == []
    one = service.memory_recalls(ME, RecallsParams(since=SINCE, lesson_id=ids["ci"], limit=1))
    assert len(one.recalls) == 1 and one.more


def test_the_retention_sweep_takes_a_recalls_lessons_with_it(store: Store, clock: Clock) -> None:
    service = LessonService(store, clock=clock)
    ids = recalled(service, clock)
    clock.advance(days=40)
    service.memory_recall(ME, RecallParams(repo="acme/app", task="test database"))
    Maintenance(service).maintain(local_actor(), SweepPlan())
    assert pairs_kept(store) == pairs_of_the_log(store)
    assert {recall for _, _, recall in pairs_kept(store)} == {
        str(r["recall_id"]) for r in _select(store, "recall_log")
    }  # one recall left, its lessons only
    kept = service.memory_recalls(ME, RecallsParams(since=SINCE, lesson_id=ids["pg"])).recalls
    assert len(kept) == 1


def test_the_migration_backfills_an_older_store(tmp_path: Path, clock: Clock) -> None:
    store = SQLiteStore(tmp_path / "old.db")
    recalled(LessonService(store, clock=clock), clock)
    expected = pairs_of_the_log(store)
    store.close()
    conn = sqlite3.connect(tmp_path / "old.db", isolation_level=None)
    conn.execute("DROP TRIGGER lesson_recalls_insert")
    conn.execute("DROP TRIGGER lesson_recalls_delete")
    conn.execute("DROP TABLE lesson_recalls")
    conn.execute("DELETE FROM schema_migrations WHERE number = 31")
    conn.close()
    reopened = SQLiteStore(tmp_path / "old.db")  # applies 0031 again
    assert pairs_kept(reopened) == expected and expected
    reopened.close()


def test_the_migration_backfills_an_older_server_database(
    pg_template: Template, clock: Clock
) -> None:
    name = pg_template.copy()
    try:
        store = PostgresStore(pg_template.app_url(name), max_size=2)
        recalled(LessonService(store, clock=clock), clock)
        expected = pairs_of_the_log(store)
        store.close()
        admin = admin_of(pg_template.app_url(name))
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute("DROP TRIGGER recall_log_index ON recall_log")
            conn.execute("DROP TABLE lesson_recalls")
            conn.execute("DROP FUNCTION lorestore_index_recall()")
            conn.execute("DELETE FROM schema_migrations WHERE number = 31")
        init_database(admin)  # applies 0031 again, as an upgrade does
        again = PostgresStore(pg_template.app_url(name), max_size=2)
        assert pairs_kept(again) == expected and expected
        again.close()
    finally:
        pg_template.drop(name)


def test_the_app_role_reads_its_owners_pairs_and_writes_none(
    pg_template: Template, pg_database: str, clock: Clock
) -> None:
    store = PostgresStore(pg_template.app_url(pg_database), max_size=2)
    ids = recalled(LessonService(store, clock=clock), clock)
    recall_id = str(next(iter(_select(store, "recall_log")))["recall_id"])
    forged = (
        f"INSERT INTO lesson_recalls VALUES ('user:local', 'x', now(), '{recall_id}')",
        "DELETE FROM lesson_recalls",
        "UPDATE lesson_recalls SET lesson_id = 'x'",
    )
    with app_connection(store, "user:local") as conn:
        mine = {r[0] for r in conn.execute("SELECT lesson_id FROM lesson_recalls")}
        assert set(ids.values()) <= mine  # the positive control
        for statement in forged:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
    with app_connection(store, "user:bob") as conn:
        assert conn.execute("SELECT count(*) FROM lesson_recalls").fetchone()[0] == 0
    assert pairs_kept(store) == pairs_of_the_log(store)  # nothing changed
    store.close()
