"""Hook input as each host documents it, and the output shape each documents, as JSON
Schemas the answers are checked against.

- Claude Code: https://code.claude.com/docs/en/hooks (common fields session_id,
  transcript_path, cwd, permission_mode, hook_event_name; per event source / prompt /
  tool_name, tool_input, tool_use_id, error, is_interrupt / tool_response / stop_hook_active;
  output hookSpecificOutput.{hookEventName, additionalContext}, Stop: decision + reason).
- Codex: https://developers.openai.com/codex/hooks (session_id, transcript_path, cwd,
  hook_event_name, model, turn_id; the same output fields as Claude Code).
- Cursor: https://cursor.com/docs/agent/hooks (conversation_id, generation_id, model,
  hook_event_name, cursor_version, workspace_roots, user_email; sessionStart answers
  additional_context, beforeSubmitPrompt continue, postToolUse(Failure) additional_context,
  stop followup_message)."""

from __future__ import annotations

from typing import Any

from lorestore.hosts.events import HOST_EVENTS

SESSION = "0f9a7c2e-5b1d-4c3e-9a8f-1d2e3f4a5b6c"


def payload(host: str, event: str, cwd: str, **fields: Any) -> dict[str, Any]:
    """A host's hook input for ``event``; ``fields`` override or add to the documented ones."""
    name = HOST_EVENTS[host][event]
    if host == "cursor":
        base: dict[str, Any] = {
            "conversation_id": fields.pop("session", SESSION),
            "generation_id": "gen-1",
            "model": "claude-sonnet-4",
            "hook_event_name": name,
            "cursor_version": "2.1.0",
            "workspace_roots": [cwd],
            "user_email": None,
        }
        extra: dict[str, Any] = {
            "session-start": {"session_id": base["conversation_id"], "is_background_agent": False,
                              "composer_mode": "agent"},
            "prompt": {"prompt": "change the build flags", "attachments": []},
            "tool-failure": {"tool_name": "Shell", "tool_input": {"command": "make test"},
                             "tool_use_id": "t1", "cwd": cwd, "error_message": "exit status 2",
                             "failure_type": "error", "duration": 1200},
            "tool-done": {"tool_name": "Shell", "tool_input": {"command": "make test"},
                          "tool_output": '{"exitCode": 0}', "tool_use_id": "t2", "cwd": cwd,
                          "duration": 900},
            "stop": {"status": "completed", "loop_count": 0},
        }[event]  # fmt: skip
    else:
        base = {
            "session_id": fields.pop("session", SESSION),
            "transcript_path": "/tmp/transcript.jsonl",
            "cwd": cwd,
            "hook_event_name": name or "PostToolUse",
        }
        if host == "claude-code":
            base["permission_mode"] = "default"
        else:
            base |= {"model": "gpt-5-codex", "turn_id": "turn-1"}
        done: Any = (
            {"stdout": "ok", "stderr": "", "interrupted": False, "exit_code": 0}
            if host == "claude-code"
            else {"exit_code": 0, "output": "ok"}
        )
        extra = {
            "session-start": {"source": "startup"},
            "prompt": {"prompt": "change the build flags"},
            "tool-failure": {"tool_name": "Bash", "tool_input": {"command": "make test"},
                             "tool_use_id": "toolu_1",
                             "error": "Exit code 2\nFAILED tests/t.py::test_a",
                             "is_interrupt": False},
            "tool-done": {"tool_name": "Bash", "tool_input": {"command": "make test"},
                          "tool_use_id": "toolu_2", "tool_response": done},
            "stop": {"stop_hook_active": False},
        }[event]  # fmt: skip
    return {**base, **extra, **fields}


def _claude_like(host: str, event: str) -> dict[str, Any]:
    common = {
        "continue": {"type": "boolean"},
        "stopReason": {"type": "string"},
        "suppressOutput": {"type": "boolean"},
        "systemMessage": {"type": "string"},
    }
    if event == "stop":
        return {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                **common,
                "decision": {"enum": ["block"]},
                "reason": {"type": "string", "minLength": 1},
            },
            "dependentRequired": {"decision": ["reason"]},
        }
    name = HOST_EVENTS[host][event] or "PostToolUse"
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            **common,
            "hookSpecificOutput": {
                "type": "object",
                "additionalProperties": False,
                "required": ["hookEventName"],
                "properties": {
                    "hookEventName": {"const": name},
                    "additionalContext": {"type": "string", "maxLength": 10_000},
                },
            },
        },
    }


def _cursor(event: str) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "session-start": {
            "env": {"type": "object"},
            "additional_context": {"type": "string"},
            "continue": {"type": "boolean"},
            "user_message": {"type": "string"},
        },
        "prompt": {"continue": {"type": "boolean"}, "user_message": {"type": "string"}},
        "tool-failure": {"additional_context": {"type": "string"}},
        "tool-done": {
            "additional_context": {"type": "string"},
            "updated_mcp_tool_output": {"type": "object"},
        },
        "stop": {"followup_message": {"type": "string", "minLength": 1}},
    }[event]
    schema: dict[str, Any] = {
        "type": "object",
        "additionalProperties": False,
        "properties": properties,
    }
    if event == "prompt":
        schema["required"] = ["continue"]
    return schema


def output_schema(host: str, event: str) -> dict[str, Any]:
    """The documented shape of a hook's answer on stdout."""
    return _cursor(event) if host == "cursor" else _claude_like(host, event)


def context_of(host: str, answer: dict[str, Any]) -> str:
    """The text an answer gives the agent ('' for none)."""
    if host == "cursor":
        return str(answer.get("additional_context") or answer.get("followup_message") or "")
    specific = answer.get("hookSpecificOutput") or {}
    return str(specific.get("additionalContext") or answer.get("reason") or "")
