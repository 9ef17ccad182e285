"""A write at a new key asks which keys of its scope look like it (``lookalike_keys``): the
key equal to it in ASCII case, and every key with a character outside ASCII. Each kind comes
from its own index (PostgreSQL migration 0040, SQLite 0033), not from a read of every key of
the scope, which cost a write into a scope of 56k lessons 10-51 ms. Through the service's
``memory_write`` on both backends (the holds, beside a key that looks like nothing), and the
query's plan as the application runs it."""

from __future__ import annotations

import psycopg
import pytest
from tests.conftest import app_connection
from tests.pg import Template
from tests.portable import import_lines, lesson, line

from lorestore.auth.actor import local_actor
from lorestore.models import WriteParams
from lorestore.service import LessonService
from lorestore.storage.postgres import PostgresStore
from lorestore.storage.protocol import Store
from lorestore.storage.queries import load_queries

ME = local_actor(session="lookalike-1")
APP = "repo::acme/app"
SIZE = 2000  # lessons of the scope besides the two look-alikes
CYRILLIC = "d\u0435ploy-notes"  # with a Cyrillic e


def filled(store: Store) -> LessonService:
    records = [lesson(f"note-{n:05d}", f"Lesson {n} about the build.", APP) for n in range(SIZE)]
    records.append(lesson(CYRILLIC, "Deploy notes live in the wiki.", APP))
    records.append(lesson("Release-Guard", "The release guard blocks Friday deploys.", APP))
    service = LessonService(store)
    result = import_lines(service, [line(r) for r in records])
    assert result.lessons.added == len(records), result
    return service


def held(service: LessonService, key: str) -> list[str]:
    value = f"A lesson written at {key}."
    return service.memory_write(ME, WriteParams(scope=APP, key=key, value=value)).held


@pytest.mark.lexical
def test_a_new_key_like_another_of_a_large_scope_is_held(store: Store) -> None:
    service = filled(store)
    assert held(service, "release-guard") == ["confusable_key:Release-Guard"]  # ASCII case
    assert held(service, "deploy-notes") == [f"confusable_key:{CYRILLIC}"]  # outside ASCII
    assert held(service, "cache-warmup") == []  # control: like no other key


@pytest.mark.lexical
def test_the_lookalike_keys_come_from_their_indexes(
    store: Store, request: pytest.FixtureRequest
) -> None:
    filled(store)
    params = {"owner": ME.owner, "scope": APP, "skeleton": "cache-warmup"}
    if isinstance(store, PostgresStore):
        # As the application runs it, in one transaction whose own index scans the statistics
        # count: under row-level security the indexes serve only a definer function.
        query = load_queries("lorestore.storage.postgres", "queries.sql")["lookalike_keys"]
        scans = (
            "SELECT relname, pg_stat_get_xact_numscans(oid) FROM pg_class "
            "WHERE relname LIKE 'lessons\\_%' AND relkind = 'i'"
        )
        template: Template = request.getfixturevalue("pg_template")
        admin = template.admin_url(request.getfixturevalue("pg_database"))
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute("ANALYZE lessons")  # as autovacuum does after an import
        with app_connection(store, ME.principal) as conn, conn.transaction():
            # Past the five custom plans after which PostgreSQL's plan cache may settle on its
            # generic plan: the function keeps one (migration 0043), and it walks the indexes.
            for _ in range(8):
                assert conn.execute(query, params).fetchall() == [(CYRILLIC,)]
            counted = dict(conn.execute(scans).fetchall())
        assert counted["lessons_key_folded"] == 8 and counted["lessons_key_non_ascii"] == 8, counted
        assert counted["lessons_address"] == 0  # what the walk of the scope's keys used
        with psycopg.connect(admin, autocommit=True) as conn:
            (settings,) = conn.execute(
                "SELECT proconfig FROM pg_proc WHERE proname = 'lorestore_lookalike_keys'"
            ).fetchone() or (None,)
        # Planned once per connection, not at every call: a custom plan cost 0.2-0.3 ms of
        # planning for a query that runs in 0.02 ms.
        assert "plan_cache_mode=force_generic_plan" in settings
        # Tenancy: another actor asking for this owner's keys gets none (the control above).
        with app_connection(store, "user:mallory") as conn:
            assert conn.execute(query, params).fetchall() == []
        return
    query = load_queries("lorestore.storage.sqlite", "queries.sql")["lookalike_keys"]
    with app_connection(store) as conn:
        steps = [r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + query, params)]
        assert conn.execute(query, params).fetchall() == [(CYRILLIC,)]
    assert any("INDEX lessons_key_folded" in s for s in steps), steps
    assert any("INDEX lessons_key_non_ascii" in s for s in steps), steps
    assert not any("lessons_address" in s for s in steps), steps
