"""What ``lorestore mcp`` runs: the stdio MCP server on the local store or, in remote mode, on a
server. Without Typer, so that the entry point can start it directly for the command line
hosts run at every session (``lorestore mcp``, nothing after it). The store is opened before
the host is answered; the service and the catalog's models are loaded after the handshake
(``tools/list`` is answered from schemas.json), or by the first tool call if it comes sooner."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from lorestore.auth.actor import local_agent
from lorestore.config import load_settings

if TYPE_CHECKING:
    from lorestore.auth.actor import Actor
    from lorestore.cli.backend import Backend
    from lorestore.config import Settings
    from lorestore.models import Params, Result
    from lorestore.operations import Operation
    from lorestore.storage.protocol import Store
    from lorestore.transports.mcp.server import Invoker


class OpenedOnce:
    """The backend the tools run on, with git's context filled in from ``cwd``: a server's
    client, or the service on the local store. The local store is opened here, so that one
    it cannot use (a file it cannot read, a role that bypasses row-level security) is refused
    before the host is answered; the backend is made once, by whoever needs it first (the
    first tool call, or the warm-up after the handshake)."""

    def __init__(self, settings: Settings, actor: Actor, cwd: Callable[[], str]) -> None:
        from lorestore.composition import open_store

        self._settings, self._actor, self._cwd = settings, actor, cwd
        self._store: Store | None = None if settings.remote else open_store(settings)
        self._lock = threading.Lock()
        self._backend: Backend | None = None
        self._invoke: Invoker | None = None

    def opened(self) -> Invoker:
        with self._lock:
            if self._invoke is None:
                self._backend = self._make()
                from lorestore.cli.backend import with_git_context

                self._invoke = with_git_context(self._backend.invoke, self._cwd)
            return self._invoke

    def _make(self) -> Backend:
        if self._store is None:
            from lorestore.cli.backend import open_backend

            return open_backend(self._settings, self._actor)
        from lorestore.cli.backend import LocalBackend
        from lorestore.composition import build_service

        service = build_service(self._settings, local_files=True, store=self._store)
        return LocalBackend(service, self._actor)

    def invoke(self, op: Operation, params: Params) -> Result:
        return self.opened()(op, params)

    def warm(self) -> None:
        """Make it ahead of the first call; a failure is the first call's to report."""
        from lorestore.core.errors import LorestoreError

        with contextlib.suppress(LorestoreError):
            self.opened()

    def close(self) -> None:
        with self._lock:
            if self._backend is not None:
                self._backend.close()  # the local store with it
            elif self._store is not None:
                self._store.close()


def serve_mcp(*, announce: bool, allow_person_token: bool) -> None:
    """Serve until the host closes stdin; a setting or store that cannot be used, or in remote
    mode a server that refuses the token, raises LorestoreError before the host is answered.
    Your own `lorestore login` credential is never used here."""
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
    tree = WorkTree(os.getcwd())
    backend = OpenedOnce(settings, agent, tree.path)
    try:
        permissions = agent.permissions
        if settings.remote:  # the token's rights, not the local agent's, decide there
            permissions = bridged_permissions(
                backend.opened(), allow_person_token=allow_person_token
            )
        serve_stdio(backend.invoke, permissions, tree, warm=backend.warm)
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
