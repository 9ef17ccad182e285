"""End to end: `lorestore install --host claude-code` into a temporary repository, then the
SessionStart hook run exactly as the settings file writes it (through the shell, as Claude
Code runs it, with a documented SessionStart payload on stdin) gives back the lesson."""

from __future__ import annotations

import json
import os
import subprocess

from tests.hosts.conftest import Place, place  # noqa: F401 - the fixture
from tests.hosts.payloads import payload

LESSON = "Run `make db` before `make test`: the tests need the fixture database."


def test_installed_session_start_hook_recalls_the_lesson(place: Place) -> None:  # noqa: F811
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
