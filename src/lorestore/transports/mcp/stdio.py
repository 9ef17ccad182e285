"""``lorestore mcp``: the MCP server over stdio on the embedded store (one per agent)."""

from __future__ import annotations

import shutil
import sys
import uuid

from lorestore.auth.actor import local_agent
from lorestore.config import Settings


def announce(settings: Settings) -> None:
    """Tell a person at a terminal how to connect a host; stdout stays the protocol channel."""
    exe = shutil.which("lorestore") or f"{sys.prefix}/bin/lorestore"
    print(
        "lorestore MCP server on stdio, embedded store at "
        f"{settings.sqlite_path}\n"
        "Connect a host to this command rather than to this terminal:\n"
        f"  Claude Code:  claude mcp add lorestore -- {exe} mcp\n"
        f"  Codex:        codex mcp add lorestore -- {exe} mcp\n"
        f'  Cursor:       .cursor/mcp.json -> {{"mcpServers": {{"lorestore": '
        f'{{"command": "{exe}", "args": ["mcp"]}}}}}}\n'
        "Serving now; press Ctrl-D or Ctrl-C to stop.",
        file=sys.stderr,
        flush=True,
    )


def serve_stdio(settings: Settings) -> None:
    import anyio
    from mcp.server.stdio import stdio_server

    from lorestore.composition import build_service
    from lorestore.transports.mcp.server import build_server

    service = build_service(settings)
    # One server process serves one agent session: its writes share a session id so that
    # recurrence counts sessions, not calls.
    session = settings.session or f"mcp-{uuid.uuid4()}"
    server = build_server(service, local_agent(session=session, agent=settings.agent))

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    try:
        anyio.run(run)
    except KeyboardInterrupt:
        pass
    finally:
        service.store.close()
