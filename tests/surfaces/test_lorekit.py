"""The LoreKit local store through the real CLI: a tree with lessons in all four scope forms,
an archived one, an expiring one and tags goes into lorestore and comes back byte for byte;
importing it again changes nothing; what LoreKit cannot hold is reported and never written
as a field; a file that is not a lesson is named and the rest still lands."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.conftest import Cli

from lorestore.auth.actor import local_actor
from lorestore.portable.jsonl import is_header, read_records
from lorestore.portable.lorekit import (
    FIELDS,
    file_text,
    front_matter,
    parse_file,
    read_tree,
    relative_path,
    slug,
)
from lorestore.portable.lorekit_writer import TreeWriter, losses
from lorestore.portable.models import ExportParams, ImportParams
from lorestore.portable.shapes import canonical
from lorestore.service import LessonService

LESSONS = {
    "global/use-uv-for-python-tooling.md": {
        "scope": "global",
        "key": "Use uv for Python tooling",
        "tags": ["python", "tooling"],
        "source_agent": "claude-code",
        "trigger": "session-end",
        "created": "2025-11-02T09:15:00.120Z",
        "updated": "2025-11-03T10:00:00.000Z",
        "archived_at": None,
        "origin_repo": None,
        "origin_branch": None,
        "origin_commit": None,
        "origin_pr": None,
        "expires_at": None,
        "seen_count": 3,
        "text": "Prefer `uv run` over activating a venv.\n\nIt is faster.",
    },
    "project/billing/invoices-freeze-on-fridays.md": {
        "scope": "project::billing",
        "key": "invoices freeze on Fridays",
        "tags": [],
        "created": "2026-01-05T08:00:00.000Z",
        "updated": "2026-01-05T08:00:00.000Z",
        "expires_at": "2027-06-30T00:00:00.000Z",  # an expiring lesson
        "seen_count": 1,
        "text": "No invoice migrations between Friday noon and Monday.",
    },
    "repo/acme/app/ci-needs-postgres-16.md": {
        "scope": "repo::acme/app",
        "key": "CI needs Postgres 16!",
        "tags": ["zeta", "ci", "db"],  # LoreKit's own order, kept
        "origin_repo": "acme/app",
        "origin_branch": "main",
        "origin_commit": "4f1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c",
        "origin_pr": 128,
        "created": "2025-12-01T12:00:00.500Z",
        "updated": "2025-12-02T12:00:00.999Z",
        "seen_count": 2,
        "text": "Integration tests need Postgres 16 running on 5432.",
    },
    "repo/acme/app/old-deploy-script.md": {
        "scope": "repo::acme/app",
        "key": "old deploy script",
        "tags": ["deploy"],
        "created": "2024-03-01T00:00:00.000Z",
        "updated": "2025-01-01T00:00:00.000Z",
        "archived_at": "2025-01-01T00:00:00.000Z",  # an archived lesson
        "seen_count": 1,
        "text": "Deploy with ./deploy.sh (replaced by the pipeline).",
    },
    "branch/acme/app/feature/login/login-flow-uses-pkce.md": {
        "scope": "branch::acme/app::feature/login",
        "key": "login flow uses PKCE",
        "tags": ["auth"],
        "origin_branch": "feature/login",
        "created": "2026-02-10T16:30:00.000Z",
        "updated": "2026-02-11T09:00:00.000Z",
        "seen_count": 1,
        "text": "The login flow uses PKCE; never store the verifier.",
    },
}


def write_tree(root: Path) -> dict[str, bytes]:
    """The tree as LoreKit writes it: every field, in its order, one JSON value per line."""
    files = {}
    for rel, lesson in LESSONS.items():
        fields = [
            f"{name}: {json.dumps(lesson.get(name), ensure_ascii=False, separators=(',', ':'))}"
            for name in FIELDS
        ]
        body = "---\n" + "\n".join(fields) + "\n---\n" + str(lesson["text"]) + "\n"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(body, encoding="utf-8")
        files[rel] = body.encode("utf-8")
    return files


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_a_lorekit_tree_round_trips_byte_for_byte(cli: Cli, tmp_path: Path) -> None:
    original = write_tree(tmp_path / "in")
    result = cli.ok("import", "--format", "lorekit", str(tmp_path / "in"))
    assert result["lessons"] == {"added": 5, "unchanged": 0, "differs": 0, "refused": 0}
    assert result["problems"] == []
    listed = cli.ok("list", "repo::acme/app")["lessons"]
    assert [x["key"] for x in listed] == ["CI needs Postgres 16!"]  # the archived one is hidden
    pg = listed[0]
    assert pg["tags"] == ["ci", "db", "zeta"] and pg["seen_count"] == 2
    assert {k: v for k, v in pg["source"].items() if v is not None} == {
        "repo": "acme/app",
        "branch": "main",
        "commit": "4f1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c",
        "pr": 128,
    }
    # Each time is stored as it stood, not shifted and shifted back on the way out.
    held = {
        r["key"]: r
        for r in map(json.loads, cli("export").stdout.splitlines()[1:])
        if r["type"] == "lesson"
    }
    invoices = held["invoices freeze on Fridays"]
    assert invoices["expires_at"].startswith("2027-06-30T00:00:00.000")
    assert invoices["created_at"].startswith("2026-01-05T08:00:00.000")
    old = held["old deploy script"]
    assert (old["status"], old["archived_at"][:23]) == ("archived", "2025-01-01T00:00:00.000")
    assert old["updated_at"].startswith("2025-01-01T00:00:00.000")
    summary = cli.ok("export", "--format", "lorekit", str(tmp_path / "out"))
    assert summary["lessons"] == 5 and summary["files"] == {"written": 5, "unchanged": 0}
    assert tree(tmp_path / "out") == original
    again = cli.ok("import", "--format", "lorekit", str(tmp_path / "in"))
    assert again["lessons"] == {"added": 0, "unchanged": 5, "differs": 0, "refused": 0}
    rewritten = cli.ok("export", "--format", "lorekit", str(tmp_path / "out"))
    assert rewritten["files"] == {"written": 0, "unchanged": 5}


def test_what_lorekit_cannot_hold_is_reported_not_written(cli: Cli, tmp_path: Path) -> None:
    scope = "repo::acme/app"
    cli.ok("write", scope, "plain", "A plain lesson")
    cli.ok("write", scope, "checked", "First value", "--depends-on", f"a.py={'a' * 40}")
    cli.ok("write", scope, "checked", "Second value")
    cli.ok("verify", scope, "checked")
    cli.ok("write", scope, "wrong", "A wrong lesson")
    cli.ok("reject", scope, "wrong", "--reason", "not true")
    cli.ok("write", scope, "doubt", "A doubtful lesson")
    cli.ok("dispute", scope, "doubt", "--reason", "maybe stale")
    summary = cli.ok("export", "--format", "lorekit", str(tmp_path / "kit"))
    assert summary["not_kept"] == {
        "depends_on": 1,
        "history": 1,
        "id": 2,
        "review": 1,
        "tombstones": 1,
        "trust": 1,
    }
    assert summary["withheld"] == {"lorekit_disputed": 1, "lorekit_rejected": 1}
    notes = {(n["key"], n["code"]): n["message"] for n in summary["notes"]}
    assert (
        notes[("checked", "not_kept")] == "LoreKit cannot hold: history, trust, depends_on, review"
    )
    assert ("wrong", "withheld") in notes and ("doubt", "withheld") in notes
    written = tree(tmp_path / "kit")
    assert sorted(written) == ["repo/acme/app/checked.md", "repo/acme/app/plain.md"]
    for text in written.values():
        names = [line.split(":", 1)[0] for line in text.decode().split("---\n")[1].splitlines()]
        assert names == list(FIELDS)  # no trust, versions or tombstone field LoreKit would misread
    assert b"Second value" in written["repo/acme/app/checked.md"]


def test_a_file_that_is_not_a_lesson_is_named(cli: Cli, tmp_path: Path) -> None:
    write_tree(tmp_path / "kit")
    bad = tmp_path / "kit" / "global" / "broken.md"
    bad.write_text("no front matter here\n")
    result = cli("import", "--format", "lorekit", str(tmp_path / "kit"), "--json")
    assert result.exit_code == 1  # something did not land
    body = result.json()
    assert body["lessons"]["added"] == 5 and body["invalid"] == 1
    (problem,) = body["problems"]
    assert problem["path"] == str(bad) and problem["code"] == "invalid_record"


def test_slugs_follow_lorekit() -> None:
    assert slug("CI needs Postgres 16!") == "ci-needs-postgres-16"
    assert slug("  --Hello,  World--  ") == "hello-world"
    assert slug("日本語") == "entry"
    assert slug("a" * 79 + " b" + "c" * 30) == "a" * 79
    assert len(slug("x" * 200)) == 80


@given(st.text(max_size=300))
def test_a_slug_is_always_a_safe_file_name(key: str) -> None:
    name = slug(key)
    assert 1 <= len(name) <= 80
    assert name == name.strip("-") and set(name) <= set("abcdefghijklmnopqrstuvwxyz0123456789-")


# What a store can hold: any text but NUL and lone surrogates (a carriage return included).
TEXT = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
text_value = st.text(TEXT, min_size=1).filter(str.strip)


@given(
    key=st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1).filter(str.strip),
    value=text_value,
    seen=st.integers(0, 10_000),
    agent=st.none() | st.text(TEXT),
)
def test_a_lorekit_file_reads_back_as_it_was_written(
    key: str, value: str, seen: int, agent: str | None
) -> None:
    record = {
        "type": "lesson",
        "scope": "global",
        "key": key,
        "value": value,
        "tags": [],
        "created_at": "2026-01-01T00:00:00.001000Z",
        "updated_at": "2026-01-02T00:00:00.002000Z",
        "status": "active",
        "seen_count": seen,
        "source": {} if agent is None else {"agent": agent},
    }
    text = file_text(record)
    back = parse_file(text, f"global/{slug(key)}.md")
    assert (back["key"], back["value"], back["seen_count"]) == (key, value, seen)
    assert back["source"] == record["source"]
    assert file_text({**back, "created_at": record["created_at"]}) == text


def test_both_tiers_are_read_when_no_directory_is_named(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user, repo = tmp_path / "me", tmp_path / "work"
    write_tree(user / ".lorekit")
    repo_tier = repo / ".lorekit" / "repo" / "acme" / "app" / "repo-tier.md"
    repo_tier.parent.mkdir(parents=True)
    fields = {**LESSONS["repo/acme/app/ci-needs-postgres-16.md"], "key": "repo tier"}
    repo_tier.write_text(
        "---\n"
        + "\n".join(f"{n}: {json.dumps(fields.get(n), separators=(',', ':'))}" for n in FIELDS)
        + "\n---\nFrom the repository's own tier.\n"
    )
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.chdir(repo)
    result = cli.ok("import", "--format", "lorekit")
    assert result["lessons"]["added"] == 6
    assert cli.ok("read", "repo::acme/app", "repo tier")["lesson"]["value"] == (
        "From the repository's own tier."
    )
    monkeypatch.setenv("HOME", str(tmp_path / "nobody"))
    monkeypatch.chdir(tmp_path)
    missing = cli("import", "--format", "lorekit", "--json")
    assert missing.exit_code == 2 and missing.error()["code"] == "invalid_argument"


# A tree LoreKit could have written that lorestore would normalise: scopes and directories
# in mixed case, fields lorestore does not know (an object among them, keys unsorted) between
# and after the known ones, a key with surrounding spaces.
SPELLED = {
    "repo/Acme/App/db-pool.md": [
        'scope: "repo::Acme/App"',
        'key: "db pool"',
        'x_new: {"b":1,"a":[{"z":0,"y":1.5}]}',
        'created: "2026-01-01T00:00:00.000Z"',
        'updated: "2026-01-01T00:00:00.000Z"',
        "seen_count: 2",
        'x_last: "caf\\u00e9"',
    ],
    "project/Proj/x.md": [
        'x_first: {"d":null,"c":true}',
        'scope: "project::Proj"',
        'key: "x"',
        'created: "2026-01-02T00:00:00.000Z"',
    ],
    "branch/Acme/App/Feature/X/k.md": [
        'scope: "branch::Acme/App::Feature/X"',
        'key: " k "',
        'tags: ["Auth"]',
        'created: "2026-01-03T00:00:00.000Z"',
    ],
}


def write_spelled(root: Path) -> dict[str, bytes]:
    files = {}
    for rel, lines in SPELLED.items():
        body = "---\n" + "\n".join(lines) + "\n---\nText of " + rel + ".\n"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(body, encoding="utf-8")
        files[rel] = body.encode("utf-8")
    return files


def test_a_tree_in_its_own_spelling_round_trips_byte_for_byte(cli: Cli, tmp_path: Path) -> None:
    original = write_spelled(tmp_path / "in")
    result = cli.ok("import", "--format", "lorekit", str(tmp_path / "in"))
    assert result["lessons"] == {"added": 3, "unchanged": 0, "differs": 0, "refused": 0}
    assert cli.ok("read", "repo::acme/app", "db pool")["lesson"]["value"] == (
        "Text of repo/Acme/App/db-pool.md."
    )
    assert cli.ok("read", "branch::acme/app::feature/x", "k")["lesson"]["key"] == "k"
    cli.ok("export", "--format", "lorekit", str(tmp_path / "out"))
    assert tree(tmp_path / "out") == original
    again = cli.ok("import", "--format", "lorekit", str(tmp_path / "in"))
    assert again["lessons"] == {"added": 0, "unchanged": 3, "differs": 0, "refused": 0}


def test_the_spelling_survives_either_backend(service: LessonService, tmp_path: Path) -> None:
    """PostgreSQL's jsonb reorders object keys: the kept spelling must not depend on them."""
    original = write_spelled(tmp_path / "in")
    actor = local_actor(session="s1")
    imported = service.memory_import(
        actor, ImportParams(format="lorekit"), read_tree(tmp_path / "in")
    )
    assert imported.lessons.added == 3
    export = service.memory_export(actor, ExportParams())
    records = (r.record for r in read_records(export.chunks()) if r.record)
    TreeWriter(tmp_path / "out").write_all(r for r in records if not is_header(r))
    assert tree(tmp_path / "out") == original


@pytest.mark.parametrize(
    "kept",
    [
        "repo/acme/other/db-pool.md",  # another scope's directory
        "repo/Acme/db-pool.md",
        "repo/Acme/App/../App/db-pool.md",
        "/repo/Acme/App/db-pool.md",
        "repo/Acme/App/db-pool.txt",
        "repo/Acme/App/a\x00.md",
    ],
)
def test_a_kept_file_name_outside_the_scope_directory_is_not_used(kept: str) -> None:
    record = {"scope": "repo::acme/app", "key": "db pool", "lorekit": {"file": kept}}
    assert str(relative_path(record)) == "repo/acme/app/db-pool.md"
    control = {**record, "lorekit": {"file": "repo/ACME/app/pool.md"}}
    assert str(relative_path(control)) == "repo/ACME/app/pool.md"


# What a store can hold (NaN, Infinity, NUL and lone surrogates are refused, as in
# lorestore-jsonl files).
json_value = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(TEXT, max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(TEXT, max_size=4), inner),
    max_leaves=6,
)


@given(
    unknown=st.dictionaries(st.from_regex(r"x_[a-z0-9_]{0,8}", fullmatch=True), json_value),
    places=st.lists(st.integers(0, len(FIELDS)), min_size=10, max_size=10),
)
def test_fields_lorestore_does_not_know_come_back_in_place(
    unknown: dict[str, object], places: list[int]
) -> None:
    lesson = LESSONS["repo/acme/app/ci-needs-postgres-16.md"]
    lines = [f"{n}: {json.dumps(lesson.get(n), separators=(',', ':'))}" for n in FIELDS]
    for (name, value), place in zip(unknown.items(), places, strict=False):
        lines.insert(place, f"{name}: {json.dumps(value, separators=(',', ':'))}")
    text = "---\n" + "\n".join(lines) + "\n---\nText.\n"
    record = parse_file(text, "repo/acme/app/ci-needs-postgres-16.md")
    held = canonical(record)  # as a store gives it back: object keys sorted
    held |= {"scope": "repo::acme/app", "tags": ["ci", "db", "zeta"]}
    held |= {"created_at": lesson["created"], "updated_at": lesson["updated"]}
    assert file_text(held) == text


def _lesson_file(scope: str, key: str, text: str, **fields: object) -> str:
    lines = [f"scope: {json.dumps(scope)}", f"key: {json.dumps(key)}"]
    lines.append('created: "2026-01-02T03:04:05.123Z"')
    lines += [f"{name}: {value}" for name, value in fields.items()]
    return "---\n" + "\n".join(lines) + "\n---\n" + text + "\n"


def test_an_export_never_replaces_another_lesson_or_a_newer_edit(cli: Cli, tmp_path: Path) -> None:
    kit = tmp_path / "kit"
    (kit / "global").mkdir(parents=True)
    theirs = _lesson_file("global", "a b", "A LoreKit-only lesson.")
    (kit / "global" / "a-b.md").write_text(theirs)  # the slug of "A-B" too
    (kit / "global" / "notes.md").write_text("my own notes, not a lesson\n")
    cli.ok("write", "global", "A-B", "A store lesson.")
    cli.ok("write", "global", "notes", "Another store lesson.")
    cli.ok("write", "global", "edited", "The store's text.")
    first = cli.ok("export", "--format", "lorekit", str(kit))
    assert (kit / "global" / "a-b.md").read_text() == theirs  # kept
    assert (kit / "global" / "notes.md").read_text() == "my own notes, not a lesson\n"
    assert "A store lesson." in (kit / "global" / "a-b-2.md").read_text()
    assert "Another store lesson." in (kit / "global" / "notes-2.md").read_text()
    assert sorted(n["code"] for n in first["notes"]) == ["file_kept", "file_kept"]
    # An edit made in LoreKit since the export is newer than the store's: kept, and said so.
    edited = kit / "global" / "edited.md"
    changed = edited.read_text().replace("The store's text.", "Edited in LoreKit.")
    changed = changed.replace('"created": ', '"created": ')
    lines = [
        'updated: "2030-01-01T00:00:00.000Z"' if line.startswith("updated:") else line
        for line in changed.split("\n")
    ]
    edited.write_text("\n".join(lines))
    second = cli.ok("export", "--format", "lorekit", str(kit))
    assert "Edited in LoreKit." in edited.read_text()
    codes = sorted(n["code"] for n in second["notes"])
    assert codes == ["file_kept", "file_kept", "newer_on_disk"]
    # The control: an older copy of the same lesson on disk is brought up to date.
    cli.ok("write", "global", "A-B", "A store lesson, revised.")
    cli.ok("export", "--format", "lorekit", str(kit))
    assert "A store lesson, revised." in (kit / "global" / "a-b-2.md").read_text()


def test_a_file_no_store_can_hold_is_named_and_the_rest_lands(cli: Cli, tmp_path: Path) -> None:
    kit = tmp_path / "kit" / "global"
    kit.mkdir(parents=True)
    (kit / "good.md").write_text(_lesson_file("global", "good", "A good lesson."))
    (kit / "nan.md").write_text(_lesson_file("global", "nan", "x", x_score="NaN"))
    (kit / "big.md").write_text(_lesson_file("global", "big", "x", x_score="1e400"))
    (kit / "surrogate.md").write_text(_lesson_file("global", "s", "x", source_agent='"\\udc00"'))
    (kit / "nul.md").write_bytes(_lesson_file("global", "nul", "a\x00b").encode())
    escaped = _lesson_file("global", "k", "x").replace('key: "k"', 'key: "a\\u0000b"')
    (kit / "escaped-nul.md").write_text(escaped)
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", kit / "linked")  # a directory link: named, not followed
    (tmp_path / "kit" / "notes").mkdir()
    real = tmp_path / "kit" / "notes" / "real.md"
    real.write_text(_lesson_file("global", "linked file", "Through a link."))
    os.symlink(real, kit / "link.md")  # a file link within the tree: followed
    result = cli("import", "--format", "lorekit", str(tmp_path / "kit"), "--json")
    assert result.exit_code == 1
    body = result.json()
    assert body["lessons"]["added"] == 2 and body["invalid"] == 6
    named = sorted(Path(p["path"]).name for p in body["problems"])
    assert named == ["big.md", "escaped-nul.md", "linked", "nan.md", "nul.md", "surrogate.md"]
    assert cli.ok("read", "global", "good")["lesson"]["value"] == "A good lesson."


def test_a_carriage_return_in_a_lesson_survives_the_round_trip(cli: Cli, tmp_path: Path) -> None:
    cli.ok("write", "global", "crlf", "line one\r\nline two\rthree")
    cli.ok("export", "--format", "lorekit", str(tmp_path / "kit"))
    again = cli.ok("import", "--format", "lorekit", str(tmp_path / "kit"))
    assert again["lessons"]["unchanged"] == 1 and again["lessons"]["differs"] == 0
    cli.ok("export", "--format", "lorekit", str(tmp_path / "copy"))
    assert tree(tmp_path / "copy") == tree(tmp_path / "kit")


def test_what_an_export_cannot_write_is_reported(cli: Cli, tmp_path: Path) -> None:
    cli.ok("write", "global", "hist", "v1")
    cli.ok("write", "global", "hist", "v2")
    flat = cli.ok("export", "--format", "lorekit", str(tmp_path / "a"), "--no-history")
    assert flat["not_kept"].get("history") == 1  # earlier versions, listed or not
    cli.ok("write", "global", "db-mocks", "Mock the database.")
    cli.ok("export", "--format", "lorekit", str(tmp_path / "a"))
    cli.ok("reject", "global", "db-mocks", "--reason", "hid a broken migration")
    after = cli.ok("export", "--format", "lorekit", str(tmp_path / "a"))
    (note,) = [n for n in after["notes"] if n["code"] == "withheld"]
    assert "global/db-mocks.md" in note["message"] and "delete it" in note["message"]


def test_a_kept_field_name_that_would_break_the_front_matter_is_not_written() -> None:
    record = {
        "type": "lesson",
        "scope": "global",
        "key": "inj",
        "value": "v",
        "created_at": "2026-01-01T00:00:00.000Z",
        "updated_at": "2026-01-01T00:00:00.000Z",
        "lorekit": {
            "fields": [["scope", "repo::evil/x"], ["archived_at\nkey", 1], ["a: b", 2], ["ok", 3]]
        },
    }
    names = [name for name, _ in front_matter(record)]
    assert names.count("scope") == 1 and "ok" in names  # the control: a plain name is kept
    assert not any("\n" in n or ":" in n for n in names)
    assert "ext" in losses(record)
    assert parse_file(file_text(record), "global/inj.md")["key"] == "inj"


def test_an_export_path_that_cannot_be_written_is_a_clear_error(cli: Cli, tmp_path: Path) -> None:
    cli.ok("write", "global", "k", "A lesson.")
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "global").write_text("a file where a directory goes")
    for args in (
        ["export", str(tmp_path / "missing" / "x.jsonl")],
        ["export", str(tmp_path)],
        ["export", "--format", "lorekit", str(tmp_path / "a-file")],
        ["export", "--format", "lorekit", str(tmp_path / "tree")],
    ):
        result = cli(*args, "--json")
        assert result.exit_code == 2, (args, result.stdout, result.stderr)
        assert result.error()["code"] == "invalid_argument"
    human = cli("export", "--format", "lorekit", str(tmp_path / "kit"))  # the control
    assert human.exit_code == 0 and (tmp_path / "kit" / "global" / "k.md").is_file()
    cli.ok("write", "global", "A-B", "one")
    cli.ok("write", "global", "a b", "two")
    collided = cli("export", "--format", "lorekit", str(tmp_path / "kit2"))
    assert "slug_collision" in collided.stdout  # notes in the human summary too
