"""A row stays in its tenant: raw SQL with the application's own rights (on PostgreSQL the app
role, actor bound) cannot move an org's lessons, or any tenant table's rows, to another owner,
on either backend; the same rows' other columns still change (the control)."""

from __future__ import annotations

import sqlite3

import psycopg
import pytest
from tests.conftest import app_connection, table_rows

from lorestore.auth.actor import local_actor
from lorestore.models import (
    OrgAcceptParams,
    OrgBindParams,
    OrgCreateParams,
    OrgInviteParams,
    WriteParams,
)
from lorestore.service import LessonService
from lorestore.storage.postgres import PostgresStore
from lorestore.storage.protocol import Store

ALICE = local_actor(principal="user:alice", session="a")
BOB = local_actor(principal="user:bob", session="b")
REFUSED = (sqlite3.IntegrityError, psycopg.errors.InsufficientPrivilege)


def _team(service: LessonService) -> None:
    """Org acme owned by alice, bound to repo::acme/*, a team lesson there, bob a member."""
    service.org_create(ALICE, OrgCreateParams(slug="acme"))
    service.org_bind(ALICE, OrgBindParams(org="acme", pattern="repo::acme/*"))
    service.memory_write(ALICE, WriteParams(scope="repo::acme/app", key="k", value="team"))
    code = service.org_invite(ALICE, OrgInviteParams(org="acme", user="bob")).code
    service.org_accept(BOB, OrgAcceptParams(code=code))


def test_a_member_cannot_move_the_orgs_lessons_into_its_own_tenant(store: Store) -> None:
    service = LessonService(store)
    _team(service)
    before = table_rows(store, "lessons") + table_rows(store, "owner_stats")
    with (
        app_connection(store, "user:bob") as conn,
        pytest.raises(REFUSED, match="owner of lessons is immutable"),
    ):
        conn.execute("UPDATE lessons SET owner = 'user:bob' WHERE owner = 'org:acme'")
    assert table_rows(store, "lessons") + table_rows(store, "owner_stats") == before
    with app_connection(store, "user:bob") as conn:  # the control: the value may change
        changed = conn.execute("UPDATE lessons SET value = 'edited' WHERE owner = 'org:acme'")
        assert changed.rowcount == 1


@pytest.mark.parametrize(
    ("table", "column"),
    [
        ("lessons", "owner"),
        ("lesson_vectors", "owner"),
        ("scope_bindings", "org"),
        ("invites", "org"),
        ("memberships", "member"),
        ("tokens", "principal"),
    ],
)
def test_no_tenant_table_lets_its_key_change(store: Store, table: str, column: str) -> None:
    service = LessonService(store)
    _team(service)
    service.org_create(ALICE, OrgCreateParams(slug="other"))
    service.org_invite(ALICE, OrgInviteParams(org="acme", user="carol"))
    from lorestore.models import TokenCreateParams

    service.token_create(ALICE, TokenCreateParams(name="t", permission="write"))
    target = {"owner": "'user:alice'", "principal": "'user:bob'"}.get(column, "'org:other'")
    if column == "member":
        target = "'user:alice'"
    # On PostgreSQL the app role may not update these columns at all (no grant); the trigger
    # keeps them for every other role.
    ungranted = isinstance(store, PostgresStore) and table in ("scope_bindings", "invites")
    with app_connection(store, "user:alice") as conn:
        with pytest.raises(REFUSED, match="permission denied" if ungranted else "immutable"):
            conn.execute(f"UPDATE {table} SET {column} = {target}")
        if not ungranted:
            same = conn.execute(f"UPDATE {table} SET {column} = {column}")
            assert same.rowcount >= 1  # the control: an update keeping the key goes through
