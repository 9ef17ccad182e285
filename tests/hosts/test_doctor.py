"""``lorestore doctor`` through the CLI: each host's install (present, current), the store,
the scopes of this folder, and with --deep a probe lesson's round trip; every failure with
its fix, --json, exit status 1 on any failure."""

from __future__ import annotations

import json

import pytest
from tests.hosts.conftest import Place


def doctor(place: Place, *args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    code, out, _ = place.run("doctor", "--json", *args)
    return code, json.loads(out)


def by_name(report: dict) -> dict:  # type: ignore[type-arg]
    return {c["name"]: c for c in report["checks"]}


def test_nothing_installed_is_not_a_failure(place: Place) -> None:
    code, report = doctor(place)
    assert code == 0 and report["ok"]
    checks = by_name(report)
    assert checks["claude-code"]["detail"].startswith("not installed")
    assert checks["store"]["ok"] and "created on first use" in checks["store"]["detail"]
    assert checks["scopes"]["detail"] == "branch::acme/widget::main -> repo::acme/widget -> global"


def test_the_scopes_include_the_projects_declared_for_the_repository(place: Place) -> None:
    assert place.run("project", "add", "web", "acme/site")[0] == 0  # not this repository
    code, report = doctor(place)
    assert code == 0
    assert by_name(report)["scopes"]["detail"] == (
        "branch::acme/widget::main -> repo::acme/widget -> global"
    )
    assert place.run("project", "add", "widgets", "acme/widget")[0] == 0
    assert place.run("project", "add", "billing", "acme/widget")[0] == 0
    code, report = doctor(place)
    assert code == 0
    assert by_name(report)["scopes"]["detail"] == (
        "branch::acme/widget::main -> repo::acme/widget -> project::billing -> "
        "project::widgets -> global"
    )


def test_an_install_is_checked_present_and_current(place: Place) -> None:
    assert place.run("install", "--host", "claude-code")[0] == 0
    assert place.run("install", "--host", "codex", "--user", "--no-hooks")[0] == 0
    code, report = doctor(place)
    assert code == 0, report
    checks = by_name(report)
    assert checks["claude-code (project)"]["ok"]
    assert checks["codex (user)"]["ok"]
    # A file install wrote is gone: a failure that says how to fix it.
    (place.repo / ".claude" / "settings.json").unlink()
    code, report = doctor(place, "--host", "claude-code")
    assert code == 1 and not report["ok"]
    check = by_name(report)["claude-code (project)"]
    assert not check["ok"] and "settings.json missing" in check["detail"]
    assert check["fix"] == "run `lorestore install --host claude-code --project` again"
    # The skill changed by hand: out of date. Installing again fixes both.
    (place.repo / ".claude" / "skills" / "lorestore" / "SKILL.md").write_text("old text\n")
    code, report = doctor(place, "--host", "claude-code")
    assert code == 1 and "out of date" in by_name(report)["claude-code (project)"]["detail"]
    assert place.run("install", "--host", "claude-code")[0] == 0
    assert doctor(place, "--host", "claude-code")[0] == 0


def test_deep_round_trip_leaves_no_probe_behind(place: Place) -> None:
    code, report = doctor(place, "--deep")
    assert code == 0, report
    assert by_name(report)["round trip"]["ok"]
    code, out, _ = place.run("scopes", "--json")
    assert code == 0
    assert "lorestore-doctor" not in out


def test_a_store_that_cannot_be_opened_fails_with_a_hint(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = place.tmp / "junk.db"
    bad.write_bytes(b"not a database" * 200)
    monkeypatch.setenv("LORESTORE_DATABASE_URL", f"sqlite:///{bad}")
    code, report = doctor(place, "--deep")
    assert code == 1
    checks = by_name(report)
    assert not checks["store"]["ok"] and checks["store"].get("fix")
    assert not checks["round trip"]["ok"]
    # Human output names the failure and the fix.
    code, out, _ = place.run("doctor")
    assert code == 1 and "FAIL store" in out and "fix:" in out


def test_an_unknown_host_is_refused(place: Place) -> None:
    code, _, err = place.run("doctor", "--host", "vim", "--json")
    assert code == 2 and json.loads(err)["error"]["code"] == "invalid_argument"
