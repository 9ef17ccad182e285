"""Per-owner caps through the surfaces that meet them, on both backends: the bytes an owner
stores are bounded (archived lessons, versions and kept foreign records count), the cap on
active lessons still holds, and the personal store has no cap unless its person sets one
(`lorestore db cap`). Security #19 item 11, hardening #18 item 14."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from tests.conftest import Cli, table_rows
from tests.migrating import pg_url
from tests.portable import header, lesson, line
from tests.serving import Api, error_of

from lorestore.auth.actor import local_actor
from lorestore.config import load_settings
from lorestore.models import TokenCreateParams
from lorestore.service import LessonService
from lorestore.storage.protocol import Store
from lorestore.storage.sqlite import SQLiteStore
from lorestore.transports.http.app import build_app

S = "repo::acme/app"
COUNTED = ("lessons", "lesson_versions", "foreign_records", "tombstones", "owner_stats")


@pytest.fixture
def api(store: Store) -> Iterator[Api]:
    """The REST application in process over the contract store (both backends), with an admin
    token of user:local."""
    settings = dataclasses.replace(load_settings(), maintenance_hours=None)
    service = LessonService(store)
    admin = TokenCreateParams.model_validate({"name": "admin", "permission": "admin"})
    token = service.token_create(local_actor(), admin).token
    with TestClient(build_app(service, settings), base_url="http://127.0.0.1") as client:
        yield Api(client, service, token)


@pytest.fixture
def db_url(store: Store, request: pytest.FixtureRequest) -> str:
    """The URL `lorestore db cap --database-url` takes for the store: its file, or on
    PostgreSQL the superuser's (the app role may not set caps)."""
    if isinstance(store, SQLiteStore):
        return f"sqlite:///{store.path}"
    template = request.getfixturevalue("pg_template")
    return pg_url(template.admin_url(request.getfixturevalue("pg_database")))


def counted_rows(store: Store) -> dict[str, list[str]]:
    return {table: table_rows(store, table) for table in COUNTED}


def import_body(*records: dict[str, object]) -> bytes:
    return b"".join(x + b"\n" for x in (header(), *(line(r) for r in records)))


def test_stored_bytes_are_capped_whatever_the_lessons_status(
    api: Api, cli: Cli, db_url: str, store: Store
) -> None:
    """Security #19 item 11 over REST: archived lessons, versions and unknown-type records
    count against the owner's byte cap; a refusal changes nothing; erasing makes room; other
    owners are not touched."""
    capped = cli.ok("db", "cap", "user:local", "--bytes", "5000", "--database-url", db_url)
    assert (capped["max_bytes"], capped["stored_bytes"]) == (5000, 0)
    # Each lesson of 1,000 bytes stores 2,002: its value, its version's value and ext "{}".
    api.ok("memory_write", {"scope": S, "key": "one", "value": "a" * 1000})
    api.ok("memory_archive", {"scope": S, "key": "one"})
    api.ok("memory_write", {"scope": S, "key": "two", "value": "b" * 1000})
    shown = cli.ok("db", "cap", "user:local", "--database-url", db_url)
    assert (shown["stored_bytes"], shown["active_lessons"]) == (4004, 1)
    before = counted_rows(store)
    refused = error_of(
        api.post("memory_write", {"scope": S, "key": "big", "value": "c" * 1000}), 409
    )
    assert (refused["code"], refused["details"]) == ("cap_exceeded", {"cap": "stored_bytes"})
    assert "lorestore delete" in refused["hint"] and "--bytes" in refused["hint"]
    # A new value of the same size adds a version: refused too.
    again = api.post("memory_write", {"scope": S, "key": "two", "value": "d" * 1000})
    assert error_of(again, 409)["details"] == {"cap": "stored_bytes"}
    # A record of a type this lorestore does not know is kept only within the cap.
    # So are the unknown fields an import keeps on a tombstone.
    note = {"type": "x-note", "id": "n1", "text": "e" * 3000}
    tomb = {
        "type": "tombstone",
        "id": "3c0c8f0e-5b7b-4c5e-8f7e-1f2a3b4c5d6e",
        "scope": "global",
        "digest": "0" * 64,
        "reason": "r",
        "actor": "user:local",
        "time": "2026-01-01T00:00:00Z",
        "x-padding": "p" * 3000,
    }
    kept = api.client.post(
        "/api/v1/memory_import",
        content=import_body(note, tomb),
        headers={"Authorization": f"Bearer {api.token}"},
    )
    assert kept.status_code == 200, kept.text
    assert [p["code"] for p in kept.json()["problems"]] == ["cap_exceeded"] * 2
    assert (kept.json()["unknown"]["added"], kept.json()["tombstones"]["added"]) == (0, 0)
    assert counted_rows(store) == before  # nothing of the refused writes was kept
    # The controls: a write that fits lands; a hard delete frees its lesson's bytes.
    api.ok("memory_write", {"scope": S, "key": "small", "value": "f" * 400})
    api.ok("memory_delete", {"scope": S, "key": "one"})
    assert api.ok("memory_write", {"scope": S, "key": "big", "value": "c" * 1000})["result"] == (
        "created"
    )
    shown = cli.ok("db", "cap", "user:local", "--database-url", db_url)
    assert shown["stored_bytes"] == 2002 + 802 + 2002  # two, small and big
    # Another owner's writes do not meet user:local's cap.
    bob = local_actor(principal="user:bob")
    token = api.service.token_create(bob, TokenCreateParams(name="bob")).token
    written = api.post("memory_write", {"scope": "global", "key": "k", "value": "c" * 1000}, token)
    assert written.status_code == 200, written.text


def test_the_cap_on_active_lessons_holds_over_rest(api: Api, cli: Cli, db_url: str) -> None:
    """The control of the byte cap: the lesson cap still refuses, with its own cap and hint,
    and archiving (which keeps the bytes) makes room under it."""
    cli.ok("db", "cap", "user:local", "2", "--database-url", db_url)
    for key in ("one", "two"):
        api.ok("memory_write", {"scope": S, "key": key, "value": "v"})
    refused = error_of(api.post("memory_write", {"scope": S, "key": "three", "value": "v"}), 409)
    assert (refused["code"], refused["details"]) == ("cap_exceeded", {"cap": "active_lessons"})
    assert "purge-expired" in refused["hint"]
    api.ok("memory_archive", {"scope": S, "key": "one"})
    api.ok("memory_write", {"scope": S, "key": "three", "value": "v"})


def test_the_personal_store_has_no_hidden_cap(cli: Cli, tmp_path: Path) -> None:
    """Hardening #18 item 14: an import of more than 10,000 lessons into the embedded store
    lands whole (it refused all beyond 10,000); a cap its person sets still holds."""
    records = [lesson(f"k{i}", f"lesson number {i}") for i in range(10_050)]
    (tmp_path / "big.jsonl").write_bytes(
        b"".join(x + b"\n" for x in (header(), *map(line, records)))
    )
    done = cli("import", str(tmp_path / "big.jsonl"), "--json")
    assert done.exit_code == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["lessons"]["added"] == 10_050
    shown = cli.ok("db", "cap", "user:local")
    assert (shown["max_active"], shown["max_bytes"], shown["active_lessons"]) == (
        None,
        None,
        10_050,
    )
    assert cli.ok("db", "cap", "default") == {
        "owner": "default",
        "max_active": None,
        "max_bytes": None,
    }
    # The control: a cap the person sets is kept and refuses.
    assert cli.ok("db", "cap", "user:local", "10050")["max_active"] == 10_050
    refused = cli("write", S, "one-more", "v", "--json")
    assert refused.exit_code == 1
    assert refused.error()["details"] == {"cap": "active_lessons"}


def test_an_import_past_the_byte_cap_says_what_counts(cli: Cli, tmp_path: Path) -> None:
    """The CLI's import names each lesson the byte cap refused and ends with the byte cap's
    fix (not the lesson cap's); the lessons that fit landed, and the exit status says not all
    did."""
    cli.ok("db", "cap", "user:local", "--bytes", "2KiB")
    records = [lesson(f"k{i}", str(i) * 400) for i in range(4)]  # 802 bytes each
    (tmp_path / "f.jsonl").write_bytes(b"".join(x + b"\n" for x in (header(), *map(line, records))))
    done = cli("import", str(tmp_path / "f.jsonl"))
    assert done.exit_code == 1
    assert done.stderr.count("cap_exceeded line") == 2
    assert "archived lessons and every version count too" in done.stderr
    assert "purge-expired" not in done.stderr
    assert cli.ok("db", "cap", "user:local")["stored_bytes"] == 2 * 802


@pytest.mark.fresh_database  # changes the database's default caps
def test_a_default_cap_applies_to_every_owner_without_its_own(
    cli: Cli, db_url: str, api: Api, store: Store
) -> None:
    """`db cap default` (a team served from the embedded store, or a server's own policy):
    an owner without caps of its own follows it, one with its own keeps them; `default`
    gives an owner back to the store's."""
    server = isinstance(store, SQLiteStore) is False
    shown = cli.ok("db", "cap", "default", "--database-url", db_url)
    assert (shown["max_active"], shown["max_bytes"]) == (
        (10_000, 1024**3) if server else (None, None)
    )
    cli.ok("db", "cap", "default", "1", "--bytes", "1MiB", "--database-url", db_url)
    cli.ok("db", "cap", "user:local", "3", "--database-url", db_url)
    bob = local_actor(principal="user:bob")
    token = api.service.token_create(bob, TokenCreateParams(name="bob")).token
    assert (
        api.post("memory_write", {"scope": "global", "key": "a", "value": "v"}, token).status_code
        == 200
    )
    refused = api.post("memory_write", {"scope": "global", "key": "b", "value": "v"}, token)
    assert error_of(refused, 409)["details"] == {"cap": "active_lessons"}
    for key in ("a", "b", "c"):  # user:local keeps its own cap of 3
        api.ok("memory_write", {"scope": S, "key": key, "value": "v"})
    back = cli.ok("db", "cap", "user:local", "default", "--database-url", db_url)
    assert (back["max_active"], back["max_bytes"]) == (1, 1024**2)
    assert error_of(api.post("memory_write", {"scope": S, "key": "d", "value": "v"}), 409)


def test_db_cap_refuses_what_is_not_a_cap(cli: Cli) -> None:
    """Bad input gets invalid_argument (exit 2) with the fix, and changes no cap."""
    for args in (
        ("user:local", "lots"),
        ("user:local", "none"),  # none is the store default's word; an owner says default
        ("user:local", "--bytes", "5MB"),
        ("default", "default"),
        ("user:local", "10000001"),
        ("nobody", "2"),
    ):
        bad = cli("db", "cap", *args, "--json")
        assert bad.exit_code == 2, args
        assert bad.error()["code"] == "invalid_argument" and "db cap" in bad.error()["hint"]
    assert cli.ok("db", "cap", "user:local")["max_active"] is None
