"""LoreKit's own local MCP server files a lesson whose scope it cannot place (mixed case, one
colon, an unknown kind) under ``_other/``, keeping the scope as written. Import read 0 of
those files and exited 0; now it imports what the scope grammar can correct, says how each
scope was mapped, reports the rest, and exits 1 when something was not imported. The tree is
written by the real, unmodified LoreKit CLI (``../shared/peers/lorekit-cli``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from tests.conftest import Cli
from tests.lorekit import LOREKIT, node_or_skip

WRITTEN = {
    "global": "g",  # the control: a scope LoreKit places itself
    "Repo::Acme/App": "mixed-case",
    "repo:acme/app": "one-colon",
    "team::infra": "unknown-kind",
}


def _lorekit_tree(home: Path) -> None:
    node = node_or_skip()
    env = {**os.environ, "LOREKIT_MODE": "local", "LOREKIT_HOME": str(home)}
    env["LOREKIT_TELEMETRY"] = "0"
    params = StdioServerParameters(
        command=node, args=[str(LOREKIT / "lorekit.mjs"), "mcp"], env=env, cwd=str(home.parent)
    )

    async def write_all() -> None:
        async with Client(params) as client:
            for scope, key in WRITTEN.items():
                arguments: dict[str, Any] = {"scope": scope, "key": key, "value": f"{key} lesson"}
                result = await client.call_tool("memory.write", arguments)
                assert not result.is_error, result.content

    anyio.run(write_all)


@pytest.mark.slow
def test_lessons_lorekit_filed_under_other_are_imported_or_reported(
    cli: Cli, tmp_path: Path
) -> None:
    tree = tmp_path / "lorekit"
    _lorekit_tree(tree)
    assert len(list((tree / "_other").glob("*/*.md"))) == 3  # where LoreKit put them
    done = cli("import", "--format", "lorekit", str(tree), "--json")
    assert done.exit_code == 1  # team::infra could not be imported
    result = done.json()
    assert (result["read"], result["invalid"], result["lessons"]["added"]) == (4, 1, 3)
    problems = {p["key"]: p for p in result["problems"]}
    assert problems["mixed-case"]["code"] == "scope_mapped"
    assert "'Repo::Acme/App' was imported as 'repo::acme/app'" in problems["mixed-case"]["message"]
    assert problems["one-colon"]["code"] == "scope_mapped"
    assert "'repo:acme/app' was imported as 'repo::acme/app'" in problems["one-colon"]["message"]
    assert problems["unknown-kind"]["code"] == "invalid_record"
    assert "team" in problems["unknown-kind"]["message"]
    assert "g" not in problems  # the control landed as written, with nothing to say
    for key in ("mixed-case", "one-colon"):
        assert cli.ok("read", "repo::acme/app", key)["lesson"]["value"] == f"{key} lesson"
    assert cli.ok("read", "global", "g")["lesson"]["value"] == "g lesson"
    # Written back out: the case LoreKit used is kept, the one-colon scope is repaired.
    out = tmp_path / "back"
    assert cli("export", "--format", "lorekit", str(out)).exit_code == 0
    scopes = {p.read_text().splitlines()[1] for p in out.rglob("*.md")}
    assert scopes == {'scope: "global"', 'scope: "Repo::Acme/App"', 'scope: "repo::acme/app"'}
