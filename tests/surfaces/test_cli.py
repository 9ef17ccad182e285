"""The CLI through its real entry point: results, exit codes, stdin, and every "never
returned" rule, each beside a positive control."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from tests.conftest import Cli, Clock
from tests.pg import Template

from lorestore.auth.actor import local_actor
from lorestore.models import WriteParams
from lorestore.service import LessonService
from lorestore.storage.sqlite import SQLiteStore

S = "repo::acme/app"


def test_write_read_round_trip_with_json(cli: Cli) -> None:
    created = cli.ok(
        "write",
        S,
        "pg",
        "Integration tests need the local Postgres",
        "--tag",
        "db",
        "--commit",
        "abc1234",
        "--agent",
        "claude",
    )
    assert created["result"] == "created"
    lesson = cli.ok("read", S, "pg")["lesson"]
    assert lesson == created["lesson"]
    assert lesson["source"]["commit"] == "abc1234" and lesson["source"]["agent"] == "claude"
    assert lesson["tags"] == ["db"]


def test_value_from_stdin(cli: Cli) -> None:
    assert cli.ok("write", S, "k", input="from stdin\n")["lesson"]["value"] == "from stdin"
    assert cli.ok("write", S, "k", "-", input="second\n")["lesson"]["version"] == 2


def test_bad_input_exits_2_with_code_and_hint(cli: Cli) -> None:
    result = cli("write", "repo:acme/app", "k", "v", "--json")
    assert result.exit_code == 2
    error = result.error()
    assert error["code"] == "invalid_scope"
    assert error["hint"] == 'use "::" as the separator: "repo::acme/app"'
    human = cli("write", "repo:acme/app", "k", "v")
    assert human.exit_code == 2 and "invalid_scope" in human.stderr and "hint" in human.stderr
    assert cli("write", S, "k", "v", "--ttl-days", "0", "--json").error()["code"] == "invalid_ttl"
    assert cli("list", S, "--limit", "0", "--json").exit_code == 2
    # Nothing was written by any of the refused commands.
    assert cli.ok("scopes")["scopes"] == []


def test_operational_errors_exit_1(cli: Cli) -> None:
    missing = cli("read", S, "nope", "--json")
    assert missing.exit_code == 1 and missing.error()["code"] == "not_found"
    cli.ok("write", S, "k", "v1")
    conflict = cli("write", S, "k", "v2", "--if-version", "7", "--json")
    assert conflict.exit_code == 1 and conflict.error()["code"] == "version_conflict"


def test_human_output_is_readable(cli: Cli) -> None:
    out = cli("write", S, "k", "Integration tests need Postgres")
    assert out.exit_code == 0 and "created" in out.stdout and S in out.stdout
    shown = cli("read", S, "k")
    assert "Integration tests need Postgres" in shown.stdout and "candidate" in shown.stdout


def test_archived_lessons_are_never_returned(cli: Cli) -> None:
    cli.ok("write", S, "gone", "archived postgres lesson")
    cli.ok("write", S, "kept", "kept postgres lesson")
    cli.ok("archive", S, "gone")
    assert cli("read", S, "gone", "--json").error()["code"] == "not_found"
    assert cli.ok("read", S, "kept")["lesson"]["key"] == "kept"
    assert [x["key"] for x in cli.ok("list", S)["lessons"]] == ["kept"]
    assert [h["lesson"]["key"] for h in cli.ok("search", "postgres", "-s", S)["hits"]] == ["kept"]
    cli.ok("restore", S, "gone")
    assert cli.ok("read", S, "gone")["lesson"]["status"] == "active"


def test_deleted_lessons_are_never_returned(cli: Cli) -> None:
    cli.ok("write", S, "gone", "deleted postgres lesson")
    cli.ok("write", S, "kept", "kept postgres lesson")
    assert cli.ok("delete", S, "gone")["versions_erased"] == 1
    assert cli("read", S, "gone", "--json").error()["code"] == "not_found"
    assert cli("history", S, "gone", "--json").error()["code"] == "not_found"
    assert [x["key"] for x in cli.ok("list", S)["lessons"]] == ["kept"]
    assert [h["lesson"]["key"] for h in cli.ok("search", "postgres", "-s", S)["hits"]] == ["kept"]


def _write_in_the_past(home: Path, key: str, value: str, ttl_days: int) -> None:
    past = LessonService(
        SQLiteStore(home / "lorestore.db"), clock=Clock(datetime(2025, 1, 1, tzinfo=UTC))
    )
    past.memory_write(local_actor(), WriteParams(scope=S, key=key, value=value, ttl_days=ttl_days))
    past.store.close()


def test_expired_lessons_are_never_returned(cli: Cli, home: Path) -> None:
    _write_in_the_past(home, "gone", "expired postgres lesson", ttl_days=1)
    cli.ok("write", S, "kept", "kept postgres lesson", "--ttl-days", "30")
    assert cli("read", S, "gone", "--json").error()["code"] == "not_found"
    assert cli.ok("read", S, "kept")["lesson"]["expires_at"]
    assert [x["key"] for x in cli.ok("list", S)["lessons"]] == ["kept"]
    assert [h["lesson"]["key"] for h in cli.ok("search", "postgres", "-s", S)["hits"]] == ["kept"]
    assert cli.ok("purge-expired")["purged"] == 1


def test_other_scopes_are_never_returned(cli: Cli) -> None:
    cli.ok("write", "repo::acme/other", "pg", "postgres lesson of another repo")
    cli.ok("write", S, "pg", "postgres lesson of this repo")
    assert cli("read", S, "missing", "--json").error()["code"] == "not_found"
    hits = cli.ok("search", "postgres", "-s", S)["hits"]
    assert [h["lesson"]["scope"] for h in hits] == [S]
    assert [x["scope"] for x in cli.ok("list", S)["lessons"]] == [S]
    # A search without a scope fails closed; it never means "all scopes".
    no_scope = cli("search", "postgres", "--json")
    assert no_scope.exit_code == 2 and no_scope.error()["code"] == "invalid_scope"


def test_history_and_as_of(cli: Cli) -> None:
    cli.ok("write", S, "k", "first")
    cli.ok("write", S, "k", "second")
    versions = cli.ok("history", S, "k")["versions"]
    assert [v["value"] for v in versions] == ["first", "second"]
    first_time = versions[0]["recorded_at"]
    assert cli.ok("read", S, "k", "--as-of", first_time)["lesson"]["value"] == "first"


def test_console_script_entry_point(home: Path) -> None:
    exe = Path(sys.executable).parent / "lorestore"
    env = {**os.environ, "LORESTORE_HOME": str(home)}
    done = subprocess.run(
        [str(exe), "write", S, "k", "via the script", "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"] == "created"
    version = subprocess.run([str(exe), "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.startswith("lorestore ")


def test_python_dash_m_runs_the_command(home: Path) -> None:
    """`python -m lorestore` is the command where the script is not on PATH: the same tree,
    errors and exit statuses."""
    env = {**os.environ, "LORESTORE_HOME": str(home)}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "lorestore", *args]
        return subprocess.run(command, capture_output=True, text=True, env=env, check=False)

    written = run("write", S, "k", "via python -m", "--json")
    assert written.returncode == 0, written.stderr
    assert json.loads(written.stdout)["result"] == "created"
    read = run("read", S, "k", "--json")
    assert read.returncode == 0 and json.loads(read.stdout)["lesson"]["value"] == "via python -m"
    missing = run("read", S, "nothing-here", "--json")  # control: a failure keeps its status
    assert missing.returncode == 1 and json.loads(missing.stderr)["error"]["code"] == "not_found"
    assert run("--version").stdout.startswith("lorestore ")


def test_db_cap_limits_active_lessons(cli: Cli) -> None:
    cli.ok("write", S, "one", "first")
    assert cli("db", "cap", "user:local", "2", "--json").exit_code == 0
    cli.ok("write", S, "two", "second")
    refused = cli("write", S, "three", "third", "--json")
    assert refused.exit_code == 1 and refused.error()["code"] == "cap_exceeded"
    assert "purge-expired" in refused.error()["hint"]  # expired lessons count until purged
    cli.ok("archive", S, "one")  # archiving makes room
    assert cli.ok("write", S, "three", "third")["result"] == "created"
    assert cli("db", "cap", "nobody", "2", "--json").exit_code == 2
    bad = cli("db", "cap", "user:Bad Name", "2", "--json")  # no principal is made of it
    assert bad.exit_code == 2 and bad.error()["code"] == "invalid_argument"


def test_db_cap_on_a_fresh_postgres_database(cli: Cli, pg_template, pg_database) -> None:  # type: ignore[no-untyped-def]
    from tests.migrating import pg_url

    url = pg_url(pg_template.admin_url(pg_database))
    # A user that has not written yet is named, and capped (it was a foreign-key traceback).
    capped = cli.ok("db", "cap", "user:newcomer", "3", "--database-url", url)
    assert (capped["owner"], capped["max_active"]) == ("user:newcomer", 3)
    # The superuser URL this command needs is said, not refused (serve refuses it).
    assert "bypasses row-level security" in capped["warning"]
    missing = cli("db", "cap", "org:nowhere", "3", "--database-url", url, "--json")
    assert missing.exit_code == 1 and missing.error()["code"] == "not_found"
    assert "nowhere" in missing.error()["message"]
    # The same on SQLite: no cap recorded for an org that does not exist.
    missing = cli("db", "cap", "org:nowhere", "3", "--json")
    assert missing.exit_code == 1 and missing.error()["code"] == "not_found"


def test_db_cap_refuses_to_act_on_a_local_file_when_a_server_is_configured(
    cli: Cli, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LORESTORE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("LORESTORE_TOKEN", "lst_" + "x" * 43)
    refused = cli("db", "cap", "user:local", "1", "--json")
    assert refused.exit_code == 1 and refused.error()["code"] == "config_error"
    assert not (home / "lorestore.db").exists()  # no local store was made or changed
    given = cli("db", "cap", "user:local", "1", "--database-url", f"sqlite:///{home}/x.db")
    assert given.exit_code == 0  # the control: a database named outright


def test_policy_flags_turn_on_and_off(cli: Cli) -> None:
    assert cli.ok("policy", S, "--require-review")["require_review"] is True
    # Not given: left as it is.
    kept = cli.ok("policy", S, "--revision-policy", "files")
    assert (kept["require_review"], kept["revision_policy"]) == (True, "files")
    assert cli.ok("policy", S, "--no-require-review")["require_review"] is False
    assert cli.ok("policy", S)["require_review"] is False


def test_stdin_value_loses_one_line_ending(cli: Cli) -> None:
    assert cli.ok("write", S, "crlf", input="crlf\r\n")["lesson"]["value"] == "crlf"
    assert cli.ok("write", S, "lf", input="lf\n")["lesson"]["value"] == "lf"
    assert cli.ok("write", S, "bare", input="bare")["lesson"]["value"] == "bare"


def test_unusable_sqlite_store_is_a_config_error(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_text("garbage")
    directory = tmp_path / "a-directory"
    directory.mkdir()
    for path in ("/proc/nope/x.db", str(garbage), str(directory)):
        monkeypatch.setenv("LORESTORE_DATABASE_URL", f"sqlite:///{path}")
        result = cli("read", "global", "k", "--json")
        assert result.exit_code == 1, (path, result.stderr)
        error = result.error()
        assert error["code"] == "config_error" and "LORESTORE_DATABASE_URL" in error["hint"]
        assert path in error["message"]
        human = cli("read", "global", "k")
        assert human.exit_code == 1 and "config_error" in human.stderr
    assert garbage.read_text() == "garbage"
    monkeypatch.setenv("LORESTORE_DATABASE_URL", f"sqlite:///{tmp_path / 'good.db'}")
    assert cli("read", "global", "k", "--json").error()["code"] == "not_found"


def test_usage_errors_are_json_errors_with_json(cli: Cli) -> None:
    """A value of the wrong type, a missing argument or an unknown option is reported as
    JSON when --json is on the command line, with exit status 2 either way."""
    typed = cli("list", "global", "--limit", "abc", "--json")
    assert typed.exit_code == 2 and typed.error()["code"] == "invalid_argument"
    assert "--limit" in typed.error()["message"]
    assert "lorestore list --help" in typed.error()["hint"]
    missing = cli("write", "global", "--json")
    assert missing.exit_code == 2 and "key" in missing.error()["message"].lower()
    unknown = cli("read", "global", "k", "--colour", "--json")
    assert unknown.exit_code == 2 and "--colour" in unknown.error()["message"]
    human = cli("list", "global", "--limit", "abc")  # the control: Typer's own usage box
    assert human.exit_code == 2 and "Usage" in human.stderr and not human.stderr.startswith("{")
    assert cli.ok("list", "global")["lessons"] == []  # and a good call is unaffected


@pytest.mark.fresh_database  # db init: grants and migrations on the database
def test_db_init_prints_the_connection_string_on_one_line(
    cli: Cli, pg_template: Template, pg_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The export line is meant to be copied and pasted: a narrow terminal must not break it."""
    from psycopg.conninfo import conninfo_to_dict

    info = conninfo_to_dict(pg_template.admin_url(pg_database))
    url = "postgresql://{user}@{host}:{port}/{dbname}".format_map({"port": 5432, **info})
    monkeypatch.setenv("COLUMNS", "60")
    done = cli("db", "init", "--database-url", url)
    assert done.exit_code == 0, done.stderr
    (line,) = [x for x in done.stdout.splitlines() if "LORESTORE_DATABASE_URL" in x]
    assert line.strip().startswith("export LORESTORE_DATABASE_URL='postgresql://")
    assert line.rstrip().endswith("'")  # the whole URL, quoted, on this one line
    assert "the schema is up to date" in done.stdout  # the control: the rest still prints


def test_human_output_shows_control_characters_instead_of_obeying_them(cli: Cli) -> None:
    """A value may hold anything but NUL; an escape sequence in it must not reach the
    reviewer's terminal as one (retitling the window, clearing the screen)."""
    evil = "evil \x1b]0;pwned\x07 \x1b[2J \r over"
    cli.ok("write", "repo::a/b", "esc", evil)
    assert cli.ok("read", "repo::a/b", "esc")["lesson"]["value"] == evil  # stored as written
    cli.ok("dispute", "repo::a/b", "esc", "--reason", "x")
    for args in (
        ["read", "repo::a/b", "esc"],
        ["list", "repo::a/b"],
        ["history", "repo::a/b", "esc"],
        ["search", "evil", "-s", "repo::a/b"],
        ["review-queue"],
    ):
        out = cli(*args)
        assert out.exit_code == 0, args
        assert "\x1b" not in out.stdout and "\x07" not in out.stdout and "\r" not in out.stdout
        assert "\u241b" in out.stdout or args[0] == "review-queue", (args, out.stdout)
    assert "\u241b]0;pwned\u2407" in cli("read", "repo::a/b", "esc").stdout


def test_a_sqlite_file_of_something_else_is_refused_untouched(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE foo (x)")
    conn.commit()
    conn.close()
    before = other.read_bytes()
    monkeypatch.setenv("LORESTORE_DATABASE_URL", f"sqlite:///{other}")
    result = cli("list", "global", "--json")
    assert result.exit_code == 1 and result.error()["code"] == "config_error"
    assert other.read_bytes() == before  # not migrated, not switched to WAL
    monkeypatch.setenv("LORESTORE_DATABASE_URL", f"sqlite:///{tmp_path / 'new.db'}")
    assert cli.ok("list", "global")["lessons"] == []  # the control: a new file is created


def test_an_impossible_version_or_time_window_is_bad_input(cli: Cli) -> None:
    cli.ok("write", S, "k", "v1")
    for version in ("-1", str(2**31)):
        bad = cli("write", S, "k", "v2", "--if-version", version, "--json")
        assert bad.exit_code == 2 and bad.error()["code"] == "invalid_argument", version
    stale = cli("write", S, "k", "v2", "--if-version", "2", "--json")  # the control: a conflict
    assert stale.exit_code == 1 and stale.error()["code"] == "version_conflict"
    assert cli.ok("read", S, "k")["lesson"]["version"] == 1  # none of them wrote
    window = cli("audit", "--since", "2026-01-02", "--until", "2026-01-01", "--json")
    assert window.exit_code == 2 and window.error()["code"] == "invalid_time"
    assert cli.ok("audit", "--since", "2026-01-01", "--until", "2099-01-01")["events"]


def test_a_value_on_stdin_is_read_only_up_to_the_limit(cli: Cli) -> None:
    big = cli("write", S, "big", "--json", input="a" * 200_000)
    assert big.exit_code == 2 and big.error()["code"] == "value_too_large"
    assert cli.ok("list", S)["lessons"] == []  # nothing written
    edge = "b" * (64 * 1024)
    written = cli.ok("write", S, "edge", input=edge + "\r\n")  # the control: at the limit
    assert written["lesson"]["value"] == edge
    kept = cli.ok("write", S, "crlf-inside", input="one\r\ntwo\n")
    assert kept["lesson"]["value"] == "one\r\ntwo"  # as given, but the one line ending
    latin = cli("write", S, "latin", "--json", input=b"caf\xe9")
    assert latin.exit_code == 2 and latin.error()["code"] == "invalid_value"


def test_an_unreachable_postgres_is_one_clear_json_error(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LORESTORE_DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none")
    result = cli("list", "global", "--json")
    assert result.exit_code == 1 and result.error()["code"] == "config_error"
    assert "Connection refused" in result.error()["message"]
    json.loads(result.stderr)  # the error alone: no pool warnings before it


def test_a_group_option_before_its_sub_command_is_refused_not_ignored(cli: Cli) -> None:
    cli.ok("write", S, "k", "v")
    early = cli("audit", "--json", "verify")
    assert early.exit_code == 2 and early.error()["code"] == "invalid_argument"
    assert "audit verify --json" in early.error()["message"]
    assert cli.ok("audit", "verify")["ok"] is True  # the control: options after it
    assert cli.ok("audit")["events"]  # and the group's own listing takes them


def test_db_init_refuses_an_option_taken_as_the_password(cli: Cli) -> None:
    url = "postgresql://postgres@127.0.0.1:1/never-reached"  # refused before any connection
    swallowed = cli("db", "init", "--database-url", url, "--app-password", "--json")
    assert swallowed.exit_code == 2 and "looks like an option" in swallowed.stderr
    garbage = cli("db", "init", "--database-url", "garbage", "--json")
    assert garbage.exit_code == 2 and garbage.error()["code"] == "invalid_argument"


def test_piped_tables_are_not_cut_to_80_columns(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    scope = "branch::acme/a-long-repository-name::feature/a-long-branch-name"
    cli.ok("write", scope, "a-rather-long-key-for-a-lesson", "A lesson")
    (event,) = cli.ok("audit")["events"]
    table = cli("audit").stdout  # not a terminal: as piped into grep or a file
    assert event["at"] in table and scope in table and "…" not in table
    assert "write.created" in table
    listed = cli("list", scope, "--limit", "1").stdout
    assert "a-rather-long-key-for-a-lesson" in listed
    # The control: COLUMNS, when set, still decides.
    monkeypatch.setenv("COLUMNS", "60")
    assert "…" in cli("audit").stdout


def test_small_search_scores_are_shown_not_rounded_to_zero(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A word in most lessons of a small store has FTS5's floor IDF: scores near 1e-6 (BM25's
    # own, as search gives them without the semantic extra, which fuses them into [0, 1]).
    monkeypatch.setenv("LORESTORE_SEMANTIC", "off")
    for i, text in enumerate(("Postgres 16 in CI", "Postgres runs on 5432", "Use Postgres")):
        cli.ok("write", S, f"pg-{i}", text)
    hits = cli.ok("search", "postgres", "-s", S)["hits"]
    assert hits and all(0 < h["score"] < 1e-3 for h in hits)
    shown = cli("search", "postgres", "-s", S).stdout
    assert f"{hits[0]['score']:.3g}" in shown and "0.000" not in shown


def test_state_changes_say_what_they_did(cli: Cli) -> None:
    cli.ok("write", S, "k", "A lesson")
    for args, said in (
        (("archive", S, "k"), "archived"),
        (("restore", S, "k"), "restored"),
        (("verify", S, "k"), "verified"),
        (("dispute", S, "k", "--reason", "stale?"), "disputed"),
        (("reject", S, "k", "--reason", "stale"), "rejected"),
        (("reject", S, "k", "--undo", "--reason", "it holds"), "rejection lifted"),
    ):
        done = cli(*args)
        assert done.exit_code == 0 and done.stdout.startswith(f"{said}: {S} / k"), done.stdout
    assert not cli("read", S, "k").stdout.startswith("read")  # the control: a read just shows


def test_binding_says_how_many_of_your_own_lessons_it_routes_to_the_org(cli: Cli) -> None:
    cli.ok("write", "repo::acme/app", "k", "My own note on acme/app.")
    cli.ok("write", "branch::acme/app::main", "k", "My own note on main.")
    cli.ok("org", "create", "acme")
    bound = cli.ok("org", "bind", "acme", "repo::acme/*")
    assert bound["own_lessons_routed"] == 2
    assert cli("read", "repo::acme/app", "k", "--json").error()["code"] == "not_found"
    cli.ok("org", "unbind", "acme", "repo::acme/*")
    said = cli("org", "bind", "acme", "repo::acme/*").stdout
    assert "2 lesson(s) of your own" in said and "until it is unbound" in said
    # The control: a pattern over none of them routes none, and says nothing of it.
    other = cli.ok("org", "bind", "acme", "project::billing")
    assert other["own_lessons_routed"] == 0
    assert "of your own" not in cli("org", "unbind", "acme", "project::billing").stdout
