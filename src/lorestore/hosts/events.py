"""The lifecycle events of each host: the event names its hooks file uses, what lorestore
reads from the JSON a host writes on the hook's stdin, and the JSON it answers on stdout.

Pure functions, no I/O and no lorestore imports beyond the standard library, so that
``lorestore hook`` can parse and answer before (or without) opening a store.

- Claude Code (https://code.claude.com/docs/en/hooks): ``SessionStart``, ``UserPromptSubmit``,
  ``PostToolUseFailure``, ``PostToolUse``, ``Stop``; context goes back as
  ``hookSpecificOutput.additionalContext``; a Stop hook speaks to the agent with
  ``{"decision": "block", "reason": ...}``.
- Codex (https://developers.openai.com/codex/hooks): the same shapes for ``SessionStart``,
  ``UserPromptSubmit``, ``PostToolUse`` and ``Stop`` (no failure event: a failed command is a
  ``PostToolUse`` whose response carries a non-zero exit code).
- Cursor (https://cursor.com/docs/agent/hooks): ``sessionStart`` answers
  ``additional_context``; ``beforeSubmitPrompt`` may only answer ``continue`` (no context can
  be added there); ``postToolUse``/``postToolUseFailure`` answer ``additional_context``;
  ``stop`` answers ``followup_message``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

# lorestore's own event names (`lorestore hook EVENT`), host-independent.
EVENTS = ("session-start", "prompt", "tool-failure", "tool-done", "stop")

# event -> the host's name for it in its hooks file (None: the host has no such event).
HOST_EVENTS: dict[str, dict[str, str | None]] = {
    "claude-code": {
        "session-start": "SessionStart",
        "prompt": "UserPromptSubmit",
        "tool-failure": "PostToolUseFailure",
        "tool-done": "PostToolUse",
        "stop": "Stop",
    },
    "codex": {
        "session-start": "SessionStart",
        "prompt": "UserPromptSubmit",
        "tool-failure": None,  # a failed command arrives as PostToolUse (tool-done)
        "tool-done": "PostToolUse",
        "stop": "Stop",
    },
    "cursor": {
        "session-start": "sessionStart",
        "prompt": "beforeSubmitPrompt",
        "tool-failure": "postToolUseFailure",
        "tool-done": "postToolUse",
        "stop": "stop",
    },
}

# Hard limits of what a host takes back: Claude Code caps hook output injected into context
# at 10,000 characters; the others are kept to the same.
MAX_CONTEXT_CHARS = 9_000
_WHITESPACE = re.compile(r"\s+")
_EXIT_CODE = re.compile(r"exit(?:ed with)?[ _]?code[\"':= ]+(-?\d+)", re.IGNORECASE)
_FAILED_TEST = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Payload:
    """What a hook needs from the host's input, whichever host wrote it."""

    host: str
    event: str
    session: str
    cwd: str | None
    prompt: str | None = None
    tool: str | None = None
    command: str | None = None  # the command line, file or input a tool ran with
    error: str | None = None  # a failure's message or output
    failed: bool = False  # the tool failed (always for tool-failure)
    stop_active: bool = False  # the host is already continuing because of a stop hook
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def signature(self) -> str | None:
        """What makes two tool calls "the same command": the tool and its normalised input."""
        if self.tool is None and self.command is None:
            return None
        text = _WHITESPACE.sub(" ", self.command or "").strip()[:300]
        return f"{self.tool or 'tool'}: {text}"

    def failed_tests(self) -> list[str]:
        """Test ids a test runner reported as failed in the output (pytest's FAILED lines)."""
        return sorted(set(_FAILED_TEST.findall(self.error or "")))[:20]


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _tool_input(value: Any) -> str | None:
    """The part of a tool's input that names what it did: a command, else a path, else all."""
    if isinstance(value, str):
        try:
            value = json.loads(value)  # Cursor sends MCP tool input as a JSON string
        except ValueError:
            return str(value)
    if isinstance(value, dict):
        for name in ("command", "cmd", "file_path", "path", "url", "pattern"):
            if isinstance(value.get(name), str | list):
                got = value[name]
                return " ".join(map(str, got)) if isinstance(got, list) else got
    return _text(value)


def _exit_failure(response: Any) -> tuple[bool, str | None]:
    """Whether a PostToolUse response says the command failed, and its output."""
    if isinstance(response, str) and response.lstrip().startswith("{"):
        with contextlib.suppress(ValueError):  # Cursor sends tool output as a JSON string
            response = json.loads(response)
    if isinstance(response, dict):
        for name in ("exit_code", "exitCode", "returncode", "status_code"):
            code = response.get(name)
            if isinstance(code, int) and not isinstance(code, bool):
                output = response.get("stderr") or response.get("output") or response.get("stdout")
                return code != 0, _text(output)
        if response.get("is_error") is True or response.get("success") is False:
            return True, _text(response.get("error") or response.get("output") or response)
        return False, None
    text = _text(response)
    if text:
        match = _EXIT_CODE.search(text)
        if match and int(match.group(1)) != 0:
            return True, text
    return False, None


def parse_payload(host: str, event: str, data: Any) -> Payload:
    """The host's stdin JSON as a Payload; a ValueError when it is not a JSON object."""
    if not isinstance(data, dict):
        raise ValueError(f"the {host} hook input is not a JSON object")
    roots = data.get("workspace_roots")
    cwd = data.get("cwd")
    if not isinstance(cwd, str) or not cwd:
        cwd = roots[0] if isinstance(roots, list) and roots and isinstance(roots[0], str) else None
    session = data.get("session_id") or data.get("conversation_id") or ""
    if not isinstance(session, str):
        session = str(session)
    tool = data.get("tool_name")
    command = _tool_input(data.get("tool_input")) if "tool_input" in data else None
    error: str | None = None
    failed = False
    if event == "tool-failure":
        failed = True
        error = _text(data.get("error") or data.get("error_message") or data.get("tool_output"))
    elif event == "tool-done":
        response = data.get("tool_response", data.get("tool_output"))
        failed, error = _exit_failure(response)
    prompt = data.get("prompt")
    return Payload(
        host=host,
        event=event,
        session=session,
        cwd=cwd,
        prompt=prompt if isinstance(prompt, str) else None,
        tool=tool if isinstance(tool, str) else None,
        command=command,
        error=error,
        failed=failed,
        stop_active=bool(data.get("stop_hook_active")),
        raw=data,
    )


def session_key(host: str, session: str) -> str:
    """The file name a host session's memory is kept under (the id is the host's, hashed)."""
    return hashlib.sha256(f"{host}\0{session}".encode()).hexdigest()[:32]


def clip(text: str, limit: int = MAX_CONTEXT_CHARS) -> str:
    if len(text) <= limit:
        return text
    return text[: limit - 40].rstrip() + "\n[... cut to fit the host's limit]"


def answer(host: str, event: str, context: str | None) -> dict[str, Any]:
    """The JSON a host expects back: ``context`` for the agent, or the empty answer (None)."""
    if host == "cursor":
        if event == "prompt":
            return {"continue": True}  # Cursor takes no context from beforeSubmitPrompt
        if not context:
            return {}
        if event == "stop":
            return {"followup_message": clip(context)}
        return {"additional_context": clip(context)}
    # Claude Code and Codex share the shape.
    if not context:
        return {}
    if event == "stop":
        return {"decision": "block", "reason": clip(context)}
    name = HOST_EVENTS[host][event] or "PostToolUse"
    return {"hookSpecificOutput": {"hookEventName": name, "additionalContext": clip(context)}}


def empty_answer(host: str, event: str) -> dict[str, Any]:
    """The answer that changes nothing for the host: what a hook says when it cannot help."""
    return answer(host, event, None)
