"""Row-level security proven in the database itself, as the application role: another
tenant's rows are invisible and immutable through raw SQL, forging the actor in a function
argument does nothing, and the schema's own guarantees (RLS forced everywhere, an app role
that owns nothing, an audit log it can only append to) hold. Each refusal has its control."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg.errors import InsufficientPrivilege
from tests.conftest import app_connection, approve_pending, set_cap
from tests.pg import TENANT_TABLES, Template

from lorestore.auth.actor import local_actor
from lorestore.core.errors import LorestoreError
from lorestore.models import (
    OrgAcceptParams,
    OrgBindParams,
    OrgCreateParams,
    OrgInviteParams,
    WriteParams,
)
from lorestore.service import LessonService
from lorestore.storage.postgres import PostgresStore

ALICE = local_actor(principal="user:alice", session="a")
BOB = local_actor(principal="user:bob", session="b")


@pytest.fixture
def pg(pg_template: Template, pg_database: str) -> Iterator[PostgresStore]:
    store = PostgresStore(pg_template.app_url(pg_database), max_size=2)
    yield store
    store.close()


@pytest.fixture
def seeded(pg: PostgresStore) -> PostgresStore:
    service = LessonService(pg)
    service.memory_write(ALICE, WriteParams(scope="repo::alice/app", key="k", value="alice secret"))
    service.memory_write(BOB, WriteParams(scope="repo::bob/app", key="k", value="bob's own"))
    return pg


def _admin(pg_template: Template, pg_database: str) -> psycopg.Connection[Any]:
    return psycopg.connect(pg_template.admin_url(pg_database), autocommit=True)


def test_every_tenant_table_has_rls_enabled_and_forced(
    pg: PostgresStore, pg_template: Template, pg_database: str
) -> None:
    with _admin(pg_template, pg_database) as conn:
        rows = conn.execute(
            "SELECT relname, relrowsecurity, relforcerowsecurity FROM pg_class "
            "WHERE relnamespace = 'public'::regnamespace AND relkind = 'r'"
        ).fetchall()
    tables = {name: (enabled, forced) for name, enabled, forced in rows}
    assert set(tables) >= TENANT_TABLES
    for name in TENANT_TABLES:
        assert tables[name] == (True, True), name
    # Not tenant tables: the migrations' ledger, the settings of the store as a whole
    # (readable by the app role, writable by no one: forced all the same) and the server's
    # default caps (read by the app role and the definer's count triggers, written by no one).
    assert set(tables) - TENANT_TABLES == {"schema_migrations", "store_settings", "cap_defaults"}
    assert tables["store_settings"] == (True, True)


def test_the_app_role_reads_the_stores_id_secret_and_changes_nothing(pg: PostgresStore) -> None:
    with app_connection(pg, "user:alice") as conn:
        (value,) = conn.execute(
            "SELECT value FROM store_settings WHERE name = 'id_secret'"
        ).fetchone()
        assert len(value) == 64 and int(value, 16) >= 0  # the control: readable, 244 bits of hex
        for statement in (
            "UPDATE store_settings SET value = 'known'",
            "INSERT INTO store_settings (name, value) VALUES ('other', 'x')",
            "DELETE FROM store_settings",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
        assert conn.execute("SELECT value FROM store_settings").fetchall() == [(value,)]


def test_app_role_owns_nothing_and_cannot_bypass(
    pg: PostgresStore, pg_template: Template, pg_database: str
) -> None:
    with _admin(pg_template, pg_database) as conn:
        role = conn.execute(
            "SELECT rolsuper, rolbypassrls, rolcreaterole, rolcreatedb FROM pg_roles "
            "WHERE rolname = 'lorestore_app'"
        ).fetchone()
        assert role == (False, False, False, False)
        owned = conn.execute(
            "SELECT count(*) FROM pg_class WHERE relowner = 'lorestore_app'::regrole"
        ).fetchone()
        assert owned == (0,)
        rights = conn.execute(
            "SELECT has_table_privilege('lorestore_app', 'audit_log', 'INSERT'), "
            "has_table_privilege('lorestore_app', 'audit_log', 'SELECT'), "
            "has_table_privilege('lorestore_app', 'audit_log', 'UPDATE'), "
            "has_table_privilege('lorestore_app', 'audit_log', 'DELETE'), "
            "has_table_privilege('lorestore_app', 'audit_log', 'TRUNCATE')"
        ).fetchone()
        assert rights == (True, True, False, False, False)


def test_raw_sql_sees_only_the_actors_rows(seeded: PostgresStore) -> None:
    with app_connection(seeded, "user:bob") as conn:
        values = [r[0] for r in conn.execute("SELECT value FROM lessons").fetchall()]
        assert values == ["bob's own"]  # positive control: bob sees his own lesson
        assert conn.execute("SELECT count(*) FROM lesson_versions").fetchone() == (1,)
        assert conn.execute("SELECT count(*) FROM audit_log").fetchone() == (1,)
    with app_connection(seeded, "") as conn:  # no actor bound: nobody
        assert conn.execute("SELECT count(*) FROM lessons").fetchone() == (0,)


def test_the_lesson_rows_view_applies_the_callers_row_level_security(
    seeded: PostgresStore, pg_template: Template, pg_database: str
) -> None:
    """lesson_rows (migration 0038: every column of lessons but the tsvector) is a
    security_invoker view: through it the app role sees what lessons_read lets it see."""
    with app_connection(seeded, "user:bob") as conn:
        values = [r[0] for r in conn.execute("SELECT value FROM lesson_rows").fetchall()]
        assert values == ["bob's own"]  # positive control: bob's own lesson, alice's not
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("UPDATE lesson_rows SET value = 'x'")
    with app_connection(seeded, "") as conn:  # no actor bound: nobody
        assert conn.execute("SELECT count(*) FROM lesson_rows").fetchone() == (0,)
    with _admin(pg_template, pg_database) as conn:
        columns = {
            table: [
                r[0]
                for r in conn.execute(
                    "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass "
                    "AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
                    [table],
                )
            ]
            for table in ("lessons", "lesson_rows")
        }
    # Every column of lessons, in its order, but the search vector only the database reads.
    assert columns["lesson_rows"] == [c for c in columns["lessons"] if c != "search"]


def test_raw_sql_cannot_change_another_tenant(seeded: PostgresStore) -> None:
    with app_connection(seeded, "user:bob") as conn:
        assert conn.execute("UPDATE lessons SET value = 'pwned'").rowcount == 1  # only his own
        assert conn.execute("DELETE FROM lessons WHERE owner = 'user:alice'").rowcount == 0
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(
                "INSERT INTO lessons (owner, id, scope, key, value, value_digest, version, "
                "recorded_at, created_at, updated_at) VALUES ('user:alice', gen_random_uuid(), "
                "'global', 'planted', 'x', 'x', 1, now(), now(), now())"
            )
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("UPDATE lessons SET owner = 'user:alice'")
    with app_connection(seeded, "user:alice") as conn:
        assert [r[0] for r in conn.execute("SELECT value FROM lessons").fetchall()] == [
            "alice secret"
        ]


def test_forging_the_actor_in_an_argument_does_nothing(seeded: PostgresStore) -> None:
    service = LessonService(seeded)
    service.org_create(ALICE, OrgCreateParams(slug="acme"))
    service.org_bind(ALICE, OrgBindParams(org="acme", pattern="repo::acme/*"))
    code = service.org_invite(ALICE, OrgInviteParams(org="acme", user="alice2")).code
    import hashlib

    code_hash = hashlib.sha256(code.encode()).hexdigest()
    with app_connection(seeded, "user:bob") as conn:
        # The membership readers take no argument: bob cannot ask for alice's view.
        with pytest.raises(psycopg.errors.UndefinedFunction):
            conn.execute("SELECT lorestore_owners('user:alice')")
        assert conn.execute("SELECT lorestore_owners()").fetchone() == (["user:bob"],)
        # An invite addressed to someone else cannot be taken with its code.
        assert conn.execute("SELECT lorestore_accept_invite(%s)", [code_hash]).fetchone() == (None,)
        assert conn.execute("SELECT count(*) FROM memberships").fetchone() == (0,)
        # Setting another actor mid-transaction is the app's power; the database still
        # derives everything from it, so the service never does so from input.
    assert (
        service.org_accept(local_actor(principal="user:alice2"), OrgAcceptParams(code=code)).org
        == "org:acme"
    )  # positive control: the named invitee can


def team(store: PostgresStore, bob_role: str) -> LessonService:
    """Org acme owned by alice, bound to repo::acme/*, with a team lesson there, and bob in it
    with ``bob_role``."""
    service = LessonService(store)
    service.org_create(ALICE, OrgCreateParams(slug="acme"))
    service.org_bind(ALICE, OrgBindParams(org="acme", pattern="repo::acme/*"))
    approve_pending(store)  # bob keeps lessons here: the binding waits for an operator
    service.memory_write(ALICE, WriteParams(scope="repo::acme/app", key="k", value="team"))
    invite = OrgInviteParams(org="acme", user="bob", role=bob_role)  # type: ignore[arg-type]
    service.org_accept(BOB, OrgAcceptParams(code=service.org_invite(ALICE, invite).code))
    return service


def test_viewer_cannot_write_even_through_raw_sql(seeded: PostgresStore) -> None:
    team(seeded, "viewer")
    with app_connection(seeded, "user:bob") as conn:
        assert conn.execute("SELECT value FROM lessons WHERE owner = 'org:acme'").fetchall() == [
            ("team",)
        ]
        assert conn.execute("UPDATE lessons SET value = 'x' WHERE owner = 'org:acme'").rowcount == 0
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(
                "INSERT INTO memberships (org, member, role) "
                "VALUES ('org:acme', 'user:bob', 'owner')"
            )


def test_org_ranks_hold_in_raw_sql(seeded: PostgresStore) -> None:
    """An org admin cannot make, change or remove an owner through raw SQL, nor invite one;
    it can manage members, and a member can leave (each refusal beside its control)."""
    service = LessonService(seeded)
    service.org_create(ALICE, OrgCreateParams(slug="acme"))
    mia = local_actor(principal="user:mia", session="m")
    for user, role, actor in (("bob", "admin", BOB), ("mia", "member", mia)):
        code = service.org_invite(ALICE, OrgInviteParams(org="acme", user=user, role=role)).code
        service.org_accept(actor, OrgAcceptParams(code=code))
    with app_connection(seeded, "user:bob") as conn:
        promote = "UPDATE memberships SET role = 'owner' WHERE org = 'org:acme' AND member = %s"
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(promote, ["user:bob"])  # its own row: the new role fails the check
        demote_owner = "UPDATE memberships SET role = 'member' WHERE member = 'user:alice'"
        assert conn.execute(demote_owner).rowcount == 0  # an owner's row is out of its reach
        remove = "DELETE FROM memberships WHERE org = 'org:acme' AND member = %s"
        assert conn.execute(remove, ["user:alice"]).rowcount == 0
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(
                "INSERT INTO memberships (org, member, role) "
                "VALUES ('org:acme', 'user:carol', 'owner')"
            )
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(
                "INSERT INTO invites (id, org, invitee, role, code_hash, created_by, created_at,"
                " expires_at) VALUES (gen_random_uuid(), 'org:acme', 'user:carol', 'owner',"
                " 'x', 'user:bob', now(), now() + interval '1 day')"
            )
        demote = "UPDATE memberships SET role = 'viewer' WHERE org = 'org:acme' AND member = %s"
        assert conn.execute(demote, ["user:mia"]).rowcount == 1  # the control: a member
    with app_connection(seeded, "user:mia") as conn:
        assert conn.execute(remove, ["user:mia"]).rowcount == 1  # leaving is always allowed
    with app_connection(seeded, "user:alice") as conn:
        assert conn.execute(promote, ["user:bob"]).rowcount == 1  # an owner may promote


def test_caps_and_org_deletes_hold_in_raw_sql(seeded: PostgresStore) -> None:
    """The app role counts active lessons but cannot raise a cap; a member cannot delete the
    org's lessons, its owner can (each beside its control)."""
    team(seeded, "member")
    with app_connection(seeded, "user:alice") as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("UPDATE owner_stats SET max_active = 1000000 WHERE owner = 'user:alice'")
        counted = "SELECT active_lessons FROM owner_stats WHERE owner = 'user:alice'"
        assert conn.execute(counted).fetchone() == (1,)  # the control: the count is kept
    delete = "DELETE FROM lessons WHERE owner = 'org:acme'"
    versions = "DELETE FROM lesson_versions WHERE owner = 'org:acme'"
    with app_connection(seeded, "user:bob") as conn:
        assert conn.execute(delete).rowcount == 0  # a member
        assert conn.execute(versions).rowcount == 0  # nor the org's history
    with app_connection(seeded, "user:alice") as conn:
        assert conn.execute(
            "SELECT count(*) FROM lesson_versions WHERE owner = 'org:acme'"
        ).fetchone() == (1,)
        assert conn.execute(delete).rowcount == 1  # its owner (the versions go by cascade)
        assert conn.execute(
            "SELECT count(*) FROM lesson_versions WHERE owner = 'org:acme'"
        ).fetchone() == (0,)


def test_the_cap_counter_is_the_databases_not_the_app_roles(
    seeded: PostgresStore, pg_template: Template, pg_database: str
) -> None:
    """Security #19 item 3: as lorestore_app a user cannot lower its own count (to write past
    its cap) nor a member raise its org's (to block the others), by UPDATE, INSERT or the
    counting function; the triggers still count every write and the cap still refuses."""
    service = team(seeded, "member")
    set_cap(seeded, "org:acme", 3)
    counted = "SELECT active_lessons FROM owner_stats WHERE owner = %s"
    lower = "UPDATE owner_stats SET active_lessons = 0 WHERE owner = 'user:alice'"
    with app_connection(seeded, "user:alice") as conn, pytest.raises(InsufficientPrivilege):
        conn.execute(lower)
    with app_connection(seeded, "user:bob") as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("UPDATE owner_stats SET active_lessons = 3 WHERE owner = 'org:acme'")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(
                "INSERT INTO owner_stats (owner, active_lessons) VALUES ('user:bob', 0) "
                "ON CONFLICT (owner) DO UPDATE SET active_lessons = 0"
            )
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT lorestore_count_owner('org:acme', 1000000, 0)")
        assert conn.execute(counted, ["org:acme"]).fetchone() == (1,)  # read, untouched
    # The control: a member's writes are counted by the database and the cap still holds.
    service.memory_write(BOB, WriteParams(scope="repo::acme/app", key="two", value="b"))
    service.memory_write(ALICE, WriteParams(scope="repo::acme/app", key="three", value="c"))
    with pytest.raises(LorestoreError) as refused:
        service.memory_write(BOB, WriteParams(scope="repo::acme/app", key="four", value="d"))
    assert (refused.value.code, refused.value.details) == (
        "cap_exceeded",
        {"cap": "active_lessons"},
    )
    with app_connection(seeded, "user:bob") as conn:
        assert conn.execute(counted, ["org:acme"]).fetchone() == (3,)
    # A count below zero is refused by the table itself, even for the superuser.
    with _admin(pg_template, pg_database) as conn:
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute("UPDATE owner_stats SET active_lessons = -1 WHERE owner = 'org:acme'")
        definer = conn.execute(
            "SELECT p.proname, p.proowner::regrole::text, p.prosecdef, p.proconfig FROM pg_proc p "
            "WHERE p.proname IN ('lorestore_count_owner', 'lorestore_count_lesson', "
            "'lorestore_count_stored') ORDER BY 1"
        ).fetchall()
    path = ["search_path=pg_catalog, public, pg_temp"]
    assert definer == [
        ("lorestore_count_lesson", "lorestore_definer", True, path),
        ("lorestore_count_owner", "lorestore_definer", True, path),
        ("lorestore_count_stored", "lorestore_definer", True, path),
    ]


def test_a_member_leaves_an_org_on_postgres(seeded: PostgresStore) -> None:
    from lorestore.models import NoParams, OrgListResult, OrgMemberParams

    service = LessonService(seeded)
    service.org_create(ALICE, OrgCreateParams(slug="acme"))
    code = service.org_invite(ALICE, OrgInviteParams(org="acme", user="bob", role="member")).code
    service.org_accept(BOB, OrgAcceptParams(code=code))
    service.org_remove(BOB, OrgMemberParams(org="acme", user="bob"))
    listed: OrgListResult = service.org_list(BOB, NoParams())
    assert listed.orgs == []
    assert [o.org for o in service.org_list(ALICE, NoParams()).orgs] == ["org:acme"]


def test_audit_log_is_append_only_even_for_the_owner(
    seeded: PostgresStore, pg_template: Template, pg_database: str
) -> None:
    with _admin(pg_template, pg_database) as conn:
        count = conn.execute("SELECT count(*) FROM audit_log").fetchone()
        assert count == (2,)
        conn.execute("SET ROLE lorestore_owner")
        with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
            conn.execute("DELETE FROM audit_log")
        conn.execute("RESET ROLE")
        assert conn.execute("SELECT count(*) FROM audit_log").fetchone() == count


def test_search_functions_apply_tenancy_themselves(seeded: PostgresStore) -> None:
    call = (
        "SELECT count(*) FROM lorestore_search_hits(to_tsquery('english', 'secret'), "
        "ARRAY['user:alice'], ARRAY['repo::alice/app'], now(), '[]'::jsonb, 10)"
    )
    with app_connection(seeded, "user:bob") as conn:
        assert conn.execute(call).fetchone() == (0,)  # alice's scope, asked for by bob
    with app_connection(seeded, "user:alice") as conn:
        assert conn.execute(call).fetchone() == (1,)  # positive control: alice finds it
    newest = call.replace("lorestore_search_hits", "lorestore_search_newest")
    with app_connection(seeded, "user:bob") as conn:
        assert conn.execute(newest).fetchone() == (0,)
    with app_connection(seeded, "user:alice") as conn:
        assert conn.execute(newest).fetchone() == (1,)
    # A word's share counts the newest lessons of the owners the actor may read, only those:
    # each holds one lesson, bob's without "secret" and alice's without "bob"; the row keys the
    # sample spans are the actor's own lesson's.
    shares = "SELECT * FROM lorestore_word_shares(ARRAY['secret', 'bob'], 10)"
    with app_connection(seeded, "user:bob") as conn:
        total, held, bobs, newest = conn.execute(shares).fetchone()
        assert (total, held) == (1, [0, 1]) and bobs == newest
    with app_connection(seeded, "user:alice") as conn:
        total, held, alices, newest = conn.execute(shares).fetchone()
        assert (total, held) == (1, [1, 0]) and alices == newest
    assert bobs is not None and alices is not None and bobs != alices
    # A search's window keeps to its row keys (the control: the whole range finds it).
    window = call.replace(", 10)", f", 10, {alices + 1})")
    with app_connection(seeded, "user:alice") as conn:
        assert conn.execute(window).fetchone() == (0,)
        assert conn.execute(call.replace(", 10)", f", 10, {alices})")).fetchone() == (1,)


def test_the_search_hits_are_planned_from_bitmaps_and_the_newest_by_index(
    pg: PostgresStore, pg_template: Template, pg_database: str
) -> None:
    """Migration 0039: lorestore_search_hits plans without plain index scans, so a frequent
    word's window is the full-text bitmap ANDed with the window's row keys, not a walk of the
    primary key testing every row. The control: lorestore_search_newest, which must walk the
    primary key backwards to stop at its page, keeps them."""
    settings = (
        "SELECT coalesce(proconfig, '{}') FROM pg_proc WHERE proname = %s "
        "AND pronamespace = 'public'::regnamespace"
    )
    with _admin(pg_template, pg_database) as conn:
        hits = conn.execute(settings, ["lorestore_search_hits"]).fetchall()
        newest = conn.execute(settings, ["lorestore_search_newest"]).fetchall()
    assert len(hits) == 1 and "enable_indexscan=off" in hits[0][0]
    assert len(newest) == 1 and not any(s.startswith("enable_indexscan") for s in newest[0][0])


def test_the_search_vectors_are_kept_in_their_rows(
    pg: PostgresStore, pg_template: Template, pg_database: str
) -> None:
    """Migration 0041: ranking a match reads its search vector, kept in the lesson's row rather
    than the TOAST table (MAIN). The control: the value column keeps the default (EXTENDED)."""
    storage = (
        "SELECT attname, attstorage FROM pg_attribute WHERE attrelid = 'lessons'::regclass "
        "AND attname IN ('search', 'value')"
    )
    with _admin(pg_template, pg_database) as conn:
        assert dict(conn.execute(storage).fetchall()) == {"search": "m", "value": "x"}


def test_kept_word_counts_are_each_actors_own(seeded: PostgresStore) -> None:
    """Search and recall keep their word counts (storage/sql/word_shares.py) per actor: one
    actor's count of its own lessons never decides how another's search ranks."""

    def classes(actor: str) -> tuple[list[str], list[str]]:
        with seeded.transaction(write=False, actor=actor) as tx:
            words = tx._word_classes(["secret"])
        return words.frequent, words.rare

    assert classes("user:alice") == (["secret"], [])  # her one lesson holds it
    assert classes("user:bob") == ([], ["secret"])  # his holds none: alice's count not his
    assert classes("user:alice") == (["secret"], [])  # kept, still hers
    assert classes("user:bob") == ([], ["secret"])


def test_the_recall_lookup_function_applies_tenancy_itself(seeded: PostgresStore) -> None:
    """lorestore_recalls_naming (migration 0036) reads the recall log past RLS: it keeps to the
    actor's owners whatever owners it is asked for."""
    from lorestore.models import RecallParams

    service = LessonService(seeded)
    recall = service.memory_recall(ALICE, RecallParams(repo="alice/app", task="secret"))
    lesson_id = recall.offered[0].lesson.id
    call = (
        "SELECT count(*) FROM lorestore_recalls_naming(%s::jsonb, ARRAY['user:alice'],"
        " '-infinity', 10)"
    )
    naming = f'[{{"lesson_id": "{lesson_id}"}}]'
    with app_connection(seeded, "user:bob") as conn:
        assert conn.execute(call, [naming]).fetchone() == (0,)  # alice's, asked for by bob
    with app_connection(seeded, "user:alice") as conn:
        assert conn.execute(call, [naming]).fetchone() == (1,)  # positive control


def test_a_rejection_waits_for_writes_of_its_owner_in_flight(seeded: PostgresStore) -> None:
    """A write that has checked the tombstones holds the owner's corrections lock (shared)
    until it commits; a rejection takes it exclusively first, so its scan for copies sees
    that write (READ COMMITTED alone let such a copy stay served beside the tombstone)."""
    import threading

    from lorestore.models import ReadParams, RejectParams

    service = LessonService(seeded)
    value = "Skip the flaky payment test"
    service.memory_write(ALICE, WriteParams(scope="global", key="a", value=value))
    done: list[object] = []
    with app_connection(seeded, "user:alice") as writer:
        writer.execute("BEGIN")
        writer.execute(
            "SELECT pg_advisory_xact_lock_shared(hashtextextended(%s, 0))",
            ["lorestore.corrections:user:alice"],
        )
        rejecting = threading.Thread(
            target=lambda: done.append(
                service.memory_reject(ALICE, RejectParams(scope="global", key="a", reason="no"))
            )
        )
        rejecting.start()
        rejecting.join(timeout=1.0)
        assert rejecting.is_alive() and not done  # it waits for the write in flight
        writer.execute("COMMIT")
    rejecting.join(timeout=10)
    assert done and not rejecting.is_alive()  # the control: then it goes ahead
    assert service.memory_history(ALICE, ReadParams(scope="global", key="a")).trust == "rejected"


SEARCH_PATH = ["search_path=pg_catalog, public, pg_temp"]


def test_every_definer_function_searches_the_temporary_schema_last(
    pg: PostgresStore, pg_template: Template, pg_database: str
) -> None:
    with _admin(pg_template, pg_database) as conn:
        rows = conn.execute(
            "SELECT proname, proconfig FROM pg_proc "
            "WHERE pronamespace = 'public'::regnamespace AND prosecdef"
        ).fetchall()
    assert {"lorestore_owners", "lorestore_accept_invite"} <= {name for name, _ in rows}
    # Other settings may stand beside it (lorestore_search_hits fixes its plan cache mode).
    paths = {
        name: [c for c in config or [] if c.startswith("search_path=")] for name, config in rows
    }
    assert {name: path for name, path in paths.items() if path != SEARCH_PATH} == {}


def test_the_app_role_cannot_create_temporary_tables(
    pg: PostgresStore, pg_template: Template, pg_database: str
) -> None:
    with (
        app_connection(pg, "user:bob") as conn,
        pytest.raises(psycopg.errors.InsufficientPrivilege),
    ):
        conn.execute("CREATE TEMP TABLE memberships (org text, member text, role text)")
    with _admin(pg_template, pg_database) as conn:  # the control: the database owner may
        conn.execute("CREATE TEMP TABLE scratch (x int)")


@pytest.mark.fresh_database
def test_temporary_tables_do_not_shadow_the_definer_functions(
    seeded: PostgresStore, pg_template: Template, pg_database: str
) -> None:
    """Even with TEMPORARY granted back, a session's temporary memberships or invites table is
    not what the definer functions read: every name in them is qualified, pg_temp is last."""
    service = LessonService(seeded)
    service.org_create(ALICE, OrgCreateParams(slug="acme"))
    with _admin(pg_template, pg_database) as conn:
        conn.execute(f"GRANT TEMPORARY ON DATABASE {pg_database} TO lorestore_app")
    with app_connection(seeded, "user:bob") as conn:
        conn.execute("CREATE TEMP TABLE memberships (org text, member text, role text)")
        conn.execute("INSERT INTO memberships VALUES ('org:acme', 'user:bob', 'owner')")
        assert conn.execute("SELECT lorestore_owners()").fetchone() == (["user:bob"],)
        assert conn.execute("SELECT count(*) FROM public.lessons").fetchone() == (1,)  # his own
    with app_connection(seeded, "user:bob") as conn:
        conn.execute("CREATE TEMP TABLE invites (LIKE public.invites)")
        conn.execute(
            "INSERT INTO invites (id, org, invitee, role, code_hash, created_by, created_at, "
            "expires_at) VALUES (gen_random_uuid(), 'org:acme', 'user:bob', 'owner', 'forged', "
            "'user:alice', now(), now() + interval '1 day')"
        )
        assert conn.execute("SELECT lorestore_accept_invite('forged')").fetchone() == (None,)
        assert conn.execute("SELECT count(*) FROM public.memberships").fetchone() == (0,)
    code = service.org_invite(ALICE, OrgInviteParams(org="acme", user="bob")).code
    assert service.org_accept(BOB, OrgAcceptParams(code=code)).org == "org:acme"  # the control


def test_project_declarations_are_the_owners_own_in_raw_sql(seeded: PostgresStore) -> None:
    """project_repos: another tenant's declarations are invisible and cannot be added to,
    taken out or moved; each refusal beside the owner's own row (the control)."""
    from lorestore.models import ProjectAddParams

    service = LessonService(seeded)
    service.project_add(ALICE, ProjectAddParams(name="billing", repos=["alice/app"]))
    service.project_add(BOB, ProjectAddParams(name="tools", repos=["bob/app"]))
    with app_connection(seeded, "user:bob") as conn:
        rows = conn.execute("SELECT owner, project, repo FROM project_repos").fetchall()
        assert rows == [("user:bob", "tools", "bob/app")]
        assert conn.execute("DELETE FROM project_repos WHERE owner = 'user:alice'").rowcount == 0
        with pytest.raises(InsufficientPrivilege):
            conn.execute(
                "INSERT INTO project_repos (owner, project, repo, added_at, added_by) "
                "VALUES ('user:alice', 'billing', 'bob/app', now(), 'user:bob')"
            )
        with pytest.raises(InsufficientPrivilege):  # no UPDATE at all: never moved
            conn.execute("UPDATE project_repos SET owner = 'user:alice'")
    with app_connection(seeded, "user:alice") as conn:
        rows = conn.execute("SELECT owner, project, repo FROM project_repos").fetchall()
        assert rows == [("user:alice", "billing", "alice/app")]
