"""A list of recent recalls (``recent_recalls``): newest first across the owners asked for,
ties broken by recall id, at most the limit, none before ``since``; on PostgreSQL each owner's
page walked from recall_log_newest (migration 0042), never the whole window read. On both
backends, through the store's own transaction."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row
from tests.conftest import app_connection

from lorestore.auth.actor import local_actor
from lorestore.models import OrgCreateParams
from lorestore.service import LessonService
from lorestore.storage.postgres import PostgresStore
from lorestore.storage.postgres.dialect import Q
from lorestore.storage.protocol import RecallRecord, Store

ME, ORG = "user:local", "org:acme"


def _recall(owner: str, minute: int) -> RecallRecord:
    at = f"2026-12-01T10:{minute:02d}:00.000000Z"
    return RecallRecord(str(uuid.uuid4()), owner, at, ME, {"task": "t"}, [], [])


@pytest.mark.lexical
def test_the_newest_recalls_of_several_owners_come_merged(store: Store) -> None:
    mine = [_recall(ME, m) for m in range(0, 40, 2)]  # even minutes
    theirs = [_recall(ORG, m) for m in range(1, 40, 2)]  # odd minutes
    tie = _recall(ORG, 38)  # the same minute as one of mine: the larger id first
    LessonService(store).org_create(local_actor(session="s"), OrgCreateParams(slug="acme"))
    with store.transaction(write=True, actor=ME) as tx:
        for record in [*mine, *theirs, tie]:
            tx.insert_recall(record)
    expected = sorted([*mine, *theirs, tie], key=lambda r: (r.at, r.recall_id), reverse=True)
    since = "2026-12-01T10:05:00.000000Z"
    with store.transaction(write=False, actor=ME) as tx:
        page = tx.recent_recalls([ME, ORG], since, None, 10)
        assert [r.recall_id for r in page] == [r.recall_id for r in expected[:10]]
        everything = tx.recent_recalls([ME, ORG, ME], since, None, 100)
        assert [r.recall_id for r in everything] == [
            r.recall_id for r in expected if r.at >= since
        ]  # none before since, none twice (an owner named twice)
        assert [r.owner for r in tx.recent_recalls([ME], since, None, 100)] == [ME] * 17
    if isinstance(store, PostgresStore):
        # As the application runs it: each owner's page from the index, the table not read.
        scans = (
            "SELECT relname, pg_stat_get_xact_numscans(oid) FROM pg_class "
            "WHERE relname IN ('recall_log', 'recall_log_newest')"
        )
        owners = "SELECT lorestore_owners()"  # whose recalls the actor may read: both
        with app_connection(store, ME) as conn, conn.transaction():
            assert sorted(conn.execute(owners).fetchall()[0][0]) == [ORG, ME]
            rows = store_rows(conn, [ME, ORG], since)
            counted = dict(conn.execute(scans).fetchall())
        assert [str(r["recall_id"]) for r in rows] == [r.recall_id for r in expected[:10]]
        # The table is never read; each owner's walk counts one index scan, or two where the
        # policy's owner list (an array test in the same index condition) adds one.
        assert counted["recall_log"] == 0 and 2 <= counted["recall_log_newest"] <= 4, counted


def store_rows(conn: psycopg.Connection[Any], owners: list[str], since: str) -> list[Any]:
    params = {"owners": owners, "since": since, "limit": 10}
    return conn.cursor(row_factory=dict_row).execute(Q["recent_recalls"], params).fetchall()
