"""Imports that cannot forge, and a dry run that refuses what the import refuses, through the
real CLI and REST on both backends (security issue 19, items 10 and 14; hardening 18.6):

- a dry run checks the owner's cap across its batches exactly as the import does;
- a write token's import counts as one session of the importer and records the importer as
  the versions' actor, the file's claims kept as provenance; a reviewer's keeps the file's;
- LoreKit-derived ids come from a secret of the store, and an id another tenant holds lands
  like any other id (no `id_taken` to tell the importer the address exists).

Each refusal or reduction has its control beside it."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import Cli
from tests.migrating import pg_url
from tests.pg import Template
from tests.portable import T0, header, lesson, line
from tests.serving import Api, make_api

from lorestore.portable import importer

S = "repo::acme/app"


@pytest.fixture(params=["sqlite", "postgres"])
def backend(
    request: pytest.FixtureRequest, home: Path, monkeypatch: pytest.MonkeyPatch
) -> str | None:
    """The CLI's and REST's store: LORESTORE_HOME's SQLite file (None), or a fresh PostgreSQL
    database as the application role (LORESTORE_DATABASE_URL); returns the URL an operator's
    `db cap` uses (the superuser's on PostgreSQL)."""
    if request.param == "sqlite":
        return None
    template: Template = request.getfixturevalue("pg_template")
    name = request.getfixturevalue("pg_database")
    monkeypatch.setenv("LORESTORE_DATABASE_URL", pg_url(template.app_url(name)))
    return pg_url(template.admin_url(name))


@pytest.fixture
def api(backend: str | None, home: Path) -> Iterator[Api]:
    yield from make_api(home)


def _file(tmp_path: Path, records: list[dict[str, Any]], name: str = "f.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(b"".join(x + b"\n" for x in [header(), *map(line, records)]))
    return path


def _cap(cli: Cli, backend: str | None, limit: int) -> None:
    url = ["--database-url", backend] if backend else []
    cli.ok("db", "cap", "user:local", str(limit), *url)


# --- 18.6: the dry run and the cap -----------------------------------------------------------


def test_a_dry_run_refuses_at_the_cap_what_the_import_refuses(
    cli: Cli, backend: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(importer, "BATCH", 3)  # eight lessons: three batches
    cli.ok("write", "global", "first", "A lesson that was there before")
    _cap(cli, backend, 6)
    path = _file(tmp_path, [lesson(f"k{i}", f"lesson {i}") for i in range(8)])
    dry = cli("import", str(path), "--dry-run", "--json")
    assert dry.exit_code == 1, dry.stderr
    promised = dry.json()
    assert cli.ok("list", S)["lessons"] == []  # the dry run wrote nothing
    done = cli("import", str(path), "--json")
    assert done.exit_code == 1
    landed = done.json()
    for result in (promised, landed):
        assert result["lessons"] == {"added": 5, "unchanged": 0, "differs": 0, "refused": 3}
        assert [(p["code"], p["line"]) for p in result["problems"]] == [
            ("cap_exceeded", 7),
            ("cap_exceeded", 8),
            ("cap_exceeded", 9),
        ]
    assert len(cli.ok("list", S)["lessons"]) == 5
    # The control: with room for all, the dry run and the import both take all, exit 0.
    _cap(cli, backend, 100)
    assert cli.ok("import", str(path), "--dry-run")["lessons"]["added"] == 3
    assert cli.ok("import", str(path))["lessons"] == {
        "added": 3,
        "unchanged": 5,
        "differs": 0,
        "refused": 0,
    }


# --- 19.10: recurrence and authorship ------------------------------------------------------


def _forged(key: str) -> dict[str, Any]:
    """A lesson claiming 5,000 sessions and versions written by other people."""
    return lesson(
        key,
        "Deploys need the staging key",
        seen_count=5000,
        version=2,
        source={"agent": "claude-code", "author": "bob"},
        versions=[
            {
                "version": 1,
                "state": "superseded",
                "value": "Deploys need a key",
                "tags": [],
                "recorded_at": T0,
                "actor": "user:bob",
                "source": {},
            },
            {
                "version": 2,
                "state": "accepted",
                "value": "Deploys need the staging key",
                "tags": [],
                "recorded_at": T0,
                "actor": "user:carol",
                "source": {},
            },
        ],
    )


def _post(api: Api, token: str, records: list[dict[str, Any]]) -> dict[str, Any]:
    body = b"".join(x + b"\n" for x in [header(), *map(line, records)])
    response = api.client.post(
        "/api/v1/memory_import", content=body, headers={"Authorization": f"Bearer {token}"}
    )
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def test_a_write_tokens_import_counts_once_and_signs_as_the_importer(api: Api) -> None:
    writer = api.mint(permission="write")
    forged = _forged("deploy")
    assert _post(api, writer, [forged])["lessons"]["added"] == 1
    read = api.ok("memory_read", {"scope": S, "key": "deploy"})["lesson"]
    assert read["seen_count"] == 1 and read["trust"] == "candidate"
    history = api.ok("memory_history", {"scope": S, "key": "deploy"})["versions"]
    assert [v["actor"] for v in history] == ["user:local", "user:local"]
    # The file's claims are kept as provenance, and travel with an export.
    exported = [json.loads(x) for x in api.get("memory_export").content.splitlines()[1:]]
    (mine,) = [r for r in exported if r.get("key") == "deploy"]
    assert mine["claimed"] == {"seen_count": 5000, "actors": {"1": "user:bob", "2": "user:carol"}}
    assert mine["source"] == {"agent": "claude-code", "author": "bob"}
    # The same file again changes nothing; a sighting from one more session makes two.
    assert _post(api, writer, [forged])["lessons"]["unchanged"] == 1
    value = {"scope": S, "key": "deploy", "value": forged["value"]}
    api.ok("memory_write", value, token=writer)  # the importer's own session: still one
    assert api.ok("memory_read", {"scope": S, "key": "deploy"})["lesson"]["seen_count"] == 1
    api.ok("memory_write", value, token=writer, headers={"Lorestore-Session": "another"})
    assert api.ok("memory_read", {"scope": S, "key": "deploy"})["lesson"]["seen_count"] == 2
    # The control: a reviewer's import (the admin token) keeps what the file says.
    kept = _forged("reviewed")
    assert _post(api, api.token, [kept])["lessons"]["added"] == 1
    read = api.ok("memory_read", {"scope": S, "key": "reviewed"})["lesson"]
    assert read["seen_count"] == 5000
    history = api.ok("memory_history", {"scope": S, "key": "reviewed"})["versions"]
    assert [v["actor"] for v in history] == ["user:bob", "user:carol"]


# --- 19.14: ids no other tenant can predict or probe ------------------------------------------

# How LoreKit lessons' ids were derived before: a constant anyone could read in the source.
OLD_NAMESPACE = uuid.UUID("6f1c2d4e-8a57-5b0e-9c3f-2e7d41a9b8c6")


def _as(monkeypatch: pytest.MonkeyPatch, user: str) -> None:
    monkeypatch.setenv("LORESTORE_USER", user)


def _kit(root: Path, key: str, text: str) -> Path:
    (root / "global").mkdir(parents=True)
    body = f'---\nscope: "global"\nkey: {json.dumps(key)}\ncreated: "{T0}"\n---\n{text}\n'
    (root / "global" / f"{key}.md").write_text(body)
    return root


def test_no_one_else_can_take_a_lorekit_lessons_id_first(
    cli: Cli, backend: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    predicted = str(uuid.uuid5(OLD_NAMESPACE, "user:alice\x1fglobal\x1fdeploy"))
    _as(monkeypatch, "mallory")
    squat = _file(tmp_path, [lesson("squat", "Mallory's lesson", scope="global", id=predicted)])
    assert cli.ok("import", str(squat))["lessons"]["added"] == 1
    _as(monkeypatch, "alice")
    kit = _kit(tmp_path / "kit", "deploy", "Deploy from main.")
    done = cli("import", "--format", "lorekit", str(kit), "--json")
    assert done.exit_code == 0, done.stdout
    assert done.json()["lessons"]["added"] == 1
    mine = cli.ok("read", "global", "deploy")["lesson"]
    assert mine["id"] != predicted and mine["value"] == "Deploy from main."
    # The control: the same tree again finds what the first import added.
    again = cli.ok("import", "--format", "lorekit", str(kit))
    assert again["lessons"] == {"added": 0, "unchanged": 1, "differs": 0, "refused": 0}


def test_an_id_another_tenant_holds_lands_like_any_other(
    cli: Cli, backend: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _as(monkeypatch, "alice")
    cli.ok("import", str(_file(tmp_path, [lesson("deploy", "Alice's lesson", scope="global")])))
    held = cli.ok("read", "global", "deploy")["lesson"]["id"]
    _as(monkeypatch, "mallory")
    probe = _file(tmp_path, [lesson("deploy", "A guess", scope="global", id=held)], "probe.jsonl")
    fresh = _file(tmp_path, [lesson("other", "A fresh id", scope="global")], "fresh.jsonl")
    probed, control = (cli("import", str(p), "--json") for p in (probe, fresh))
    # The same answer as for an id nobody holds (the control): added, no problem, exit 0.
    assert (probed.exit_code, control.exit_code) == (0, 0)
    for result in (probed.json(), control.json()):
        assert result["lessons"] == {"added": 1, "unchanged": 0, "differs": 0, "refused": 0}
        assert result["problems"] == []
    assert cli.ok("read", "global", "deploy")["lesson"]["value"] == "A guess"
    assert cli.ok("import", str(probe))["lessons"]["unchanged"] == 1  # idempotent, too
    _as(monkeypatch, "alice")  # and Alice's lesson is as it was
    assert cli.ok("read", "global", "deploy")["lesson"] == dict(
        cli.ok("read", "global", "deploy")["lesson"], id=held, value="Alice's lesson"
    )


def test_a_tombstone_id_another_tenant_holds_lands_like_any_other(
    cli: Cli, backend: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _as(monkeypatch, "alice")
    cli.ok("write", "global", "mocks", "Mock the database")
    cli.ok("reject", "global", "mocks", "--reason", "use the real one")
    out = cli("export", "--json")
    (tomb,) = [json.loads(x) for x in out.stdout.splitlines()[1:] if '"tombstone"' in x]
    _as(monkeypatch, "mallory")
    copied = dict(tomb, owner={"user": "mallory"}, reason="mine")
    fresh = dict(copied, id=str(uuid.uuid4()), scope="repo::mallory/app")
    for record in (copied, fresh):  # the same answer for a held id as for a fresh one
        path = _file(tmp_path, [record], "tomb.jsonl")
        result = cli("import", str(path), "--json")
        assert result.exit_code == 0, result.stdout
        assert result.json()["tombstones"]["added"] == 1 and result.json()["problems"] == []
        assert cli.ok("import", str(path))["tombstones"]["unchanged"] == 1
    refused = cli("write", "global", "again", "mock the database", "--json")
    assert refused.exit_code == 1 and refused.error()["code"] == "rejected_value"


# --- 19.12: a key with an invisible character comes in by no path ---------------------------


def test_an_import_refuses_a_new_key_with_an_invisible_character(
    cli: Cli, backend: str | None, tmp_path: Path
) -> None:
    path = _file(
        tmp_path,
        [lesson("pg\u200b-local", "use the local postgres"), lesson("pg-local", "the control")],
    )
    result = cli("import", str(path), "--json")
    assert result.exit_code == 1, result.stderr
    report = result.json()
    assert report["lessons"] == {"added": 1, "unchanged": 0, "differs": 0, "refused": 1}
    assert [(p["code"], p["line"]) for p in report["problems"]] == [("invalid_key", 2)]
    # The control beside it landed; the look-alike did not.
    assert [item["key"] for item in cli.ok("list", S)["lessons"]] == ["pg-local"]
