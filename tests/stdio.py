"""The stdio MCP server under test: ``lorestore mcp`` spawned as a real process and driven by
the official SDK client, with a small wrapper for calls that must succeed or fail."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

EXE = str(Path(sys.executable).parent / "lorestore")


class Tools:
    def __init__(self, client: Client) -> None:
        self.client = client

    async def ok(self, name: str, **arguments: Any) -> dict[str, Any]:
        result = await self.client.call_tool(name, arguments)
        assert not result.is_error, result.structured_content
        assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]
        payload: dict[str, Any] = result.structured_content
        return payload

    async def error(self, name: str, **arguments: Any) -> dict[str, Any]:
        result = await self.client.call_tool(name, arguments)
        assert result.is_error
        body: dict[str, Any] = result.structured_content["error"]
        return body


def run_mcp(
    home: Path,
    scenario: Callable[[Tools], Awaitable[None]],
    *,
    cwd: Path | None = None,
    **env: str,
) -> None:
    params = StdioServerParameters(
        command=EXE,
        args=["mcp"],
        env={"LORESTORE_HOME": str(home), "PATH": os.environ.get("PATH", ""), **env},
        # Not the suite's own folder: the server reads its context from the working
        # directory's git (a clone's origin would name a repository).
        cwd=cwd or home.parent,
    )

    async def main() -> None:
        async with Client(params) as client:
            await scenario(Tools(client))

    anyio.run(main)
