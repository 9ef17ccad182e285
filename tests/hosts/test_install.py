"""``lorestore install`` / ``uninstall`` through the CLI: what is written for every host x
project/user x embedded/remote (golden files under golden/), install twice = once, and
uninstall giving back every pre-existing file byte for byte (other servers, hooks, comments).

Regenerate the golden files after a deliberate change: LORESTORE_UPDATE_GOLDEN=1 pytest ..."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import tomlkit
from tests.hosts.conftest import Place

from lorestore.hosts import HOSTS

GOLDEN = Path(__file__).parent / "golden"
REMOTE = "https://lore.example.com"
CASES = [
    (host, scope, mode)
    for host in HOSTS
    for scope in ("project", "user")
    for mode in ("embedded", "remote")
]


def install_args(host: str, scope: str, mode: str) -> list[str]:
    args = ["install", "--host", host, f"--{scope}"]
    if mode == "remote":
        args += ["--remote", REMOTE]
    if host == "codex":
        args.append("--hooks")  # the installed Codex decides otherwise (none here)
    return args


def check_golden(place: Place, name: str) -> None:
    got = {path: place.normalised(data) for path, data in place.files().items()}
    folder = GOLDEN / name
    if os.environ.get("LORESTORE_UPDATE_GOLDEN"):
        shutil.rmtree(folder, ignore_errors=True)
        for path, text in got.items():
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            (folder / path).write_text(text)
    want = {str(p.relative_to(folder)): p.read_text() for p in folder.rglob("*") if p.is_file()}
    assert got == want


@pytest.mark.parametrize(("host", "scope", "mode"), CASES)
def test_install_writes_the_golden_files(place: Place, host: str, scope: str, mode: str) -> None:
    code, out, err = place.run(*install_args(host, scope, mode))
    assert code == 0, err
    check_golden(place, f"{host}-{scope}-{mode}")
    # It prints what it wrote, file by file.
    assert [line.split(" ", 1)[0] for line in out.splitlines()] == ["created"] * len(place.files())
    # Installing twice is installing once: the same bytes, every file reported unchanged.
    before = place.files()
    code, out, _ = place.run(*install_args(host, scope, mode))
    assert code == 0
    assert place.files() == before
    assert all(line.startswith("unchanged ") for line in out.splitlines())
    # Uninstall removes every file install created, and the folders it made.
    dirs_before_install = {"repo", "user"} - {"repo", "user"}
    code, out, err = place.run("uninstall", "--host", host, f"--{scope}")
    assert code == 0, err
    assert place.files() == {}
    assert place.dirs() == dirs_before_install


def test_codex_without_hooks_falls_back_to_agents_md(place: Place) -> None:
    code, _, err = place.run("install", "--host", "codex", "--no-hooks")
    assert code == 0, err
    check_golden(place, "codex-project-embedded-no-hooks")
    agents = (place.repo / "AGENTS.md").read_text()
    assert "call `memory_recall` yourself" in agents
    assert not (place.repo / ".codex" / "hooks.json").exists()


def test_codex_hooks_follow_the_installed_codex(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without --hooks/--no-hooks, Codex gets hooks only when its installed version has them
    (none is installed here: the AGENTS.md fallback)."""
    monkeypatch.setenv("PATH", str(place.tmp / "no-bin"))
    code, _, err = place.run("install", "--host", "codex")
    assert code == 0, err
    assert not (place.repo / ".codex" / "hooks.json").exists()
    assert "call `memory_recall` yourself" in (place.repo / "AGENTS.md").read_text()


# Files that were there before install, with other servers, hooks, settings and comments,
# in layouts a re-serialisation would not reproduce (4-space indent, no final newline).
EXISTING = {
    "claude-code": {
        ".mcp.json": '{\n    "mcpServers": {\n        "other": {"command": "other-mcp"}\n    }\n}',
        ".claude/settings.json": json.dumps(
            {
                "permissions": {"allow": ["Bash(make test)"]},
                "hooks": {
                    "SessionStart": [{"hooks": [{"type": "command", "command": "echo hi"}]}],
                    "PostToolUse": [
                        {"matcher": "Edit", "hooks": [{"type": "command", "command": "fmt"}]}
                    ],
                },
            }
        ),
    },
    "cursor": {
        ".cursor/mcp.json": '{"mcpServers":{"other":{"url":"https://x.example/mcp"}}}\n',
        ".cursor/hooks.json": (
            '{\n\t"version": 1,\n\t"hooks": {"stop": [{"command": "./audit.sh"}]}\n}\n'
        ),
        ".cursor/rules/style.mdc": "---\nalwaysApply: true\n---\nUse tabs.\n",
    },
    "codex": {
        ".codex/config.toml": (
            '# my Codex settings\nmodel = "gpt-5"  # the default\n\n'
            '[mcp_servers.other]\ncommand = "other-mcp"\nargs = ["--fast"]\n'
        ),
        ".codex/hooks.json": json.dumps(
            {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify"}]}]}},
            indent=4,
        ),
        "AGENTS.md": "# Agents\n\nRun `make test` before you commit.",
    },
}


@pytest.mark.parametrize("mode", ["embedded", "remote"])
@pytest.mark.parametrize("host", HOSTS)
def test_uninstall_restores_existing_files_byte_for_byte(
    place: Place, host: str, mode: str
) -> None:
    for rel, text in EXISTING[host].items():
        (place.repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (place.repo / rel).write_text(text)
    before = place.files()
    dirs = place.dirs()
    code, _, err = place.run(*install_args(host, "project", mode))
    assert code == 0, err
    after = place.files()
    for rel in EXISTING[host]:
        assert after[f"repo/{rel}"] != before[f"repo/{rel}"] or rel.endswith(".mdc")
    # What was there is still there: the other server and hooks, the comments.
    if host == "claude-code":
        data = json.loads(after["repo/.mcp.json"])
        assert set(data["mcpServers"]) == {"other", "lorestore"}
        settings = json.loads(after["repo/.claude/settings.json"])
        assert settings["permissions"] == {"allow": ["Bash(make test)"]}
        assert settings["hooks"]["SessionStart"][0]["hooks"][0]["command"] == "echo hi"
    if host == "codex":
        text = after["repo/.codex/config.toml"].decode()
        assert "# my Codex settings" in text and "# the default" in text
        assert tomlkit.parse(text)["mcp_servers"]["other"]["args"] == ["--fast"]
    code, _, err = place.run("uninstall", "--host", host)
    assert code == 0, err
    assert place.files() == before
    assert place.dirs() == dirs


def test_uninstall_of_a_file_changed_since_keeps_the_change(place: Place) -> None:
    """The host rewrote .mcp.json after install (another server added): uninstall takes out
    lorestore's entry only, structurally, and keeps the new server."""
    code, _, _ = place.run("install", "--host", "claude-code")
    assert code == 0
    path = place.repo / ".mcp.json"
    data = json.loads(path.read_text())
    data["mcpServers"]["added-later"] = {"command": "x"}
    path.write_text(json.dumps(data, indent=2) + "\n")
    code, _, _ = place.run("uninstall", "--host", "claude-code")
    assert code == 0
    assert json.loads(path.read_text()) == {"mcpServers": {"added-later": {"command": "x"}}}
    assert not (place.repo / ".claude").exists()


def test_uninstall_without_an_install_changes_nothing(place: Place) -> None:
    for rel, text in EXISTING["claude-code"].items():
        (place.repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (place.repo / rel).write_text(text)
    before = place.files()
    code, out, _ = place.run("uninstall", "--host", "claude-code")
    assert code == 0
    assert place.files() == before
    assert all(line.startswith("unchanged ") for line in out.splitlines())


@pytest.mark.parametrize("host", HOSTS)
def test_a_token_is_never_written(place: Place, monkeypatch: pytest.MonkeyPatch, host: str) -> None:
    monkeypatch.setenv("LORESTORE_TOKEN", "ls_secret_token_value")
    monkeypatch.setenv("MY_AGENT_TOKEN", "ls_other_secret_value")
    for token_env in ("LORESTORE_TOKEN", "MY_AGENT_TOKEN"):
        code, _, err = place.run(*install_args(host, "project", "remote"), "--token-env", token_env)
        assert code == 0, err
        written = b"".join(place.files().values())
        assert b"ls_secret_token_value" not in written
        assert b"ls_other_secret_value" not in written
        assert token_env.encode() in written  # the variable is named instead
    # The manifest in the store's home holds no token either.
    manifest = (place.store / "installs.json").read_bytes()
    assert b"ls_secret_token_value" not in manifest and b"ls_other_secret_value" not in manifest


@pytest.mark.parametrize(
    "url",
    [
        "https://agent:ls_secret@lore.example.com",
        "https://lore.example.com/mcp?token=ls_secret",
        "ftp://lore.example.com",
    ],
)
def test_a_remote_url_with_credentials_is_refused(place: Place, url: str) -> None:
    code, _, err = place.run("install", "--host", "cursor", "--remote", url, "--json")
    assert code == 2
    assert json.loads(err)["error"]["code"] == "invalid_argument"
    assert place.files() == {}
    # Positive control: the bare URL is accepted.
    code, _, _ = place.run("install", "--host", "cursor", "--remote", REMOTE)
    assert code == 0


def test_dry_run_shows_the_diff_and_writes_nothing(place: Place) -> None:
    (place.repo / ".mcp.json").write_text('{"mcpServers": {"other": {"command": "o"}}}\n')
    before = place.files()
    code, out, _ = place.run("install", "--host", "claude-code", "--dry-run")
    assert code == 0
    assert place.files() == before
    assert not (place.store / "installs.json").exists()
    assert "would edit" in out and '+    "lorestore": {' in out
    assert "would create" in out and "+++ b/.claude/skills/lorestore/SKILL.md" in out
    assert "(dry run: nothing was written)" in out


def test_a_file_that_is_not_json_is_refused_unchanged(place: Place) -> None:
    (place.repo / ".mcp.json").write_text("{ not json")
    code, _, err = place.run("install", "--host", "claude-code", "--json")
    assert code == 1
    error = json.loads(err)["error"]
    assert error["code"] == "config_error" and "hint" in error
    assert (place.repo / ".mcp.json").read_text() == "{ not json"
    assert not (place.repo / ".claude").exists()


# The same files in the user's own configuration (Claude Code keeps user MCP servers in
# ~/.claude.json, Codex everything in ~/.codex).
USER_PATHS = {
    "claude-code": {".mcp.json": ".claude.json"},
    "cursor": {".cursor/rules/style.mdc": ".cursor/skills/other/SKILL.md"},
    "codex": {"AGENTS.md": ".codex/AGENTS.md"},
}


@pytest.mark.parametrize("host", HOSTS)
def test_user_uninstall_restores_existing_files_byte_for_byte(place: Place, host: str) -> None:
    for rel, text in EXISTING[host].items():
        path = place.user / USER_PATHS[host].get(rel, rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    before, dirs = place.files(), place.dirs()
    code, _, err = place.run(*install_args(host, "user", "embedded"))
    assert code == 0, err
    assert place.files() != before
    code, _, err = place.run("uninstall", "--host", host, "--user")
    assert code == 0, err
    assert place.files() == before
    assert place.dirs() == dirs
