"""Where each host keeps its configuration, and what lorestore writes there, per host x
``--project``/``--user`` x embedded/``--remote`` (docs/hosts.md cites each host's page):

- claude-code: ``.mcp.json`` (user: ``~/.claude.json``), ``.claude/settings.json`` (hooks),
  ``.claude/skills/lorestore/SKILL.md`` (user: the same under ``~``);
- cursor: ``.cursor/mcp.json``, ``.cursor/hooks.json``, ``.cursor/rules/lorestore.mdc``
  (user: ``~/.cursor/...``, the skill as ``~/.cursor/skills/lorestore/SKILL.md``);
- codex: ``.codex/config.toml``, ``.codex/hooks.json``, ``AGENTS.md`` (user: the same in
  ``$CODEX_HOME``, default ``~/.codex``).

The hooks run ``lorestore hook EVENT --host H`` by absolute path, with the variables that
chose the store; for a server, its URL and the token *variable* (never a token)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from lorestore.hosts.edits import Edit, JsonEdit, MarkedBlock, OwnedFile, TomlEdit
from lorestore.hosts.events import HOST_EVENTS
from lorestore.hosts.skill import agents_block, cursor_rule, skill_md

SERVER = "lorestore"
HOOK_TIMEOUT_S = 10
# The events each host's hooks file gets, with the tool matcher where the host has one.
HOOKED: dict[str, tuple[tuple[str, str | None], ...]] = {
    "claude-code": (
        ("session-start", None),
        ("prompt", None),
        ("tool-failure", None),
        ("tool-done", "Bash"),
        ("stop", None),
    ),
    "codex": (("session-start", None), ("prompt", None), ("tool-done", "Bash"), ("stop", None)),
    # beforeSubmitPrompt cannot add context in Cursor, so no prompt hook is installed there.
    "cursor": (
        ("session-start", None),
        ("tool-failure", None),
        ("tool-done", "Shell"),
        ("stop", None),
    ),
}
_OURS = re.compile(
    r"(^|[\s/'\"])lorestore['\"]?\s+hook\s+(session-start|prompt|tool-failure|tool-done|stop)"
    r"\s+--host\s+(claude-code|cursor|codex)\b"
)


@dataclass(frozen=True)
class Target:
    """One install: where, for which host, and how the host reaches the store."""

    host: str
    scope: Literal["project", "user"]
    root: Path  # the repository (project) or the user's home folder (user)
    exe: str  # lorestore, by absolute path
    store_env: dict[str, str] = field(default_factory=dict)  # embedded: what chose the store
    remote: str | None = None  # the server's base URL
    token_env: str = "LORESTORE_TOKEN"  # noqa: S105 - a variable name
    hooks: bool = True
    codex_home: Path | None = None  # user installs for Codex: $CODEX_HOME

    @property
    def mcp_url(self) -> str:
        assert self.remote is not None
        return f"{self.remote}/mcp"


def is_our_command(command: Any) -> bool:
    return isinstance(command, str) and _OURS.search(command) is not None


def hook_command(target: Target, event: str) -> str:
    """The shell command line a host runs for ``event``."""
    env = dict(target.store_env)
    if target.remote is not None:
        env = {"LORESTORE_URL": target.remote}
    prefix = "".join(f"{name}={shlex.quote(value)} " for name, value in env.items())
    if target.remote is not None and target.token_env != "LORESTORE_TOKEN":  # noqa: S105
        prefix += f'LORESTORE_TOKEN="${{{target.token_env}}}" '
    return f"{prefix}{shlex.quote(target.exe)} hook {event} --host {target.host}"


def _mcp_entry(target: Target) -> dict[str, Any]:
    if target.remote is None:
        entry: dict[str, Any] = {"command": target.exe, "args": ["mcp"]}
        if target.host == "claude-code":
            entry = {"type": "stdio", **entry}
        if target.store_env:
            entry["env"] = dict(target.store_env)
        return entry
    if target.host == "claude-code":  # ${VAR} is expanded by Claude Code in .mcp.json
        return {
            "type": "http",
            "url": target.mcp_url,
            "headers": {"Authorization": f"Bearer ${{{target.token_env}}}"},
        }
    # cursor: ${env:VAR} is expanded in mcp.json
    return {
        "url": target.mcp_url,
        "headers": {"Authorization": f"Bearer ${{env:{target.token_env}}}"},
    }


def _group_is_ours(group: Any) -> bool:
    """A Claude Code / Codex matcher group whose every hook is lorestore's."""
    if not isinstance(group, dict):
        return False
    hooks = group.get("hooks")
    return (
        isinstance(hooks, list)
        and bool(hooks)
        and all(isinstance(h, dict) and is_our_command(h.get("command")) for h in hooks)
    )


def _cursor_entry_is_ours(entry: Any) -> bool:
    return isinstance(entry, dict) and is_our_command(entry.get("command"))


def _grouped_hooks(target: Target) -> list[tuple[tuple[str, ...], list[Any]]]:
    """Claude Code's and Codex's hooks: event -> [matcher group -> [command hook]]."""
    items: list[tuple[tuple[str, ...], list[Any]]] = []
    for event, matcher in HOOKED[target.host]:
        name = HOST_EVENTS[target.host][event]
        assert name is not None
        hook = {
            "type": "command",
            "command": hook_command(target, event),
            "timeout": HOOK_TIMEOUT_S,
        }
        group: dict[str, Any] = {"matcher": matcher} if matcher else {}
        group["hooks"] = [hook]
        items.append((("hooks", name), [group]))
    return items


def _cursor_hooks(target: Target) -> list[tuple[tuple[str, ...], list[Any]]]:
    items: list[tuple[tuple[str, ...], list[Any]]] = []
    for event, matcher in HOOKED["cursor"]:
        name = HOST_EVENTS["cursor"][event]
        assert name is not None
        entry: dict[str, Any] = {"command": hook_command(target, event), "timeout": HOOK_TIMEOUT_S}
        if matcher:
            entry["matcher"] = matcher
        items.append((("hooks", name), [entry]))
    return items


def edits(target: Target) -> list[Edit]:
    """Every file install writes for ``target``, in the order it prints them."""
    root = target.root
    if target.host == "claude-code":
        user = target.scope == "user"
        out: list[Edit] = [
            JsonEdit(
                root / (".claude.json" if user else ".mcp.json"),
                entries=[(("mcpServers", SERVER), _mcp_entry(target))],
            )
        ]
        if target.hooks:
            out.append(
                JsonEdit(
                    root / ".claude" / "settings.json",
                    items=_grouped_hooks(target),
                    ours=_group_is_ours,
                )
            )
        out.append(OwnedFile(root / ".claude" / "skills" / SERVER / "SKILL.md", skill_md()))
        return out
    if target.host == "cursor":
        base = root / ".cursor"
        out = [JsonEdit(base / "mcp.json", entries=[(("mcpServers", SERVER), _mcp_entry(target))])]
        if target.hooks:
            out.append(
                JsonEdit(
                    base / "hooks.json",
                    defaults=[(("version",), 1)],
                    items=_cursor_hooks(target),
                    ours=_cursor_entry_is_ours,
                )
            )
        if target.scope == "project":
            out.append(OwnedFile(base / "rules" / f"{SERVER}.mdc", cursor_rule()))
        else:
            out.append(OwnedFile(base / "skills" / SERVER / "SKILL.md", skill_md()))
        return out
    # codex
    base = (target.codex_home or root / ".codex") if target.scope == "user" else root / ".codex"
    table: dict[str, Any]
    if target.remote is None:
        table = {"command": target.exe, "args": ["mcp"]}
        if target.store_env:
            table["env"] = dict(target.store_env)
    else:
        table = {"url": target.mcp_url, "bearer_token_env_var": target.token_env}
    flags = [(("features", "codex_hooks"), True)] if target.hooks else []
    out = [TomlEdit(base / "config.toml", table=(("mcp_servers", SERVER), table), flags=flags)]
    if target.hooks:
        out.append(JsonEdit(base / "hooks.json", items=_grouped_hooks(target), ours=_group_is_ours))
    agents = base / "AGENTS.md" if target.scope == "user" else root / "AGENTS.md"
    out.append(MarkedBlock(agents, agents_block(hooks=target.hooks)))
    return out
