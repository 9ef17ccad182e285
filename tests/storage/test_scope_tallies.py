"""The counters of migration 0030 on both backends: scope_tallies (lessons per scope by state
and trust) and audit_day_counts (audit events per owner, day and action) equal a recount from
the rows after writes, revisions, reviews (verify, reject, undo, dispute), archive, restore,
delete, purge, expiry and its sweep, imports, and a copy by `lorestore migrate`; the
inventory and the chart read from them say what a count over every row says; an older store
gets them backfilled by the migration. The same of recall_day_counts (recalls and the lessons
they held per owner and day; SQLite migration 0032, PostgreSQL 0037), through recalls on
several days and the recall log's retention sweep."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from tests.conftest import Clock, app_connection
from tests.migrating import ALICE, BOB, LOCAL, TEAM, _select, admin_of, pg_url, seed, write
from tests.pg import Pool, Template, undo_0033
from tests.portable import header, import_lines, lesson, line
from typer.testing import CliRunner

from lorestore.cli.main import app
from lorestore.models import (
    ActivityParams,
    ChangeParams,
    DeleteParams,
    NoParams,
    PurgeParams,
    RecallParams,
    RejectParams,
)
from lorestore.service import LessonService
from lorestore.service.maintenance import Maintenance, SweepPlan
from lorestore.storage.postgres import PostgresStore
from lorestore.storage.postgres.setup import init_database
from lorestore.storage.protocol import Store
from lorestore.storage.sqlite import SQLiteStore

TRUST = ("candidate", "corroborated", "verified", "disputed")
COLUMNS = ("archived", "rejected", *TRUST)
# The owners each actor reads (ALICE and BOB are members of org:acme after seed).
READS = {LOCAL: {"user:local"}, ALICE: {"user:alice", "org:acme"}, BOB: {"user:bob", "org:acme"}}


def _column(row: dict[str, Any]) -> str:
    if row["status"] == "archived":
        return "archived"
    return str(row["trust"])


def _day(at: Any) -> str:
    if isinstance(at, datetime):
        return at.astimezone(UTC).strftime("%Y-%m-%d")
    return str(at)[:10]


def _iso(at: Any) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ") if isinstance(at, datetime) else at


def tallies_recounted(store: Store) -> dict[tuple[str, str], dict[str, int]]:
    counted: dict[tuple[str, str], Counter[str]] = {}
    for row in _select(store, "lessons"):
        counted.setdefault((row["owner"], row["scope"]), Counter())[_column(row)] += 1
    return {k: {c: n[c] for c in COLUMNS} for k, n in counted.items()}


def tallies_kept(store: Store) -> dict[tuple[str, str], dict[str, int]]:
    return {
        (r["owner"], r["scope"]): {c: r[c] for c in COLUMNS}
        for r in _select(store, "scope_tallies")
    }


def days_recounted(store: Store) -> dict[tuple[str, str, str], int]:
    return dict(
        Counter((r["owner"], _day(r["at"]), r["action"]) for r in _select(store, "audit_log"))
    )


def days_kept(store: Store) -> dict[tuple[str, str, str], int]:
    return {
        (r["owner"], r["day"], r["action"]): r["events"] for r in _select(store, "audit_day_counts")
    }


def recall_days_recounted(store: Store) -> dict[tuple[str, str], tuple[int, int]]:
    counted: dict[tuple[str, str], tuple[int, int]] = {}
    for row in _select(store, "recall_log"):
        held = row["held"]
        held = len(json.loads(held) if isinstance(held, str) else held)
        recalls, before = counted.get((row["owner"], _day(row["at"])), (0, 0))
        counted[(row["owner"], _day(row["at"]))] = (recalls + 1, before + held)
    return counted


def recall_days_kept(store: Store) -> dict[tuple[str, str], tuple[int, int]]:
    return {
        (r["owner"], r["day"]): (r["recalls"], r["held"])
        for r in _select(store, "recall_day_counts")
    }


def inventory_recounted(store: Store, owners: set[str], now: str) -> list[dict[str, Any]]:
    """What the inventory said when it counted every lesson (migration 0029's GROUP BY)."""
    counted: dict[tuple[str, str], Counter[str]] = {}
    for row in _select(store, "lessons"):
        if row["owner"] not in owners:
            continue
        n = counted.setdefault((row["owner"], row["scope"]), Counter())
        expires = row["expires_at"]
        expired = expires is not None and _iso(expires) <= now
        if row["status"] == "archived":
            n["archived"] += 1
        elif row["trust"] == "rejected":
            n["rejected"] += 1
        elif expired:
            n["expired"] += 1
        else:
            n["active"] += 1
            n[row["trust"]] += 1
    return [
        {
            "owner": owner,
            "scope": scope,
            **{b: n[b] for b in ("active", "archived", "expired", "rejected")},
            "trust": {t: n[t] for t in TRUST},
        }
        for (owner, scope), n in sorted(counted.items(), key=lambda kv: (kv[0][1], kv[0][0]))
    ]


def assert_counted(store: Store, service: LessonService) -> None:
    assert tallies_kept(store) == tallies_recounted(store)
    assert days_kept(store) == days_recounted(store)
    assert recall_days_kept(store) == recall_days_recounted(store)
    now = service._now()
    for actor, owners in READS.items():
        listed = service.memory_scopes(actor, NoParams()).model_dump()["scopes"]
        assert listed == inventory_recounted(store, owners, now)


def run_migrate(source: str, target: str) -> None:
    result = CliRunner().invoke(app, ["migrate", "--from", source, "--to", target, "--json"])
    assert result.exit_code == 0, result.stderr or result.stdout


def seeded(store: Store, clock: Clock, tmp: Path) -> None:
    """``seed``'s records in ``store``: written through the service on SQLite; on PostgreSQL
    (where the app role may not raise a cap, as seed does) written to a SQLite file and copied
    in by ``lorestore migrate``, whose inserts the triggers count as any other."""
    if isinstance(store, SQLiteStore):
        seed(LessonService(store, clock=clock), store, clock)
        return
    source = SQLiteStore(tmp / "seed.db")
    seed(LessonService(source, clock=clock), source, clock)
    source.close()
    assert isinstance(store, PostgresStore)
    run_migrate(f"sqlite:///{tmp / 'seed.db'}", pg_url(admin_of(store.url)))


def test_counters_equal_a_recount_after_every_kind_of_change(
    store: Store, clock: Clock, tmp_path: Path
) -> None:
    service = LessonService(store, clock=clock)
    assert tallies_kept(store) == {} and days_kept(store) == {}
    seeded(store, clock, tmp_path)  # writes, revisions, reviews, archive, dispute, expiry, import
    kept = tallies_kept(store)
    assert kept[("user:local", "project::billing")]["candidate"] == 1  # expired, still counted
    assert kept[("user:bob", "repo::bob/dotfiles")]["archived"] == 1
    assert_counted(store, service)
    listed = {s.scope: s for s in service.memory_scopes(LOCAL, NoParams()).scopes}
    assert (listed["project::billing"].expired, listed["project::billing"].active) == (1, 0)
    assert listed["global"].trust["disputed"] == 1
    # Restore, reject, delete: columns move, a scope's row goes with its last lesson.
    service.memory_restore(BOB, ChangeParams(scope="repo::bob/dotfiles", key="old"))
    service.memory_reject(ALICE, RejectParams(scope=TEAM, key="lint", reason="stale"))
    write(service, LOCAL, "repo::local/only", "one", "The only lesson here.")
    assert ("user:local", "repo::local/only") in tallies_kept(store)
    service.memory_delete(LOCAL, DeleteParams(scope="repo::local/only", key="one"))
    assert ("user:local", "repo::local/only") not in tallies_kept(store)
    assert ("user:local", "global") in tallies_kept(store)  # the positive control
    assert_counted(store, service)
    # The sweeps: expired lessons, then archived ones past retention.
    service.memory_purge_expired(LOCAL, NoParams())
    assert ("user:local", "project::billing") not in tallies_kept(store)
    service.memory_archive(LOCAL, ChangeParams(scope="global", key="flaky"))
    clock.advance(days=40)
    service.memory_purge(LOCAL, PurgeParams(retention_days=30))
    assert_counted(store, service)
    # An import: active, archived and verified lessons in one file.
    lines = [
        header(),
        line(lesson("i1", "Imported one.", scope="global")),
        line(lesson("i2", "Imported two.", scope="global", status="archived")),
        line(lesson("i3", "Imported three.", scope="project::new", trust="verified")),
    ]
    result = import_lines(service, lines, LOCAL)
    assert result.lessons.added == 3, result
    assert tallies_kept(store)[("user:local", "project::new")]["verified"] == 1
    assert_counted(store, service)
    # The chart reads the per-day counters: the writes of the seed's first day are there.
    days = service.memory_activity(LOCAL, ActivityParams(days=90)).days
    assert sum(d.writes for d in days) == sum(
        n
        for (owner, _, action), n in days_recounted(store).items()
        if owner == "user:local" and action.startswith("write.")
    )


def test_the_recall_counters_follow_the_log_through_recalls_and_its_sweep(
    store: Store, clock: Clock, tmp_path: Path
) -> None:
    service = LessonService(store, clock=clock)
    seeded(store, clock, tmp_path)
    first = clock()
    for _ in range(3):  # three days of recalls by two people
        for task in ("ci", "a flaky test in the billing project"):
            service.memory_recall(LOCAL, RecallParams(repo="local/x", branch="main", task=task))
        service.memory_recall(BOB, RecallParams(repo="bob/dotfiles", task="ci"))
        clock.advance(days=1)
    kept = recall_days_kept(store)
    assert kept == recall_days_recounted(store)
    days = sorted(day for owner, day in kept if owner == "user:local")
    assert len(days) >= 3 and kept[("user:local", days[-1])][0] == 2
    assert sum(held for _, held in kept.values()) > 0  # held lessons are counted, not only recalls
    # The chart reads them: the reader's own recalls, not another person's.
    chart = service.memory_activity(LOCAL, ActivityParams(days=90)).days
    mine = {k: v for k, v in recall_days_recounted(store).items() if k[0] == "user:local"}
    assert {d.day: (d.recalls, d.held) for d in chart if d.recalls} == {
        day: n for (_, day), n in mine.items()
    }
    # The retention sweep deletes the recalls older than 30 days, and their days' counts go.
    clock.advance(days=29)
    Maintenance(service).maintain(LOCAL, SweepPlan())
    kept = recall_days_kept(store)
    assert kept == recall_days_recounted(store)
    assert ("user:local", days[-1]) in kept  # the last day's recalls are within the retention
    assert ("user:local", first.strftime("%Y-%m-%d")) not in kept
    assert not any(owner == "user:bob" and day < days[-1] for owner, day in kept)
    assert_counted(store, service)


def test_a_copy_by_migrate_counts_what_it_holds(
    tmp_path: Path, clock: Clock, pg_template: Template, pg_pool: Pool
) -> None:
    path = tmp_path / "source.db"
    original = SQLiteStore(path)
    seed(LessonService(original, clock=clock), original, clock)
    expected = tallies_kept(original)
    original.close()
    copy = SQLiteStore(tmp_path / "copy.db")
    run_migrate(f"sqlite:///{path}", f"sqlite:///{copy.path}")
    assert tallies_kept(copy) == expected == tallies_recounted(copy)
    assert_counted(copy, LessonService(copy, clock=clock))
    copy.close()
    name = pg_pool.acquire()
    try:
        run_migrate(f"sqlite:///{path}", pg_url(pg_template.admin_url(name)))
        pg = PostgresStore(pg_template.app_url(name), max_size=2)
        assert tallies_kept(pg) == expected == tallies_recounted(pg)
        assert_counted(pg, LessonService(pg, clock=clock))
        pg.close()
    finally:
        pg_pool.release(name)


def test_the_migration_backfills_an_older_store(tmp_path: Path, clock: Clock) -> None:
    store = SQLiteStore(tmp_path / "old.db")
    seed(LessonService(store, clock=clock), store, clock)
    expected_tallies, expected_days = tallies_recounted(store), days_recounted(store)
    expected_recalls = recall_days_recounted(store)
    assert expected_recalls  # the seed's recall
    store.close()
    # The store as 0029 left it: no counters, no triggers, 0030 and 0032 not recorded.
    conn = sqlite3.connect(tmp_path / "old.db", isolation_level=None)
    for trigger in ("scope_tallies_insert", "scope_tallies_update", "scope_tallies_delete",
                    "audit_day_counts_insert", "recall_day_counts_insert",
                    "recall_day_counts_delete"):  # fmt: skip
        conn.execute(f"DROP TRIGGER {trigger}")
    conn.execute("DROP TABLE scope_tallies")
    conn.execute("DROP TABLE audit_day_counts")
    conn.execute("DROP TABLE recall_day_counts")
    conn.execute("DELETE FROM schema_migrations WHERE number IN (30, 32)")
    conn.close()
    reopened = SQLiteStore(tmp_path / "old.db")  # applies 0030 and 0032 again
    assert tallies_kept(reopened) == expected_tallies
    assert days_kept(reopened) == expected_days
    assert recall_days_kept(reopened) == expected_recalls
    assert_counted(reopened, LessonService(reopened, clock=clock))
    reopened.close()


def test_the_migration_backfills_an_older_server_database(
    pg_template: Template, clock: Clock, tmp_path: Path
) -> None:
    name = pg_template.copy()
    try:
        store = PostgresStore(pg_template.app_url(name), max_size=2)
        seeded(store, clock, tmp_path)
        expected_tallies, expected_days = tallies_recounted(store), days_recounted(store)
        expected_recalls = recall_days_recounted(store)
        assert expected_recalls  # the seed's recall
        store.close()
        admin = admin_of(pg_template.app_url(name))
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute("DROP TABLE recall_day_counts")
            conn.execute("DROP FUNCTION lorestore_tally_recalls() CASCADE")  # and its triggers
            conn.execute("DELETE FROM schema_migrations WHERE number = 37")
            undo_0033(conn)  # applied again after 0030, as on an upgrade from 0029
            conn.execute("DROP TRIGGER lessons_tally ON lessons")
            conn.execute("DROP TRIGGER audit_log_tally ON audit_log")
            conn.execute("DROP TABLE scope_tallies, audit_day_counts")
            conn.execute("DROP FUNCTION lorestore_tally_lesson(), lorestore_tally_audit(),"
                         " lorestore_tally_scope(text, text, text, text, integer)")  # fmt: skip
            conn.execute("DROP STATISTICS lessons_author_association")
            conn.execute("DELETE FROM schema_migrations WHERE number = 30")
        init_database(admin)  # applies 0030, 0033 and 0037 again, as an upgrade does
        again = PostgresStore(pg_template.app_url(name), max_size=2)
        assert tallies_kept(again) == expected_tallies
        assert days_kept(again) == expected_days
        assert recall_days_kept(again) == expected_recalls
        assert_counted(again, LessonService(again, clock=clock))
        again.close()
    finally:
        pg_template.drop(name)


def test_the_app_role_reads_only_its_counters_and_writes_none(
    pg_template: Template, pg_database: str, clock: Clock, tmp_path: Path
) -> None:
    store = PostgresStore(pg_template.app_url(pg_database), max_size=2)
    seeded(store, clock, tmp_path)
    forged = (
        "UPDATE scope_tallies SET candidate = 0",
        "INSERT INTO scope_tallies (owner, scope) VALUES ('user:bob', 'global')",
        "UPDATE audit_day_counts SET events = 0",
        "UPDATE recall_day_counts SET recalls = 0",
        "DELETE FROM recall_day_counts",
    )
    with app_connection(store, "user:bob") as conn:
        owners = {r[0] for r in conn.execute("SELECT owner FROM scope_tallies")}
        assert owners == {"user:bob", "org:acme"}  # not user:alice's, nor user:local's
        days = {r[0] for r in conn.execute("SELECT owner FROM audit_day_counts")}
        assert "user:bob" in days and days <= {"user:bob", "org:acme"}
        service = LessonService(store, clock=clock)
        service.memory_recall(BOB, RecallParams(repo="bob/dotfiles", task="ci"))
        service.memory_recall(LOCAL, RecallParams(task="ci"))
        recalled = {r[0] for r in conn.execute("SELECT owner FROM recall_day_counts")}
        assert recalled == {"user:bob"}  # user:local recalled too (the control below)
        for statement in forged:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
    assert tallies_kept(store) == tallies_recounted(store)  # nothing changed
    assert recall_days_kept(store) == recall_days_recounted(store)
    assert {owner for owner, _ in recall_days_kept(store)} >= {"user:bob", "user:local"}
    store.close()
