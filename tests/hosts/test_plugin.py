"""The Claude Code plugin in the repository (`claude plugin marketplace add` on the repo): a
marketplace manifest naming the plugin, the plugin manifest, its MCP server, its hooks (the
same events and commands install writes, with lorestore on PATH) and the same skill."""

from __future__ import annotations

import json
from pathlib import Path

from lorestore import __version__
from lorestore.hosts.events import HOST_EVENTS
from lorestore.hosts.formats import HOOKED, is_our_command
from lorestore.hosts.skill import skill_md

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "plugin"


def test_the_marketplace_lists_the_plugin() -> None:
    market = json.loads((ROOT / ".claude-plugin" / "marketplace.json").read_text())
    assert market["name"] == "lorestore" and market["owner"]["name"]
    [entry] = market["plugins"]
    assert entry["name"] == "lorestore"
    assert (ROOT / entry["source"] / ".claude-plugin" / "plugin.json").is_file()
    assert entry["version"] == __version__


def test_the_plugin_manifest_and_its_parts() -> None:
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "lorestore" and manifest["version"] == __version__
    # Only the manifest lives in .claude-plugin/; the parts are at the plugin's root.
    assert sorted(p.name for p in (PLUGIN / ".claude-plugin").iterdir()) == ["plugin.json"]
    servers = json.loads((PLUGIN / ".mcp.json").read_text())["mcpServers"]
    assert servers == {"lorestore": {"command": "lorestore", "args": ["mcp"]}}
    assert (PLUGIN / "skills" / "lorestore" / "SKILL.md").read_text() == skill_md()


def test_the_plugin_hooks_are_the_ones_install_writes() -> None:
    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
    want = {
        HOST_EVENTS["claude-code"][event]: (event, matcher)
        for event, matcher in HOOKED["claude-code"]
    }
    assert set(hooks) == set(want)
    for name, (event, matcher) in want.items():
        [group] = hooks[name]
        assert group.get("matcher") == matcher
        [hook] = group["hooks"]
        assert hook["type"] == "command" and is_our_command(hook["command"])
        assert hook["command"] == f"lorestore hook {event} --host claude-code"
