"""The MCP transport floor: a bare stdio server built with the same SDK and the same low-level
``Server`` wiring as ``lorestore.transports.mcp.server``, whose tools (named like lorestore's)
return a small constant structured result and touch no database.

Run as ``python benchmarks/bare_mcp_server.py``; the benchmark spawns it like ``lorestore mcp``.
With ``BARE_MCP_CANNED=FILE`` (JSON ``{tool: {"result": ..., "output_schema": ...}}``) each
tool instead returns a canned lorestore result under lorestore's own output schema: the cost
of carrying lorestore-sized results through the SDK, still without any database work.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

TOOL_NAMES = ("memory_write", "memory_read", "memory_list", "memory_search")
RESULT: dict[str, Any] = {"ok": True}
OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
}


def _canned() -> dict[str, dict[str, Any]]:
    path = os.environ.get("BARE_MCP_CANNED")
    if path:
        return dict(json.loads(Path(path).read_text()))
    return {name: {"result": RESULT, "output_schema": OUTPUT_SCHEMA} for name in TOOL_NAMES}


def tool_definitions(canned: dict[str, dict[str, Any]]) -> list[types.Tool]:
    return [
        types.Tool(
            name=name,
            description=f"{name} (constant result; transport floor)",
            input_schema={"type": "object", "additionalProperties": True},
            output_schema=spec["output_schema"],
        )
        for name, spec in canned.items()
    ]


def build_server() -> Server[Any]:
    canned = _canned()
    tools = tool_definitions(canned)
    texts = {name: json.dumps(spec["result"], ensure_ascii=False) for name, spec in canned.items()}

    async def on_list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def on_call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        # Same result shape as lorestore's tools: the JSON as text and as structured content.
        return types.CallToolResult(
            content=[types.TextContent(text=texts[params.name])],
            structured_content=dict(canned[params.name]["result"]),
        )

    return Server("bare-floor", version="0", on_list_tools=on_list_tools, on_call_tool=on_call_tool)


def main() -> None:
    server = build_server()

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(run)


if __name__ == "__main__":
    main()
