"""The pool of PostgreSQL test databases (tests/pg.py): a database a test filled is lent to the
next test empty, with its identities restarted and the migrations' own rows kept; a test that
changes the schema is caught and its database is not lent again; a test marked
``fresh_database`` gets a database outside the pool."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from cryptography.fernet import Fernet
from psycopg import sql
from tests import github
from tests.conftest import set_cap
from tests.pg import TENANT_TABLES, Pool, Template
from tests.portable import header, import_lines, line

from lorestore.auth.actor import local_actor
from lorestore.config import WebhookSettings
from lorestore.ingest.models import WebhookTargetParams
from lorestore.models import (
    OrgBindParams,
    OrgCreateParams,
    OrgInviteParams,
    PolicyParams,
    ProjectAddParams,
    RecallParams,
    RejectParams,
    TokenCreateParams,
    WriteParams,
)
from lorestore.service import LessonService
from lorestore.service.capture import Delivery
from lorestore.storage.postgres import PostgresStore

ALICE = local_actor(principal="user:alice", session="pool-1")
# Each table the fill below writes; together, every table the migrations leave empty.
FILLED = TENANT_TABLES
# Which database the "fill" turn was lent, for the "inherit" turn run right after it.
_lent: dict[str, str] = {}


def _counts(template: Template, name: str, tables: tuple[str, ...]) -> dict[str, int]:
    """Rows per table, counted as the superuser (past row-level security)."""
    with psycopg.connect(template.admin_url(name), autocommit=True) as conn:
        counts = {}
        for table in tables:
            query = sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))
            row = conn.execute(query).fetchone()
            assert row is not None
            counts[table] = int(row[0])
        return counts


def _fill(service: LessonService, store: PostgresStore) -> None:
    service.org_create(ALICE, OrgCreateParams(slug="acme"))
    service.org_bind(ALICE, OrgBindParams(org="acme", pattern="repo::acme/*"))
    service.org_invite(ALICE, OrgInviteParams(org="acme", user="bob"))
    write = WriteParams(scope="repo::alice/app", key="k", value="Run the migrations first")
    service.memory_write(ALICE, write)
    service.memory_write(ALICE, WriteParams(scope="global", key="flaky", value="It is flaky"))
    service.memory_reject(ALICE, RejectParams(scope="global", key="flaky", reason="wrong"))
    service.memory_policy(ALICE, PolicyParams(scope="repo::alice/app", require_review=False))
    service.project_add(ALICE, ProjectAddParams(name="apps", repos=["alice/app"]))
    service.memory_recall(ALICE, RecallParams(repo="alice/app", task="migrations"))
    token = service.token_create(ALICE, TokenCreateParams(name="ci"))
    service.authenticate(token.token)  # counts a request against the token's rate limit
    other = {"type": "x-snippet", "id": "s1", "text": "kept as it came"}
    kept = import_lines(service, [header(), line(other)], actor=ALICE)
    assert kept.invalid == 0, kept.problems
    set_cap(store, "user:alice", 50)
    # A webhook (webhooks) and a delivery it captured (webhook_deliveries, webhook_counts).
    target = WebhookTargetParams.model_validate({"target": "alice/app"})
    secret = service.webhook_add(ALICE, target).secret
    comment = github.review_comment(
        1, "Freeze time with the frozen clock fixture.", repo="alice/app"
    )
    body = github.body_of(github.review_comment_event(comment, repo="alice/app"))
    status, _ = service.github_delivery(
        Delivery("pull_request_review_comment", "d-1", github.signature(secret, body), body)
    )
    assert status == 200


@pytest.mark.parametrize("turn", ["fill", "inherit"])
def test_the_next_test_gets_the_database_empty(
    turn: str, pg_template: Template, pg_pool: Pool, pg_database: str
) -> None:
    assert set(pg_pool.emptied) == FILLED  # a new table must be filled here too
    store = PostgresStore(pg_template.app_url(pg_database), max_size=2)
    webhooks = WebhookSettings(key=Fernet.generate_key().decode())
    service = LessonService(store, rate_limit=100, webhooks=webhooks)
    try:
        if turn == "fill":
            _fill(service, store)
            counts = _counts(pg_template, pg_database, pg_pool.emptied)
            assert [t for t, n in counts.items() if n == 0] == []
            _lent["fill"] = pg_database
            return
        # The turn before was lent this same database (when it ran) and filled every table.
        assert _lent.get("fill", pg_database) == pg_database
        counts = _counts(pg_template, pg_database, pg_pool.emptied)
        assert {t: n for t, n in counts.items() if n} == {}
        migrations = _counts(pg_template, pg_template.name, pg_pool.seeded)
        assert _counts(pg_template, pg_database, pg_pool.seeded) == migrations
        # The rows migrations write: their ledger, the store's id secret (store_settings) and
        # the server's default caps (cap_defaults).
        assert migrations == {
            "cap_defaults": 1,
            "schema_migrations": migrations["schema_migrations"],
            "store_settings": 1,
        }
        # Identities restarted: the first lesson and audit event are number 1 again.
        service.memory_write(ALICE, WriteParams(scope="global", key="a", value="first"))
        with psycopg.connect(pg_template.admin_url(pg_database)) as conn:
            row: Any = conn.execute("SELECT min(pk) FROM lessons").fetchone()
            assert row == (1,)
            row = conn.execute("SELECT min(id) FROM audit_log").fetchone()
            assert row == (1,)
    finally:
        store.close()


def test_a_changed_schema_is_caught_and_the_database_not_lent_again(
    pg_template: Template, pg_pool: Pool
) -> None:
    name = pg_pool.acquire()
    with psycopg.connect(pg_template.admin_url(name), autocommit=True) as conn:
        conn.execute("ALTER TABLE audit_log DISABLE TRIGGER audit_log_append_only")
    with pytest.raises(AssertionError, match="fresh_database"):
        pg_pool.release(name)
    assert name not in pg_pool.names
    with psycopg.connect(pg_template.admin, autocommit=True) as conn:
        gone = conn.execute("SELECT count(*) FROM pg_database WHERE datname = %s", [name])
        assert gone.fetchone() == (0,)
    # The control: rows alone are no change; the database is emptied and lent again.
    again = pg_pool.acquire()
    store = PostgresStore(pg_template.app_url(again), max_size=2)
    try:
        LessonService(store).memory_write(ALICE, WriteParams(scope="global", key="a", value="x"))
    finally:
        store.close()
    pg_pool.release(again)
    assert again in pg_pool.names and pg_pool.acquire() == again
    pg_pool.release(again)


@pytest.mark.fresh_database
def test_a_fresh_database_is_outside_the_pool(pg_pool: Pool, pg_database: str) -> None:
    assert pg_database not in pg_pool.names


def test_an_identity_taken_by_a_rolled_back_write_starts_again(
    pg_template: Template, pg_pool: Pool
) -> None:
    name = pg_pool.acquire()
    with psycopg.connect(pg_template.admin_url(name)) as conn:  # one transaction, rolled back
        conn.execute("SELECT nextval(pg_get_serial_sequence('lessons', 'pk'))")
        conn.rollback()  # a sequence is not rolled back: no row, number 1 used up
    pg_pool.release(name)
    assert pg_pool.acquire() == name
    store = PostgresStore(pg_template.app_url(name), max_size=2)
    try:
        LessonService(store).memory_write(ALICE, WriteParams(scope="global", key="a", value="x"))
    finally:
        store.close()
    with psycopg.connect(pg_template.admin_url(name)) as conn:
        assert conn.execute("SELECT pk FROM lessons").fetchall() == [(1,)]
    pg_pool.release(name)
