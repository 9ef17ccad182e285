"""`lorestore migrate` into a store that already has principals treats the source as untrusted
(#19 item 1), and carries the source's audit chains whole (#18 item 6), through the command on
both backends: a person's SQLite file, written with the CLI as any LORESTORE_USER, cannot make
its author an owner of the target's org, carry a token minted "for" another user, land lessons
as verified where its principal may not verify, or plant tombstones in another tenant; a whole-
store copy goes only into an empty target and says so. After the README's team order (the
server's maintenance has written audit events), migrate appends the source chain after the
target's under a migration record linking both heads, copies the raised cap, and exits 1 for
whatever it could not copy."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import Clock
from tests.migrating import pg_url, raw_rows, sqlite_url
from tests.pg import Pool, Template
from typer.testing import CliRunner

from lorestore.auth.actor import local_actor
from lorestore.cli.main import app
from lorestore.core.errors import LorestoreError
from lorestore.models import (
    Address,
    AuditParams,
    NoParams,
    OrgBindParams,
    OrgCreateParams,
    OrgParams,
    ReadParams,
    TokenCreateParams,
    WriteParams,
)
from lorestore.service import LessonService
from lorestore.storage.postgres import PostgresStore
from lorestore.storage.protocol import Store
from lorestore.storage.sqlite import SQLiteStore

ALICE = local_actor(principal="user:alice", session="a-1")
CAROL = local_actor(principal="user:carol", session="c-1")
DAVE = local_actor(principal="user:dave", session="d-1")
MALLORY = local_actor(principal="user:mallory", session="m-1")
LOCAL = local_actor(session="l-1")
TEAM = "repo::acme/app"


def cli(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env=env, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def as_user(home: Path, url: str, user: str) -> dict[str, str]:
    return {"LORESTORE_HOME": str(home), "LORESTORE_DATABASE_URL": url, "LORESTORE_USER": user}


def migrate(home: Path, source: str, target: str, *extra: str) -> tuple[int, dict[str, Any]]:
    """Run the command; the report (stdout) or the error (stderr) as JSON."""
    env = {"LORESTORE_HOME": str(home)}
    code, out, err = cli(env, "migrate", "--from", source, "--to", target, "--json", *extra)
    return code, json.loads(out) if out.strip() else json.loads(err)["error"]


class Target:
    """A store to migrate into: the URL migrate is given, the URL the CLI and the app use,
    and a Store opened as the app would (the application role on PostgreSQL)."""

    def __init__(self, migrate_url: str, app_url: str, store: Store) -> None:
        self.migrate_url, self.app_url, self.store = migrate_url, app_url, store


@pytest.fixture(params=["sqlite", "postgres"])
def target(
    request: pytest.FixtureRequest, tmp_path: Path, pg_template: Template, pg_pool: Pool
) -> Iterator[Target]:
    if request.param == "sqlite":
        path = tmp_path / "team.db"
        store: Store = SQLiteStore(path)
        yield Target(sqlite_url(path), sqlite_url(path), store)
        store.close()
        return
    name = pg_pool.acquire()
    app_conninfo = pg_template.app_url(name)
    store = PostgresStore(app_conninfo, max_size=2)
    yield Target(pg_url(pg_template.admin_url(name)), pg_url(app_conninfo), store)
    store.close()
    pg_pool.release(name)


# --- #19.1: a person's file is untrusted --------------------------------------------------


@pytest.fixture
def team(target: Target, clock: Clock) -> LessonService:
    """The team's store: alice owns org:acme bound to repo::acme/*, carol works there with a
    lesson of her own, dave holds a review token."""
    there = LessonService(target.store, clock=clock)
    there.org_create(ALICE, OrgCreateParams(slug="acme", name="Acme"))
    there.org_bind(ALICE, OrgBindParams(org="acme", pattern="repo::acme/*"))
    there.memory_write(CAROL, WriteParams(scope="global", key="style", value="Use black."))
    there.token_create(DAVE, TokenCreateParams(name="dave-review", permission="review"))
    return there


@pytest.fixture
def mallory_file(tmp_path: Path) -> tuple[str, str, Path]:
    """Mallory's own SQLite store, written with the CLI as whoever she likes. Returns its URL,
    the secret of the admin token she minted "for" carol, and the home she ran it in."""
    home = tmp_path / "mallory-home"
    home.mkdir()
    url = sqlite_url(tmp_path / "mallory.db")

    def run(user: str, *args: str) -> str:
        code, out, err = cli(as_user(home, url, user), *args)
        assert code == 0, err
        return out

    run("mallory", "org", "create", "acme")
    run("mallory", "write", TEAM, "deploy", "Deploy straight to prod.")
    run("mallory", "verify", TEAM, "deploy")
    run("mallory", "write", "global", "mine", "Mallory's verified lesson.")
    run("mallory", "verify", "global", "mine", "--note", "checked by me")
    run("mallory", "write", "global", "plain", "Mallory's plain lesson.")
    secret = json.loads(
        run("carol", "token", "create", "--name", "x", "--permission", "admin", "--json")
    )["token"]
    run("carol", "write", "global", "style", "Use black.")
    run("carol", "reject", "global", "style", "--reason", "planted")
    run("dave", "write", "global", "reviewed", "Dave's verified lesson.")
    run("dave", "verify", "global", "reviewed")
    return url, secret, home


def test_a_whole_store_copy_into_a_target_with_principals_is_refused(
    target: Target, team: LessonService, mallory_file: tuple[str, str, Path]
) -> None:
    url, secret, home = mallory_file
    before = raw_rows(target.store)
    code, error = migrate(home, url, target.migrate_url)
    assert (code, error["code"]) == (1, "conflict")
    assert "user:carol" in error["message"] and "--as USER" in error["hint"]
    assert raw_rows(target.store) == before  # nothing moved
    with pytest.raises(LorestoreError):
        team.authenticate(secret)


def test_one_tenant_moves_as_its_principal_and_nothing_else(
    target: Target, team: LessonService, mallory_file: tuple[str, str, Path]
) -> None:
    url, secret, home = mallory_file
    before = raw_rows(target.store)
    code, report = migrate(home, url, target.migrate_url, "--as", "mallory")
    # Her lesson at the org's bound scope would sit in org:acme's territory: refused (exit 1),
    # never landed in the org, let alone verified there.
    assert code == 1 and report["complete"] is False
    assert [(r["reason"], r["details"]["scope"]) for r in report["refused"]] == [
        ("scope_bound", TEAM)
    ]
    assert report["as"] == "user:mallory" and report["reviewer"] is False
    assert "skipped" in report["mode"]
    tables = report["tables"]
    for table in ("memberships", "tokens", "invites", "scope_bindings", "owner_stats"):
        assert tables[table]["copied"] == 0 and tables[table]["skipped"] == tables[table]["source"]
    assert tables["principals"]["copied"] == 1  # user:mallory herself, no org, no carol
    assert tables["tombstones"]["copied"] == 0 and tables["tombstones"]["skipped"] == 1
    # No membership, no token, no tombstone in carol's tenant.
    members = team.org_members(ALICE, OrgParams(org="acme")).members
    assert [m.member for m in members] == ["user:alice"]
    with pytest.raises(LorestoreError) as err:
        team.authenticate(secret)
    assert err.value.code == "unauthenticated"
    assert team.memory_read(CAROL, ReadParams(scope="global", key="style")).lesson.trust == (
        "candidate"
    )
    after = raw_rows(target.store)
    assert after["tombstones"] == before["tombstones"]
    assert after["memberships"] == before["memberships"] and after["tokens"] == before["tokens"]
    assert {r["owner"] for r in after["lessons"]} - {r["owner"] for r in before["lessons"]} == {
        "user:mallory"
    }
    # Her own lessons landed (the positive control), the verified one as the candidate it
    # is without her verification, which she may not grant here; the audit says so.
    mine = team.memory_read(MALLORY, ReadParams(scope="global", key="mine")).lesson
    assert (mine.trust, mine.review) == ("candidate", None)
    plain = team.memory_read(MALLORY, ReadParams(scope="global", key="plain")).lesson
    assert plain.value == "Mallory's plain lesson."
    assert report["trust_lowered"] == [mine.id]
    events = team.memory_audit(MALLORY, AuditParams(limit=100)).events
    assert events[0].action == "migrate.trust_lowered"  # newest first
    assert team.audit_verify(MALLORY, NoParams()).ok
    # Moving it again copies nothing and changes nothing.
    code, again = migrate(home, url, target.migrate_url, "--as", "mallory")
    assert code == 1 and set(t["copied"] for t in again["tables"].values()) == {0}
    assert raw_rows(target.store) == after


def test_a_principal_who_may_verify_there_keeps_the_trust(
    target: Target, team: LessonService, mallory_file: tuple[str, str, Path]
) -> None:
    url, _, home = mallory_file
    code, report = migrate(home, url, target.migrate_url, "--as", "dave")
    assert code == 0, report
    assert (report["reviewer"], report["trust_lowered"], report["refused"]) == (True, [], [])
    dave = LessonService(target.store).memory_read(DAVE, ReadParams(scope="global", key="reviewed"))
    assert dave.lesson.trust == "verified" and dave.lesson.review is not None


def test_as_must_name_a_user_of_the_source(
    target: Target, team: LessonService, mallory_file: tuple[str, str, Path]
) -> None:
    url, _, home = mallory_file
    before = raw_rows(target.store)
    code, error = migrate(home, url, target.migrate_url, "--as", "nobody")
    assert (code, error["code"]) == (2, "invalid_argument")
    assert "user:mallory" in error["hint"]
    code, error = migrate(home, url, target.migrate_url, "--as", "org:acme")
    assert (code, error["code"]) == (2, "invalid_argument")
    assert raw_rows(target.store) == before


def test_a_whole_store_copy_into_an_empty_target_says_so(
    target: Target, mallory_file: tuple[str, str, Path]
) -> None:
    url, secret, home = mallory_file
    code, report = migrate(home, url, target.migrate_url)
    assert code == 0, report
    assert report["as"] is None and report["mode"].startswith("whole store")
    assert "every identity" in report["mode"]
    assert LessonService(target.store).authenticate(secret).principal == "user:carol"
    code, out, _ = cli(
        {"LORESTORE_HOME": str(home)},
        "migrate",
        "--from",
        url,
        "--to",
        target.migrate_url,
        "--as",
        "mallory",
    )
    assert code == 0 and "one tenant" in out


# --- #18.6: the audit log is carried whole, the cap comes along ---------------------------


@pytest.fixture
def person_file(tmp_path: Path, clock: Clock) -> Path:
    """A person's store with an audit chain and a raised cap."""
    path = tmp_path / "person.db"
    store = SQLiteStore(path)
    service = LessonService(store, clock=clock)
    for key in ("a", "b", "c"):
        service.memory_write(LOCAL, WriteParams(scope="global", key=key, value=f"Lesson {key}."))
    store.close()
    code, _, err = cli(
        {"LORESTORE_HOME": str(tmp_path)},
        "db",
        "cap",
        "user:local",
        "20000",
        "--database-url",
        sqlite_url(path),
    )
    assert code == 0, err
    return path


def served(target: Target, home: Path) -> None:
    """What `lorestore serve`'s first start does to a new store: a maintenance run, whose
    sweeps each write an audit event."""
    env = {"LORESTORE_HOME": str(home), "LORESTORE_DATABASE_URL": target.app_url}
    code, _, err = cli(env, "maintain")
    assert code == 0, err


def chain_of(target: Target, owner: str) -> list[dict[str, Any]]:
    return [r for r in raw_rows(target.store)["audit_log"] if r["owner"] == owner]


def test_after_the_servers_first_start_the_source_chain_is_carried_whole(
    target: Target, person_file: Path, tmp_path: Path
) -> None:
    served(target, tmp_path)
    # The server's person wrote there too: the target counts its lessons, following the
    # store's default cap (NULL: no cap of its own).
    LessonService(target.store).memory_write(
        LOCAL, WriteParams(scope="global", key="here", value="Written on the server.")
    )
    caps = {r["owner"]: r["max_active"] for r in raw_rows(target.store)["owner_stats"]}
    assert caps["user:local"] is None
    own = chain_of(target, "user:local")
    assert own, "the maintenance run wrote the target's own events"
    source = sqlite_url(person_file)
    code, report = migrate(tmp_path, source, target.migrate_url)
    assert code == 0, report
    audit = report["tables"]["audit_log"]
    assert audit["copied"] == audit["source"] == 3 and report["refused"] == []
    assert report["chains"] == [{"owner": "user:local", "copied": 3, "present": 0, "linked": True}]
    chain = chain_of(target, "user:local")
    record = chain[len(own)]
    detail = json.loads(record["detail"]) if isinstance(record["detail"], str) else record["detail"]
    assert record["action"] == "migrate.chain" and record["prev_hash"] == own[-1]["hash"]
    assert (detail["target_head"], detail["head"]) == (own[-1]["hash"], chain[-1]["hash"])
    assert detail["events"] == 3
    service = LessonService(target.store)
    assert service.audit_verify(LOCAL, NoParams()).ok
    # The raised cap came along (the target's was the default).
    assert report["tables"]["owner_stats"]["copied"] == 1
    code, out, _ = cli(
        {"LORESTORE_HOME": str(tmp_path), "LORESTORE_DATABASE_URL": target.app_url},
        "audit",
        "verify",
        "--json",
    )
    assert code == 0 and json.loads(out)["ok"] is True
    caps = {r["owner"]: r["max_active"] for r in raw_rows(target.store)["owner_stats"]}
    assert caps["user:local"] == 20000
    # A later write chains on the carried head; a run again finds everything present.
    service.memory_write(LOCAL, WriteParams(scope="global", key="d", value="Lesson d."))
    assert service.audit_verify(LOCAL, NoParams()).ok
    code, again = migrate(tmp_path, source, target.migrate_url, "--as", "local")
    assert code == 0, again
    assert again["tables"]["audit_log"]["present"] == 3
    assert again["chains"][0]["linked"] is False
    assert service.memory_history(LOCAL, Address(scope="global", key="a")).versions


def test_a_source_chain_that_does_not_verify_is_refused_from_the_break_and_exits_1(
    target: Target, person_file: Path, tmp_path: Path
) -> None:
    # The file is its person's: they can drop the append-only trigger and edit an event.
    conn = sqlite3.connect(person_file)
    conn.execute("DROP TRIGGER audit_log_no_update")
    conn.execute(
        "UPDATE audit_log SET key = 'edited' WHERE id = (SELECT min(id) + 1 FROM audit_log)"
    )
    conn.commit()
    conn.close()
    served(target, tmp_path)
    code, report = migrate(tmp_path, sqlite_url(person_file), target.migrate_url)
    assert code == 1
    (refusal,) = report["refused"]
    assert (refusal["reason"], refusal["details"]["position"]) == ("audit_chain_broken", 2)
    assert report["tables"]["audit_log"] | {"source": 0} == {
        "source": 0,
        "copied": 1,
        "present": 0,
        "differs": 0,
        "refused": 2,
        "skipped": 0,
    }
    assert LessonService(target.store).audit_verify(LOCAL, NoParams()).ok


def test_a_cap_both_stores_set_differently_stays_the_targets_and_exits_1(
    target: Target, person_file: Path, tmp_path: Path
) -> None:
    code, _, err = cli(
        {"LORESTORE_HOME": str(tmp_path)},
        "db",
        "cap",
        "user:local",
        "300",
        "--database-url",
        target.migrate_url,
    )
    assert code == 0, err
    code, report = migrate(tmp_path, sqlite_url(person_file), target.migrate_url)
    assert code == 1
    assert [(d["table"], d["key"]) for d in report["differs"]] == [("owner_stats", "user:local")]
    assert report["tables"]["lessons"]["copied"] == 3  # everything else landed
    caps = {r["owner"]: r["max_active"] for r in raw_rows(target.store)["owner_stats"]}
    assert caps["user:local"] == 300
