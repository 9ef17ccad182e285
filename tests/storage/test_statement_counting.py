"""Migration 0033 on PostgreSQL: inserts and deletes are counted once per statement (its
transition table aggregated per counter key), and the counters still equal a recount from the
rows after multi-row inserts and deletes of several owners; the caps still refuse a batch that
would take an owner past them, with the same codes and messages, while a batch up to the cap
lands; and a batch insert of the store's primitives runs each counting function once."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row
from tests.conftest import Clock, app_connection
from tests.migrating import ALICE
from tests.pg import Template, admin_url, url_for

from lorestore.core.errors import LorestoreError
from lorestore.core.records import Lesson
from lorestore.models import OrgCreateParams
from lorestore.service import LessonService
from lorestore.storage.postgres import PostgresStore
from lorestore.storage.postgres.dialect import ROWS_PER_STATEMENT, PostgresTransaction
from lorestore.storage.protocol import ImportedLesson

OWNER = "user:alice"
ORG = "org:acme"
AT = "2026-01-01T12:00:00.000000Z"

# What each counter holds, read back, and the same figures counted from the rows (as the
# backfills of migrations 0025 and 0030 count them).
KEPT = {
    "owners": "SELECT owner, active_lessons, stored_bytes FROM owner_stats ORDER BY owner",
    "scopes": "SELECT owner, scope, archived, rejected, candidate, corroborated, verified,"
    " disputed FROM scope_tallies ORDER BY owner, scope",
    "days": "SELECT owner, day, action, events FROM audit_day_counts ORDER BY 1, 2, 3",
}
RECOUNTED = {
    "owners": """
        SELECT s.owner,
            (SELECT count(*) FROM lessons AS l WHERE l.owner = s.owner AND l.status = 'active')
                AS active_lessons,
            (SELECT coalesce(sum(octet_length(l.value) + octet_length(l.ext::text)), 0)
             FROM lessons AS l WHERE l.owner = s.owner)
            + (SELECT coalesce(sum(octet_length(v.value)), 0)
               FROM lesson_versions AS v WHERE v.owner = s.owner)
            + (SELECT coalesce(sum(octet_length(f.record::text)), 0)
               FROM foreign_records AS f WHERE f.owner = s.owner)
            + (SELECT coalesce(sum(octet_length(t.ext::text)), 0)
               FROM tombstones AS t WHERE t.owner = s.owner)
            + (SELECT coalesce(sum(octet_length(p.ext::text)), 0)
               FROM scope_policies AS p WHERE p.owner = s.owner) AS stored_bytes
        FROM owner_stats AS s ORDER BY s.owner""",
    "scopes": """
        SELECT owner, scope, count(*) FILTER (WHERE status = 'archived') AS archived,
            count(*) FILTER (WHERE status = 'active' AND trust = 'rejected') AS rejected,
            count(*) FILTER (WHERE status = 'active' AND trust = 'candidate') AS candidate,
            count(*) FILTER (WHERE status = 'active' AND trust = 'corroborated') AS corroborated,
            count(*) FILTER (WHERE status = 'active' AND trust = 'verified') AS verified,
            count(*) FILTER (WHERE status = 'active' AND trust = 'disputed') AS disputed
        FROM lessons GROUP BY owner, scope ORDER BY owner, scope""",
    "days": """
        SELECT owner, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, action,
            count(*) AS events
        FROM audit_log GROUP BY 1, 2, 3 ORDER BY 1, 2, 3""",
}

# One statement of 300 lessons of two owners in eight scopes, every state and trust, values of
# different lengths; then one statement of versions for them, and one of tombstones.
INSERT_LESSONS = """
INSERT INTO lessons (id, owner, scope, key, value, value_digest, trust, status, version,
    recorded_at, created_at, updated_at, ext)
SELECT gen_random_uuid(), CASE WHEN n % 3 = 0 THEN 'org:acme' ELSE 'user:alice' END,
    'repo::acme/app' || n % 4, 'key-' || n, repeat('v', n), md5(n::text),
    (ARRAY['candidate', 'corroborated', 'verified', 'disputed', 'rejected'])[1 + n % 5],
    CASE WHEN n % 7 = 0 THEN 'archived' ELSE 'active' END, 1, now(), now(), now(),
    CASE WHEN n % 2 = 0 THEN '{}' ELSE jsonb_build_object('x_n', n) END
FROM generate_series(1, 300) AS n"""
INSERT_VERSIONS = """
INSERT INTO lesson_versions (owner, lesson_pk, version, state, value, value_digest,
    recorded_at, actor)
SELECT owner, pk, 2, 'proposed', value || '!', value_digest, now(), 'user:alice' FROM lessons"""
INSERT_TOMBSTONES = """
INSERT INTO tombstones (id, owner, scope, value_digest, reason, actor, created_at, ext)
SELECT gen_random_uuid(), CASE WHEN n % 2 = 0 THEN 'org:acme' ELSE 'user:alice' END,
    'repo::acme/app0', md5('t' || n), 'wrong', 'user:alice', now(),
    jsonb_build_object('x_note', repeat('n', n))
FROM generate_series(1, 40) AS n"""
# Half of each owner's lessons in several scopes, their versions with them (the cascade).
DELETE_LESSONS = "DELETE FROM lessons WHERE right(key, 1) IN ('1', '3', '5', '7', '9')"


def counters(admin: psycopg.Connection[Any]) -> dict[str, list[tuple[Any, ...]]]:
    return {name: admin.execute(query).fetchall() for name, query in KEPT.items()}


def recounted(admin: psycopg.Connection[Any]) -> dict[str, list[tuple[Any, ...]]]:
    return {name: admin.execute(query).fetchall() for name, query in RECOUNTED.items()}


@pytest.fixture
def store(pg_template: Template, pg_database: str, clock: Clock) -> Iterator[PostgresStore]:
    """A store where user:alice owns org:acme (both may be written as alice)."""
    opened = PostgresStore(pg_template.app_url(pg_database), max_size=2)
    LessonService(opened, clock=clock).org_create(ALICE, OrgCreateParams(slug="acme", name="Acme"))
    yield opened
    opened.close()


@pytest.fixture
def admin(pg_database: str) -> Iterator[psycopg.Connection[Any]]:
    """The superuser, which reads every tenant's rows (for the recounts) and sets caps."""
    with psycopg.connect(url_for(admin_url(), pg_database), autocommit=True) as conn:
        yield conn


def _imported(n: int, value: str, owner: str = OWNER) -> ImportedLesson:
    kind, name = owner.split(":")
    lesson = Lesson(
        id=str(uuid.uuid4()),
        scope="repo::acme/app",
        key=f"imported-{n}",
        value=value,
        owner={kind: name},
        version=1,
        recorded_at=AT,
        created_at=AT,
        updated_at=AT,
    )
    return ImportedLesson(lesson, owner, lesson.id, f"digest-{n}", None)


def _event(owner: str, n: int) -> dict[str, Any]:
    return {
        "owner": owner,
        "at": f"2026-01-0{1 + n % 3}T12:00:00.000000Z",
        "actor": OWNER,
        "action": ("import.lesson", "write")[n % 2],
        "detail": {"n": n},
        "prev_hash": f"{n:064x}",
        "hash": f"{n + 1:064x}",
    }


def test_counters_equal_a_recount_after_multi_row_inserts_and_deletes(
    store: PostgresStore, admin: psycopg.Connection[Any]
) -> None:
    with app_connection(store, OWNER) as conn:  # the app role, row-level security applied
        assert conn.execute(INSERT_LESSONS).rowcount == 300
        assert conn.execute(INSERT_VERSIONS).rowcount == 300
        assert conn.execute(INSERT_TOMBSTONES).rowcount == 40
    with store.transaction(write=True, actor=OWNER) as tx:
        tx.append_audits([_event((OWNER, ORG)[n % 2], n) for n in range(30)])
    grown = counters(admin)
    assert grown == recounted(admin)
    assert {row[0] for row in grown["owners"]} == {OWNER, ORG}
    assert len(grown["scopes"]) == 8  # two owners, four scopes each
    assert sum(row[3] for row in grown["days"]) >= 30

    with app_connection(store, OWNER) as conn:
        assert conn.execute(DELETE_LESSONS).rowcount == 150
        # A statement that deletes nothing changes nothing.
        assert conn.execute("DELETE FROM lessons WHERE key = 'none'").rowcount == 0
    shrunk = counters(admin)
    assert shrunk == recounted(admin)
    assert shrunk["owners"] != grown["owners"]

    with app_connection(store, OWNER) as conn:  # every lesson: each scope's row goes
        conn.execute("DELETE FROM lessons")
    emptied = counters(admin)
    assert emptied == recounted(admin)
    assert emptied["scopes"] == []
    assert all(active == 0 for _, active, _ in emptied["owners"])


def _set_caps(admin: psycopg.Connection[Any], active: int | None, size: int | None) -> None:
    admin.execute(
        "INSERT INTO owner_stats (owner, max_active, max_bytes) VALUES (%s, %s, %s)"
        " ON CONFLICT (owner) DO UPDATE SET max_active = excluded.max_active,"
        " max_bytes = excluded.max_bytes",
        (OWNER, active, size),
    )


def test_a_batch_past_the_lesson_cap_is_refused_and_one_up_to_it_lands(
    store: PostgresStore, admin: psycopg.Connection[Any]
) -> None:
    _set_caps(admin, 10, None)
    before = counters(admin)
    with (
        pytest.raises(LorestoreError) as refused,
        store.transaction(write=True, actor=OWNER) as tx,
    ):
        tx.import_lessons([_imported(n, f"Lesson {n}.") for n in range(11)])
    assert refused.value.code == "cap_exceeded"
    assert refused.value.details["cap"] == "active_lessons"
    assert refused.value.message == "user:alice has reached its limit of 10 active lessons"
    assert counters(admin) == before  # the whole statement was undone
    # The positive control: a batch that reaches the cap exactly lands.
    with store.transaction(write=True, actor=OWNER) as tx:
        pks = tx.import_lessons([_imported(n, f"Lesson {n}.") for n in range(10)])
    assert None not in pks
    assert (OWNER, 10) in [(owner, active) for owner, active, _ in counters(admin)["owners"]]
    assert counters(admin) == recounted(admin)


def test_a_batch_past_the_byte_cap_is_refused_and_one_up_to_it_lands(
    store: PostgresStore, admin: psycopg.Connection[Any]
) -> None:
    values = [f"Lesson number {n}." for n in range(20)]
    size = sum(len(v.encode()) + len(b"{}") for v in values)  # value and ext, as counted
    _set_caps(admin, None, size - 1)
    with (
        pytest.raises(LorestoreError) as refused,
        store.transaction(write=True, actor=OWNER) as tx,
    ):
        tx.import_lessons([_imported(n, v) for n, v in enumerate(values)])
    assert refused.value.code == "cap_exceeded"
    assert refused.value.details["cap"] == "stored_bytes"
    assert refused.value.message == (
        f"user:alice would store {size} bytes, over its limit of {size - 1} bytes"
    )
    _set_caps(admin, None, size)  # the positive control: up to the cap lands
    with store.transaction(write=True, actor=OWNER) as tx:
        assert None not in tx.import_lessons([_imported(n, v) for n, v in enumerate(values)])
    assert (OWNER, 20, size) in counters(admin)["owners"]


@pytest.mark.fresh_database  # it sets track_functions on the database
def test_a_batch_insert_runs_each_counting_function_once_per_statement(
    store: PostgresStore, admin: psycopg.Connection[Any], pg_database: str
) -> None:
    admin.execute(f"ALTER DATABASE \"{pg_database}\" SET track_functions = 'pl'")
    size = ROWS_PER_STATEMENT + 1  # two statements: a full batch and one row
    lessons = [_imported(n, f"Lesson {n}.", (OWNER, ORG)[n % 2]) for n in range(size)]
    with psycopg.connect(store.url, row_factory=dict_row) as conn:
        conn.execute("SELECT set_config('lorestore.actor', %s, true)", [OWNER])
        tx = PostgresTransaction(conn, write=True)
        pks = tx.import_lessons(lessons)
        tx.insert_served_versions([pk for pk in pks if pk is not None], OWNER)
        tx.append_audits([_event(OWNER, n) for n in range(size)])
        calls = {
            row["funcname"]: row["calls"]
            for row in conn.execute("SELECT funcname, calls FROM pg_stat_xact_user_functions")
        }
        conn.commit()
    assert None not in pks
    assert calls["lorestore_count_lessons"] == 2  # per statement, not per lesson
    assert calls["lorestore_tally_lessons"] == 2
    assert calls["lorestore_count_stored_rows"] == 1  # the served versions: one statement
    assert calls["lorestore_tally_audits"] == 2
    # Once per owner of a statement: both in the first lesson statement, one in the second
    # (its one lesson), both in the served versions.
    assert calls["lorestore_count_owner"] == 2 + 1 + 2
    # The row-level functions are for updates only now.
    assert "lorestore_count_lesson" not in calls
    assert "lorestore_tally_lesson" not in calls
    assert "lorestore_count_stored" not in calls
    assert counters(admin) == recounted(admin)
