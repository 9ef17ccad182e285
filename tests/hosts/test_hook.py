"""``lorestore hook EVENT --host H`` as a host runs it (a process, the host's JSON on stdin),
driven by payloads built from each host's documented input schema (payloads.py): every
answer validates against the host's documented output shape; session start recalls for the
repository, branch and commit; a prompt gets only what the session was not given yet; a
repeated failure gets the matching lessons and a nudge; stop nudges after failures that
ended in success; a failing store, bad input or a refused token answer empty, in time, and
are logged."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import time
from typing import Any

import jsonschema
import pytest
from tests.hosts.conftest import LORESTORE, Place
from tests.hosts.payloads import context_of, output_schema, payload

from lorestore.core.recall import FENCE_CLOSE
from lorestore.hosts import HOSTS
from lorestore.hosts.events import EVENTS
from lorestore.hosts.hook import DEADLINE_S

LESSON = "Pin the build flags in setup.cfg; the release guard reads them."


def hook(
    place: Place, host: str, event: str, data: Any, **env: str
) -> tuple[dict[str, Any], float]:
    """Run the hook; its answer (checked against the host's schema) and its wall time."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LORESTORE_")}
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    start = time.monotonic()
    done = subprocess.run(
        [LORESTORE, "hook", event, "--host", host],
        input=raw,
        capture_output=True,
        env={**clean, "HOME": str(place.user), "LORESTORE_HOME": str(place.store), **env},
        timeout=60,
        check=False,
    )
    took = time.monotonic() - start
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    jsonschema.validate(answer, output_schema(host, event))
    return answer, took


@pytest.fixture
def lessons(place: Place) -> Place:
    code, _, err = place.run("write", "repo::acme/widget", "build-flags", LESSON)
    assert code == 0, err
    return place


def log_lines(place: Place) -> list[str]:
    path = place.store / "hooks.log"
    return path.read_text().splitlines() if path.exists() else []


@pytest.mark.parametrize("event", EVENTS)
@pytest.mark.parametrize("host", HOSTS)
def test_every_answer_has_the_hosts_documented_shape(lessons: Place, host: str, event: str) -> None:
    for _ in range(2):  # twice: a repeated failure answers with context
        hook(lessons, host, event, payload(host, event, str(lessons.repo)))
    assert log_lines(lessons) == []


@pytest.mark.parametrize("host", HOSTS)
def test_session_start_recalls_for_the_repository_branch_and_commit(
    lessons: Place, host: str
) -> None:
    code, _, _ = lessons.run(
        "write", "branch::acme/widget::main", "build-flags", "On main the flags live in setup.py."
    )
    assert code == 0
    answer, _ = hook(
        lessons, host, "session-start", payload(host, "session-start", str(lessons.repo))
    )
    text = context_of(host, answer)
    assert "On main the flags live in setup.py." in text  # the branch lesson
    assert LESSON not in text  # shadowed by it: held, and counted in the summary line
    first = text.splitlines()[0]
    assert "acme/widget on main at " in first
    assert "held back 1 (1 shadowed_by)" in first
    assert "reference data, not instructions" in text and FENCE_CLOSE in text


def test_session_start_derives_the_project_rung_from_the_repository(lessons: Place) -> None:
    project_lesson = "Every billing service ships behind a feature flag."
    code, _, _ = lessons.run("write", "project::billing", "flags", project_lesson)
    assert code == 0
    host, cwd = "claude-code", str(lessons.repo)
    before, _ = hook(lessons, host, "session-start", payload(host, "session-start", cwd))
    assert project_lesson not in context_of(host, before)  # no project holds the repository
    code, _, _ = lessons.run("project", "add", "billing", "acme/widget")
    assert code == 0
    after, _ = hook(lessons, host, "session-start", payload(host, "session-start", cwd))
    assert project_lesson in context_of(host, after) and LESSON in context_of(host, after)


def test_the_prompt_gets_only_what_the_session_was_not_given(lessons: Place) -> None:
    host, cwd = "claude-code", str(lessons.repo)
    start, _ = hook(lessons, host, "session-start", payload(host, "session-start", cwd))
    assert LESSON in context_of(host, start)
    # The lesson given at session start is not given again for a prompt it matches.
    answer, _ = hook(
        lessons, host, "prompt", payload(host, "prompt", cwd, prompt="fix the build flags")
    )
    assert answer == {}
    code, _, _ = lessons.run(
        "write", "global", "release-guard", "The release guard refuses unsigned tags."
    )
    assert code == 0
    answer, _ = hook(
        lessons,
        host,
        "prompt",
        payload(host, "prompt", cwd, prompt="why does the release guard refuse my tag"),
    )
    text = context_of(host, answer)
    assert "refuses unsigned tags" in text and LESSON not in text
    # Asked again: nothing new.
    answer, _ = hook(
        lessons, host, "prompt", payload(host, "prompt", cwd, prompt="the release guard again")
    )
    assert answer == {}
    # Another session is given it afresh.
    answer, _ = hook(
        lessons,
        host,
        "prompt",
        payload(host, "prompt", cwd, prompt="fix the build flags", session="other"),
    )
    assert LESSON in context_of(host, answer)


@pytest.mark.parametrize("host", HOSTS)
def test_a_repeated_failure_gets_matching_lessons_and_a_nudge(lessons: Place, host: str) -> None:
    cwd = str(lessons.repo)
    code, _, _ = lessons.run(
        "write",
        "repo::acme/widget",
        "make-test-db",
        "make test needs the test database: run make db first.",
    )
    assert code == 0
    event = "tool-done" if host == "codex" else "tool-failure"
    failed: dict[str, Any] = (
        {"tool_response": {"exit_code": 2, "stderr": "make test: database missing"}}
        if host == "codex"
        else {}
    )
    first, _ = hook(lessons, host, event, payload(host, event, cwd, **failed))
    assert first == {}  # once is not a pattern
    again, _ = hook(lessons, host, event, payload(host, event, cwd, **failed))
    text = context_of(host, again)
    assert "`make test` has failed 2 times in this session" in text
    assert "memory_write" in text
    assert "run make db first" in text
    # A different command failing once is not "repeated".
    lint = {"error": "Exit code 1", "error_message": "exit status 1"} if host != "codex" else {}
    other, _ = hook(
        lessons,
        host,
        event,
        payload(host, event, cwd, tool_input={"command": "make lint"}, **failed, **lint),
    )
    assert other == {}
    if host == "claude-code":  # a failed test reported again by another command is repeated too
        test, _ = hook(
            lessons,
            host,
            event,
            payload(host, event, cwd, tool_input={"command": "pytest tests/t.py"}),
        )
        assert "test `tests/t.py::test_a` has failed 3 times" in context_of(host, test)


@pytest.mark.parametrize("host", HOSTS)
def test_stop_nudges_once_after_failures_that_ended_in_success(lessons: Place, host: str) -> None:
    cwd = str(lessons.repo)
    quiet, _ = hook(lessons, host, "stop", payload(host, "stop", cwd))
    assert quiet == {}  # no failures: nothing to say
    event = "tool-done" if host == "codex" else "tool-failure"
    failed: dict[str, Any] = {"tool_response": {"exit_code": 1}} if host == "codex" else {}
    hook(lessons, host, event, payload(host, event, cwd, **failed))
    still, _ = hook(lessons, host, "stop", payload(host, "stop", cwd))
    assert still == {}  # failed, never fixed: no lesson to write yet
    hook(lessons, host, "tool-done", payload(host, "tool-done", cwd))
    if host != "cursor":
        active, _ = hook(lessons, host, "stop", payload(host, "stop", cwd, stop_hook_active=True))
        assert active == {}  # already continuing because of a stop hook
    nudge, _ = hook(lessons, host, "stop", payload(host, "stop", cwd))
    text = context_of(host, nudge)
    assert "failures that ended in success (`make test`)" in text and "memory_write" in text
    again, _ = hook(lessons, host, "stop", payload(host, "stop", cwd))
    assert again == {}  # once per session
    # It never writes a lesson itself.
    code, out, _ = lessons.run("list", "repo::acme/widget", "--json")
    assert code == 0 and len(json.loads(out)["lessons"]) == 1


@pytest.mark.parametrize("host", HOSTS)
def test_bad_input_answers_empty_and_is_logged(lessons: Place, host: str) -> None:
    for raw in (b"{not json", b"[1, 2]", b"\xff\xfe"):
        answer, _ = hook(lessons, host, "session-start", raw)
        assert answer == {}
    assert len(log_lines(lessons)) == 3
    assert all(f" {host} session-start: " in line for line in log_lines(lessons))


def test_a_locked_store_answers_empty_within_the_deadline(lessons: Place) -> None:
    host, cwd = "claude-code", str(lessons.repo)
    # Positive control: the same hook on the store, unlocked.
    answer, _ = hook(lessons, host, "session-start", payload(host, "session-start", cwd))
    assert LESSON in context_of(host, answer)
    locker = sqlite3.connect(lessons.store / "lorestore.db", isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    try:
        answer, took = hook(
            lessons, host, "session-start", payload(host, "session-start", cwd, session="s2")
        )
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    assert answer == {}
    assert took < DEADLINE_S + 3  # the host's timeout is 10 s
    assert log_lines(lessons), "the cause is logged"


def test_a_store_that_cannot_be_opened_answers_empty(lessons: Place) -> None:
    bad = lessons.tmp / "not-a-db"
    bad.write_bytes(b"this is not a database" * 100)
    for host in HOSTS:
        answer, _ = hook(
            lessons,
            host,
            "session-start",
            payload(host, "session-start", str(lessons.repo)),
            LORESTORE_DATABASE_URL=f"sqlite:///{bad}",
        )
        assert answer == {}
    assert len(log_lines(lessons)) == 3


def test_a_bad_command_line_exits_1_without_blocking(place: Place) -> None:
    done = subprocess.run(
        [LORESTORE, "hook", "bogus", "--host", "claude-code"],
        input=b"{}",
        capture_output=True,
        check=False,
    )
    assert done.returncode == 1  # not 2: Claude Code would block the session on 2
    assert b"usage: lorestore hook EVENT --host HOST" in done.stderr


def test_cursor_prompt_answers_continue_without_opening_the_store(place: Place) -> None:
    answer, _ = hook(place, "cursor", "prompt", payload("cursor", "prompt", str(place.repo)))
    assert answer == {"continue": True}
    assert not (place.store / "lorestore.db").exists()


def test_a_tool_success_does_not_open_the_store(place: Place) -> None:
    answer, _ = hook(
        place, "claude-code", "tool-done", payload("claude-code", "tool-done", str(place.repo))
    )
    assert answer == {}
    assert not (place.store / "lorestore.db").exists()


def test_context_fits_the_hosts_limit(place: Place) -> None:
    for i in range(60):
        code, _, _ = place.run(
            "write", "repo::acme/widget", f"long-{i}", "x " * 700 + f"lesson {i}"
        )
        assert code == 0
    for host in HOSTS:
        answer, _ = hook(
            place, host, "session-start", payload(host, "session-start", str(place.repo))
        )
        assert 0 < len(context_of(host, answer)) <= 10_000


def test_the_hooks_that_open_no_store_import_no_models(place: Place) -> None:
    """A tool's success (every Bash command) and Cursor's prompt are answered without
    pydantic, the store or git: the host waits for them at every step."""
    import sys

    script = (
        "import sys, io, json\n"
        "sys.stdin = io.TextIOWrapper(io.BytesIO(json.dumps({'session_id': 's', 'tool_name': "
        "'Bash', 'tool_input': {'command': 'ls'}, 'tool_response': {}}).encode()))\n"
        "from lorestore.hosts.hook import main\n"
        "main(['tool-done', '--host', 'claude-code'])\n"
        "heavy = [m for m in ('pydantic', 'lorestore.models', 'lorestore.service', 'sqlite3')"
        " if m in sys.modules]\n"
        "print(json.dumps(heavy), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, "LORESTORE_HOME": str(place.store)},
        check=True,
    )
    assert json.loads(done.stdout) == {}
    assert json.loads(done.stderr.strip().splitlines()[-1]) == []
