"""End to end: `lorestore install --host claude-code` into a temporary repository, then the
SessionStart hook run exactly as the settings file writes it (through the shell, as Claude
Code runs it, with a documented SessionStart payload on stdin) gives back the lesson."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from tests.hosts.conftest import Place, make_place
from tests.hosts.payloads import payload


@pytest.fixture
def place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Place:
    return make_place(tmp_path, monkeypatch)


LESSON = "Run `make db` before `make test`: the tests need the fixture database."


def test_installed_session_start_hook_recalls_the_lesson(place: Place) -> None:
    code, _, err = place.run("write", "repo::acme/widget", "test-database", LESSON)
    assert code == 0, err
    code, out, err = place.run("install", "--host", "claude-code")
    assert code == 0, err
    assert f"created {place.repo / '.claude' / 'settings.json'}" in out
    settings = json.loads((place.repo / ".claude" / "settings.json").read_text())
    [group] = settings["hooks"]["SessionStart"]
    [entry] = group["hooks"]
    command = entry["command"]
    # The host's environment: no lorestore settings of its own (the command carries them).
    env = {k: v for k, v in os.environ.items() if not k.startswith("LORESTORE_")}
    done = subprocess.run(
        command,
        shell=True,
        input=json.dumps(payload("claude-code", "session-start", str(place.repo))),
        capture_output=True,
        text=True,
        cwd=place.repo,
        env={**env, "HOME": str(place.user)},
        timeout=entry["timeout"],
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert answer["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert LESSON.replace("`", "") in context.replace("`", "")
    assert "repo::acme/widget · test-database · unverified" in context
    # The MCP entry names the same lorestore and the same store.
    server = json.loads((place.repo / ".mcp.json").read_text())["mcpServers"]["lorestore"]
    assert server["args"] == ["mcp"] and server["command"] in command
    assert server["env"] == {"LORESTORE_HOME": str(place.store)}


def _installed_commands(place: Place, host: str) -> dict[str, str]:
    """Host event name -> the command line install wrote for it."""
    if host == "cursor":
        hooks = json.loads((place.repo / ".cursor" / "hooks.json").read_text())["hooks"]
        return {name: entries[0]["command"] for name, entries in hooks.items()}
    hooks = json.loads((place.repo / ".codex" / "hooks.json").read_text())["hooks"]
    return {name: groups[0]["hooks"][0]["command"] for name, groups in hooks.items()}


@pytest.mark.parametrize("host", ["cursor", "codex"])
def test_every_installed_hook_command_answers_in_the_hosts_shape(place: Place, host: str) -> None:
    import jsonschema
    from tests.hosts.payloads import context_of, output_schema

    from lorestore.hosts.events import HOST_EVENTS

    assert place.run("write", "repo::acme/widget", "test-database", LESSON)[0] == 0
    args = ["install", "--host", host] + (["--hooks"] if host == "codex" else [])
    assert place.run(*args)[0] == 0
    env = {k: v for k, v in os.environ.items() if not k.startswith("LORESTORE_")}
    by_name = {name: event for event, name in HOST_EVENTS[host].items() if name}
    for name, command in _installed_commands(place, host).items():
        event = by_name[name]
        done = subprocess.run(
            command,
            shell=True,
            input=json.dumps(payload(host, event, str(place.repo))),
            capture_output=True,
            text=True,
            cwd=place.repo,
            env={**env, "HOME": str(place.user)},
            timeout=10,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        answer = json.loads(done.stdout)
        jsonschema.validate(answer, output_schema(host, event))
        if event == "session-start":
            assert "test-database" in context_of(host, answer)
