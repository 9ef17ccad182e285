"""What ``lorestore mcp`` runs: the stdio MCP server on the local store or, in remote mode, on a
server. Without Typer, so that the entry point can start it directly for the command line
hosts run at every session (``lorestore mcp``, nothing after it)."""

from __future__ import annotations

import os
import sys

from lorestore.auth.actor import local_agent
from lorestore.cli.backend import open_backend, with_git_context
from lorestore.config import load_settings


def serve_mcp(*, announce: bool, allow_person_token: bool) -> None:
    """Serve until the host closes stdin; a setting or store that cannot be used raises
    LorestoreError. Your own `lorestore login` credential is never used here."""
    import uuid

    from lorestore.transports.mcp.stdio import WorkTree, bridged_permissions, serve_stdio
    from lorestore.transports.mcp.stdio import announce as print_announcement

    settings = load_settings(use_login=False)
    # A person who typed `lorestore mcp` at a terminal would otherwise see nothing at all.
    if announce or sys.stdin.isatty():
        print_announcement(settings)
    # One server process serves one agent session: its writes share a session id so that
    # recurrence counts sessions, not calls.
    session = settings.session or f"mcp-{uuid.uuid4()}"
    agent = local_agent(principal=settings.principal, session=session, agent=settings.agent)
    backend = open_backend(settings, agent)
    try:
        permissions = agent.permissions
        if settings.remote:  # the token's rights, not the local agent's, decide there
            permissions = bridged_permissions(backend.invoke, allow_person_token=allow_person_token)
        tree = WorkTree(os.getcwd())
        serve_stdio(with_git_context(backend.invoke, tree.path), permissions, tree)
    finally:
        backend.close()


def main_mcp() -> None:
    """``lorestore mcp`` as the command tree would run it, without building the tree: the same
    error report on stderr and exit status (2 for bad input, 1 otherwise; 130 on Ctrl-C)."""
    from lorestore.core.errors import LorestoreError

    try:
        serve_mcp(announce=False, allow_person_token=False)
    except LorestoreError as error:
        from lorestore.cli.render import make_console, render_error

        render_error(make_console(stderr=True), error)
        raise SystemExit(2 if error.bad_input else 1) from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None
