"""`lorestore migrate` between real SQLite files and real PostgreSQL databases, through the
command: a store seeded through the service (users, an org with a binding, versions, a
proposed and an accepted revision, rejected values, lifted tombstones, archived and expired
lessons, tokens, policies, recalls) survives SQLite -> PostgreSQL -> SQLite record for
record; a second run copies nothing; a value the target rejected stays out while the rest
lands; a dry run writes nothing; roles that row-level security confines are refused."""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from tests.conftest import Clock, dump_text
from tests.migrating import (
    ACTORS,
    ALICE,
    BOB,
    LOCAL,
    TEAM,
    add_ext,
    comparable,
    pg_url,
    raw_rows,
    seed,
    service_view,
    sqlite_url,
    write,
)
from tests.pg import Pool, Template
from typer.testing import CliRunner

from lorestore.auth.actor import Actor
from lorestore.cli.main import app
from lorestore.core.errors import LorestoreError
from lorestore.models import Address, ListParams, NoParams, ReadParams, RejectParams, SearchParams
from lorestore.service import LessonService
from lorestore.storage.postgres import PostgresStore
from lorestore.storage.postgres.setup import init_database
from lorestore.storage.sqlite import SQLiteStore

# --- running the command ---------------------------------------------------------------


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["migrate", *args], catch_exceptions=False)  # the real CLI
    return result.exit_code, result.stdout, result.stderr


def migrate(source: str, target: str, *extra: str) -> dict[str, Any]:
    code, out, err = run("--from", source, "--to", target, "--json", *extra)
    assert code == 0, err or out
    report: dict[str, Any] = json.loads(out)
    return report


def incomplete(source: str, target: str, *extra: str) -> dict[str, Any]:
    """A run that copied what it could and exits 1 for what it could not."""
    code, out, err = run("--from", source, "--to", target, "--json", *extra)
    assert code == 1, err
    report: dict[str, Any] = json.loads(out)
    assert report["complete"] is False
    return report


def refused(source: str, target: str) -> tuple[int, dict[str, Any]]:
    code, _, err = run("--from", source, "--to", target, "--json")
    body: dict[str, Any] = json.loads(err)["error"]
    return code, body


@pytest.fixture
def source(tmp_path: Path, clock: Clock) -> Iterator[tuple[Path, dict[str, str]]]:
    path = tmp_path / "source.db"
    store = SQLiteStore(path)
    secrets = seed(LessonService(store, clock=clock), store, clock)
    store.close()
    add_ext(path)
    yield path, secrets


def counts_of(report: dict[str, Any], field: str) -> dict[str, int]:
    return {t: c[field] for t, c in report["tables"].items()}


@pytest.fixture
def new_pg(pg_template: Template, pg_pool: Pool) -> Iterator[Callable[[], tuple[str, str]]]:
    """Empty migrated PostgreSQL databases lent by the pool: each as its admin URL and app-role
    conninfo."""
    names: list[str] = []

    def make() -> tuple[str, str]:
        names.append(pg_pool.acquire())
        return pg_url(pg_template.admin_url(names[-1])), pg_template.app_url(names[-1])

    yield make
    for name in names:
        pg_pool.release(name)


@pytest.fixture
def pg(new_pg: Callable[[], tuple[str, str]]) -> tuple[str, str]:
    return new_pg()


# --- the round trip ----------------------------------------------------------------------


def test_round_trip_sqlite_postgres_sqlite_keeps_every_record(
    source: tuple[Path, dict[str, str]], pg: tuple[str, str], tmp_path: Path, clock: Clock
) -> None:
    path, secrets = source
    original = SQLiteStore(path)
    before_rows, before_view = raw_rows(original), service_view(original, clock)
    assert all(c["ok"] for v in ACTORS for c in before_view[v.principal]["verify"]["chains"])

    there = migrate(sqlite_url(path), pg[0])
    source_counts = counts_of(there, "source")
    assert counts_of(there, "copied") == source_counts
    assert all(n > 0 for n in source_counts.values()), source_counts
    assert there["refused"] == [] and there["differs"] == []

    remote = PostgresStore(pg[1], max_size=2)
    assert raw_rows(remote) == before_rows  # SQLite's user:local row came along, too
    assert service_view(remote, clock) == before_view  # as the app role, through RLS
    hits = LessonService(remote).memory_search(ALICE, SearchParams(query="canary", scopes=[TEAM]))
    assert [h.lesson.key for h in hits.hits] == ["deploy"]  # the generated tsvector is built

    final = tmp_path / "back" / "lorestore.db"
    back = migrate(pg[0], sqlite_url(final))
    assert counts_of(back, "source") == source_counts
    # The new file's own user:local is kept; everything else is copied.
    assert back["tables"]["principals"]["present"] == 1
    assert back["tables"]["principals"]["copied"] == source_counts["principals"] - 1
    returned = SQLiteStore(final)
    assert comparable(raw_rows(returned)) == comparable(before_rows)
    assert service_view(returned, clock) == before_view
    lint = ReadParams(scope=TEAM, key="lint", as_of="2026-01-01T12:03:00Z")
    assert LessonService(returned, clock=clock).memory_read(ALICE, lint).lesson.version == 1
    # Tokens work on both copies: only their hashes moved, and they match the secrets.
    assert LessonService(remote, clock=clock).authenticate(secrets["alice"]).orgs == ("org:acme",)
    assert LessonService(returned, clock=clock).authenticate(secrets["local"]).scopes == (
        "repo::acme/*",
    )
    for store in (remote, returned, original):
        store.close()


def test_postgres_to_postgres_and_sqlite_to_sqlite(
    source: tuple[Path, dict[str, str]],
    pg: tuple[str, str],
    new_pg: Callable[[], tuple[str, str]],
    tmp_path: Path,
    clock: Clock,
) -> None:
    path, _ = source
    original = SQLiteStore(path)
    expected, view = raw_rows(original), service_view(original, clock)
    original.close()
    migrate(sqlite_url(path), pg[0])
    other = new_pg()
    report = migrate(pg[0], other[0])
    assert counts_of(report, "copied") == counts_of(report, "source")
    second = PostgresStore(other[1], max_size=2)
    assert raw_rows(second) == expected
    assert service_view(second, clock) == view
    second.close()

    copy = SQLiteStore(tmp_path / "copy.db")
    migrate(sqlite_url(path), sqlite_url(copy.path))
    assert comparable(raw_rows(copy)) == comparable(expected)
    assert service_view(copy, clock) == view
    copy.close()


def test_second_run_copies_nothing(
    source: tuple[Path, dict[str, str]], pg: tuple[str, str], tmp_path: Path
) -> None:
    path, _ = source
    first = migrate(sqlite_url(path), pg[0])
    assert first["as"] is None and first["mode"].startswith("whole store")
    remote = PostgresStore(pg[1], max_size=2)
    after_first = raw_rows(remote)
    # The target has principals now: a whole-store copy is refused, before anything moves...
    code, error = refused(sqlite_url(path), pg[0])
    assert (code, error["code"]) == (1, "conflict")
    assert "--as USER" in error["hint"]
    assert raw_rows(remote) == after_first
    # ...and each person's tenant, moved again, is all there already.
    totals: dict[str, int] = {}
    for user in ("alice", "bob", "local"):
        again = migrate(sqlite_url(path), pg[0], "--as", user)
        assert set(counts_of(again, "copied").values()) == {0}, user
        assert again["refused"] == [] and again["differs"] == []
        for table, n in counts_of(again, "present").items():
            totals[table] = totals.get(table, 0) + n
    # Each owner's rows were present in exactly one tenant's run (org:acme's in none).
    assert totals["lessons"] < counts_of(first, "source")["lessons"]
    assert raw_rows(remote) == after_first
    remote.close()
    # The other direction, too.
    final = SQLiteStore(tmp_path / "back.db")
    migrate(pg[0], sqlite_url(final.path))
    before = raw_rows(final)
    back_again = migrate(pg[0], sqlite_url(final.path), "--as", "local")
    assert set(counts_of(back_again, "copied").values()) == {0}
    assert raw_rows(final) == before
    final.close()


def test_a_later_run_adds_new_rows_and_never_overwrites(
    tmp_path: Path, pg: tuple[str, str], clock: Clock
) -> None:
    path = tmp_path / "source.db"
    store = SQLiteStore(path)
    service = LessonService(store, clock=clock)
    write(service, LOCAL, "global", "kept", "First value.")
    migrate(sqlite_url(path), pg[0])
    clock.advance(minutes=1)
    write(service, LOCAL, "global", "kept", "Second value.")  # changed after the first run
    write(service, LOCAL, "global", "new", "A lesson written later.")
    store.close()

    report = incomplete(sqlite_url(path), pg[0])  # the changed lesson was not copied
    counts = report["tables"]
    assert (counts["lessons"]["copied"], counts["lessons"]["differs"]) == (1, 1)
    assert counts["lesson_versions"] == {
        "source": 3,
        "copied": 1,  # the new lesson's
        "present": 1,
        "differs": 0,
        "refused": 1,  # v2 of the lesson the target holds in another state
        "skipped": 0,
    }
    assert [(d["table"], d["reason"]) for d in report["differs"]] == [("lessons", "target_differs")]
    assert report["refused"] == []
    # The source's chain grew from where the target's copy ends, so it is extended.
    assert counts["audit_log"] == {
        "source": 3,
        "copied": 2,
        "present": 1,
        "differs": 0,
        "refused": 0,
        "skipped": 0,
    }
    target = PostgresStore(pg[1], max_size=2)
    there = LessonService(target, clock=clock)
    assert read_value(there, LOCAL, "global", "kept") == "First value."
    assert read_value(there, LOCAL, "global", "new") == "A lesson written later."
    assert there.audit_verify(LOCAL, NoParams()).ok
    target.close()


# --- refusals, each beside what still lands -----------------------------------------------

INDENT, SQUASH, REBASE = "Indent with tabs.", "Squash before merging.", "Rebase onto main."
NOTES = "repo::alice/notes"


def code_of(call: Any) -> str:
    with pytest.raises(LorestoreError) as err:
        call()
    return str(err.value.code)


def test_target_tombstone_refuses_the_value_and_the_rest_lands(
    tmp_path: Path, pg: tuple[str, str], clock: Clock
) -> None:
    path = tmp_path / "source.db"
    store = SQLiteStore(path)
    service = LessonService(store, clock=clock)
    write(service, ALICE, NOTES, "indent", INDENT)
    write(service, ALICE, "project::x", "indent-old", INDENT)
    service.memory_reject(ALICE, RejectParams(scope="project::x", key="indent-old", reason="r"))
    write(service, BOB, "repo::bob/dotfiles", "indent", INDENT)
    write(service, ALICE, NOTES, "squash", SQUASH)
    write(service, ALICE, NOTES, "rebase", REBASE)
    write(service, ALICE, "global", "other", "Unrelated lesson.")
    store.close()

    target = PostgresStore(pg[1], max_size=2)
    there = LessonService(target, clock=clock)
    write(there, ALICE, "global", "t1", "indent  WITH tabs.")  # the same normalised value
    there.memory_reject(ALICE, RejectParams(scope="global", key="t1", reason="spaces here"))
    write(there, ALICE, "branch::alice/notes::dev", "t2", SQUASH)  # narrower than NOTES
    there.memory_reject(
        ALICE, RejectParams(scope="branch::alice/notes::dev", key="t2", reason="not here")
    )
    write(there, ALICE, "global", "t3", REBASE)
    there.memory_reject(ALICE, RejectParams(scope="global", key="t3", reason="hm"))
    there.memory_reject(ALICE, RejectParams(scope="global", key="t3", reason="ok", undo=True))

    # The target has principals of its own: each person's tenant moves as that person.
    report = incomplete(sqlite_url(path), pg[0], "--as", "alice")
    others = migrate(sqlite_url(path), pg[0], "--as", "bob")

    (lesson,) = report["refused"]
    assert lesson["reason"] == "rejected_value"
    assert lesson["details"] | {"tombstone": None} == {
        "owner": "user:alice",
        "scope": NOTES,
        "key": "indent",
        "tombstone": None,
    }
    assert "rejected at global in the target by user:alice" in lesson["message"]
    assert "spaces here" in lesson["message"]
    counts = report["tables"]
    assert (counts["lessons"]["copied"], counts["lessons"]["refused"]) == (4, 1)
    assert counts["lessons"]["skipped"] == 1  # bob's, moved by his own run
    assert counts["lesson_versions"]["refused"] == counts["lesson_sessions"]["refused"] == 1
    assert others["tables"]["lessons"]["copied"] == 1
    # The refused lesson is absent; the broader-scope rule refused it, the others landed:
    # another owner's copy, a narrower tombstone, a lifted one, and a rejected record.
    assert code_of(lambda: there.memory_read(ALICE, ReadParams(scope=NOTES, key="indent"))) == (
        "not_found"
    )
    assert read_value(there, BOB, "repo::bob/dotfiles", "indent") == INDENT
    assert read_value(there, ALICE, NOTES, "squash") == SQUASH
    assert read_value(there, ALICE, NOTES, "rebase") == REBASE
    assert read_value(there, ALICE, "global", "other") == "Unrelated lesson."
    kept = there.memory_history(ALICE, Address(scope="project::x", key="indent-old"))
    assert kept.trust == "rejected"
    # Alice's chain in the target is her own: the source's is carried whole after it, under
    # a migration record linking both heads; bob's came over as it is. Every chain verifies.
    assert report["chains"] == [
        {
            "owner": "user:alice",
            "copied": counts["audit_log"]["copied"],
            "present": 0,
            "linked": True,
        }
    ]
    assert counts["audit_log"]["copied"] == counts["audit_log"]["source"] - 1  # all of hers
    assert others["chains"][0]["linked"] is False
    for actor in (ALICE, BOB):
        result = there.audit_verify(actor, NoParams())
        assert result.ok and result.chains
    target.close()


def read_value(service: LessonService, actor: Actor, scope: str, key: str) -> str:
    return service.memory_read(actor, ReadParams(scope=scope, key=key)).lesson.value


def test_address_held_by_another_lesson_is_refused(
    tmp_path: Path, pg: tuple[str, str], clock: Clock
) -> None:
    path = tmp_path / "source.db"
    store = SQLiteStore(path)
    service = LessonService(store, clock=clock)
    write(service, LOCAL, "global", "k", "The source's lesson.")
    write(service, LOCAL, "global", "k2", "Another source lesson.")
    store.close()
    target = PostgresStore(pg[1], max_size=2)
    there = LessonService(target, clock=clock)
    write(there, LOCAL, "global", "k", "The target's own lesson.")

    report = incomplete(sqlite_url(path), pg[0])
    reasons = sorted(r["reason"] for r in report["refused"])
    assert reasons == ["address_taken"]
    assert [c["linked"] for c in report["chains"]] == [True]  # carried after the target's
    assert there.audit_verify(LOCAL, NoParams()).ok
    assert read_value(there, LOCAL, "global", "k") == "The target's own lesson."
    assert read_value(there, LOCAL, "global", "k2") == "Another source lesson."
    target.close()


def test_a_lesson_where_the_target_routes_its_scope_to_another_org_is_refused(
    tmp_path: Path, pg: tuple[str, str], clock: Clock
) -> None:
    from lorestore.models import OrgBindParams, OrgCreateParams

    path = tmp_path / "source.db"
    store = SQLiteStore(path)
    service = LessonService(store, clock=clock)
    write(service, BOB, "repo::acme/web", "deploy", "Bob's own note on deploying acme/web.")
    write(service, BOB, "branch::acme/web::main", "ci", "Bob's note on main's CI.")
    write(service, BOB, "repo::bob/dotfiles", "shell", "Use zsh.")
    store.close()
    target = PostgresStore(pg[1], max_size=2)
    there = LessonService(target, clock=clock)
    there.org_create(ALICE, OrgCreateParams(slug="acme", name="Acme"))
    there.org_bind(ALICE, OrgBindParams(org="acme", pattern="repo::acme/*"))

    report = incomplete(sqlite_url(path), pg[0], "--as", "bob")
    refusals = sorted(
        (r["details"]["scope"], r["reason"], r["details"]["target_org"])
        for r in report["refused"]
        if r["table"] == "lessons"
    )
    # Copied, both would sit in org:acme's territory as Bob's, out of Bob's reach (reads of
    # the scope go to the org, of which he is no member) and never the org's.
    assert refusals == [
        ("branch::acme/web::main", "scope_bound", "org:acme"),
        ("repo::acme/web", "scope_bound", "org:acme"),
    ]
    assert counts_of(report, "copied")["lessons"] == 1
    assert read_value(there, BOB, "repo::bob/dotfiles", "shell") == "Use zsh."  # the control
    assert there.memory_list(ALICE, ListParams(scope="repo::acme/web")).lessons == []
    target.close()


def test_a_lesson_the_source_itself_set_aside_is_copied_as_it_is(
    tmp_path: Path, pg: tuple[str, str], clock: Clock
) -> None:
    """Alice's own lesson under a pattern she then bound to her org is set aside in the source
    (it comes back on unbind): copied with the binding, it is set aside the same way."""
    from lorestore.models import OrgBindParams, OrgCreateParams

    path = tmp_path / "source.db"
    store = SQLiteStore(path)
    service = LessonService(store, clock=clock)
    write(service, ALICE, "repo::acme/web", "personal", "Alice's own note.")
    service.org_create(ALICE, OrgCreateParams(slug="acme", name="Acme"))
    bound = service.org_bind(ALICE, OrgBindParams(org="acme", pattern="repo::acme/*"))
    assert bound.own_lessons_routed == 1
    store.close()
    report = migrate(sqlite_url(path), pg[0])
    assert [r for r in report["refused"] if r["table"] == "lessons"] == []
    assert counts_of(report, "copied")["lessons"] == 1
    target = PostgresStore(pg[1], max_size=2)
    there = LessonService(target, clock=clock)
    there.org_unbind(ALICE, OrgBindParams(org="acme", pattern="repo::acme/*"))
    assert read_value(there, ALICE, "repo::acme/web", "personal") == "Alice's own note."
    target.close()


def test_dry_run_writes_nothing(
    source: tuple[Path, dict[str, str]], pg: tuple[str, str], tmp_path: Path, clock: Clock
) -> None:
    path, _ = source
    target = PostgresStore(pg[1], max_size=2)
    before = dump_text(target)
    dry = migrate(sqlite_url(path), pg[0], "--dry-run")
    assert dry["dry_run"] is True
    assert counts_of(dry, "copied") == counts_of(dry, "source")
    assert dump_text(target) == before
    # Positive control: the real run copies exactly what the dry run announced.
    real = migrate(sqlite_url(path), pg[0])
    assert counts_of(real, "copied") == counts_of(dry, "copied")
    assert dump_text(target) != before
    target.close()

    fresh = tmp_path / "new" / "lorestore.db"
    migrate(sqlite_url(path), sqlite_url(fresh), "--dry-run")
    assert not fresh.parent.exists()
    migrate(sqlite_url(path), sqlite_url(fresh))
    # An existing target stays as it is, even when the dry run has something to add.
    store = SQLiteStore(path)
    write(LessonService(store, clock=clock), LOCAL, "global", "late", "Written after.")
    store.close()
    dump = "\n".join(sqlite3.connect(fresh).iterdump())
    late = ("--from", sqlite_url(path), "--to", sqlite_url(fresh), "--as", "local")
    code, out, _ = run(*late, "--dry-run")
    assert code == 0 and "dry run: nothing was written" in out
    assert "\n".join(sqlite3.connect(fresh).iterdump()) == dump
    again = migrate(sqlite_url(path), sqlite_url(fresh), "--as", "local")
    assert again["tables"]["lessons"]["copied"] == 1


def test_refuses_a_role_confined_by_row_level_security(
    source: tuple[Path, dict[str, str]], pg: tuple[str, str]
) -> None:
    path, _ = source
    app_url = pg_url(pg[1])
    for args in ((sqlite_url(path), app_url), (app_url, sqlite_url(path.with_name("x.db")))):
        code, error = refused(*args)
        assert (code, error["code"]) == (1, "config_error")
        assert "lorestore_app" in error["message"] and "BYPASSRLS" in error["hint"]
    assert not path.with_name("x.db").exists()
    # Positive control: the superuser URL of the same database is accepted.
    assert migrate(sqlite_url(path), pg[0])["tables"]["lessons"]["copied"] > 0


def test_refuses_a_database_without_the_schema(
    source: tuple[Path, dict[str, str]], pg_template: Template
) -> None:
    path, _ = source
    name = f"lorestore_bare_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_template.admin, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        code, error = refused(sqlite_url(path), pg_url(pg_template.admin_url(name)))
        assert (code, error["code"]) == (1, "config_error")
        assert "no lorestore schema" in error["message"]
        assert "lorestore db init" in error["hint"]
        init_database(pg_template.admin_url(name))  # positive control: once set up, it works
        report = migrate(sqlite_url(path), pg_url(pg_template.admin_url(name)))
        assert counts_of(report, "copied") == counts_of(report, "source")
    finally:
        pg_template.drop(name)


def test_refuses_urls_it_cannot_use(tmp_path: Path, source: tuple[Path, dict[str, str]]) -> None:
    path, _ = source
    code, error = refused("mysql://db/lore", sqlite_url(tmp_path / "t.db"))
    assert (code, error["code"]) == (2, "invalid_argument") and "sqlite:///PATH" in error["hint"]
    code, error = refused(sqlite_url(path), sqlite_url(path))
    assert (code, error["code"]) == (2, "invalid_argument")
    code, error = refused(sqlite_url(tmp_path / "missing.db"), sqlite_url(tmp_path / "t.db"))
    assert (code, error["code"]) == (1, "config_error")
    assert not (tmp_path / "missing.db").exists() and not (tmp_path / "t.db").exists()
    # Positive control.
    assert migrate(sqlite_url(path), sqlite_url(tmp_path / "t.db"))["dry_run"] is False


def test_help_names_the_options_and_url_forms() -> None:
    code, out, _ = run("--help")
    assert code == 0
    for text in ("--from", "--to", "--dry-run", "--json", "sqlite:///PATH", "postgresql://"):
        assert text in out
