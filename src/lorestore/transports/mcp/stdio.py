"""``lorestore mcp``: the MCP server over stdio (one per agent), on the embedded store or, in
remote mode, on a server's REST API for hosts that only speak stdio."""

from __future__ import annotations

import contextlib
import shutil
import sys

from lorestore.config import Settings
from lorestore.transports.mcp.server import Invoker


def announce(settings: Settings) -> None:
    """Tell a person at a terminal how to connect a host; stdout stays the protocol channel."""
    exe = shutil.which("lorestore") or f"{sys.prefix}/bin/lorestore"
    where = (
        f"remote server {settings.url}"
        if settings.remote
        else f"embedded store at {settings.sqlite_path}"
    )
    print(
        f"lorestore MCP server on stdio, {where}\n"
        "Connect a host to this command rather than to this terminal:\n"
        f"  Claude Code:  claude mcp add lorestore -- {exe} mcp\n"
        f"  Codex:        codex mcp add lorestore -- {exe} mcp\n"
        f'  Cursor:       .cursor/mcp.json -> {{"mcpServers": {{"lorestore": '
        f'{{"command": "{exe}", "args": ["mcp"]}}}}}}\n'
        "Serving now; press Ctrl-D or Ctrl-C to stop.",
        file=sys.stderr,
        flush=True,
    )


def serve_stdio(invoke: Invoker) -> None:
    """Serve the tools over stdin/stdout until the host closes them."""
    import anyio
    from mcp.server.stdio import stdio_server

    from lorestore.transports.mcp.server import build_server

    server = build_server(lambda ctx: invoke)

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(run)
