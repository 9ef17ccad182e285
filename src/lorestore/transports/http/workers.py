"""``lorestore serve --workers N``: the application in N worker processes on one port, for a
server whose requests need more than the one core a Python process computes on (the
interpreter's lock keeps a process's threads to one at a time).

The supervising process listens (``listeners``: on Linux a socket per worker, which the kernel
balances), starts the workers (uvicorn's worker processes; one that dies or stops answering
is replaced) and does once what must be done once: the first start's admin token and the
banner, the maintenance schedule. Each worker opens the store for itself (its own
connection pool on PostgreSQL) and serves every path. What a worker would otherwise keep in
its memory between requests is kept where they all reach it:

- the per-token request budget is taken from the store in leases already
  (``service/budget.py``), so N workers keep one limit;
- the dashboard's sign-in sessions and chain verifications (``web/sessions.py``,
  ``web/chains.py``) live in one small process of the server's, reached by every worker
  through ``multiprocessing`` proxies on a socket only this server's processes hold the key
  to; a session signed in through one worker is known to all, and, as with one process, a
  restart ends them;
- MCP over HTTP is stateless (``transports/mcp/streamable_http.py``).
"""

from __future__ import annotations

import logging
import multiprocessing
import signal
import socket
import sys
import threading
from collections.abc import Callable
from functools import partial
from multiprocessing.managers import BaseManager
from typing import TYPE_CHECKING, Any

from lorestore.config import Settings
from lorestore.core.errors import LorestoreError
from lorestore.web.chains import ChainLedger
from lorestore.web.sessions import SessionStore

if TYPE_CHECKING:
    import uvicorn
    from starlette.applications import Starlette

    from lorestore.web.app import DashboardState

# A worker has this long to open its store and start listening before the server gives up.
READY_SECONDS = 60
# Whether the kernel spreads connections over sockets bound with SO_REUSEPORT (Linux 3.9+).
BALANCED = sys.platform == "linux" and hasattr(socket, "SO_REUSEPORT")
LOG = logging.getLogger("lorestore.serve")


class _SharedState(BaseManager):
    """The process that keeps the dashboard's state for every worker."""


_SharedState.register("SessionStore", SessionStore)
_SharedState.register("ChainLedger", ChainLedger)


def _ignore_interrupts() -> None:
    # Ctrl-C reaches every process of the terminal's group: the workers finish their requests
    # (which may read a session) before the supervisor stops this process.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def worker_app(settings: Settings, origin: str, dashboard: DashboardState) -> Starlette:
    """The application of one worker (uvicorn's factory, called in the worker): its own store,
    the shared dashboard state (the supervisor runs the maintenance, once)."""
    from lorestore.composition import build_service
    from lorestore.transports.http.app import build_app

    service = build_service(settings)
    return build_app(service, settings, origin=origin, dashboard_state=dashboard, worker=True)


def listeners(host: str, port: int, workers: int) -> list[socket.socket]:
    """A listening socket for each worker on ``host:port``, given the port free (a
    ``config_error`` otherwise): on Linux each its own, bound with ``SO_REUSEPORT``, for the
    kernel spreads new connections evenly over such sockets, where workers accepting from one
    shared socket take them as they wake (one worker was seen holding all 16 clients); one
    socket shared by all elsewhere."""
    from lorestore.transports.http.server import bind

    # Bound alone first: a port something listens on (even another group of this user's
    # SO_REUSEPORT sockets, which would otherwise be joined) is refused, and 0 picks a port.
    first = bind(host, port)
    if not BALANCED:
        return [first] * workers
    port = first.getsockname()[1]
    first.close()
    group: list[socket.socket] = []
    try:
        for _ in range(workers):
            group.append(bind(host, port, reuse_port=True))
    except LorestoreError:
        for sock in group:
            sock.close()
        raise
    return group


def serve_workers(
    settings: Settings,
    *,
    sockets: list[socket.socket],
    origin: str,
    config: dict[str, Any],
    ready: Callable[[], None],
) -> None:
    """Serve a worker process on each of ``sockets`` (from ``listeners``: the same socket for
    all where the kernel does not balance) until SIGTERM or Ctrl-C. ``config`` is uvicorn's
    settings, and ``ready`` is called once every worker serves."""
    import uvicorn

    from lorestore.web.app import DashboardState

    shared = _SharedState(ctx=multiprocessing.get_context("spawn"))
    shared.start(_ignore_interrupts)
    try:
        dashboard = DashboardState.of(settings, shared.SessionStore, shared.ChainLedger)  # type: ignore[attr-defined]
        app = partial(worker_app, settings, origin, dashboard)
        supervisor = _Supervisor(uvicorn.Config(app, factory=True, **config), sockets)
        failure = supervisor.run(ready)
    finally:
        shared.shutdown()
    if failure is not None:
        raise LorestoreError(
            "internal",
            failure,
            hint="the log above says why; `lorestore serve` without --workers runs in one process",
        )


class _Supervisor:
    """Starts a worker per socket (uvicorn's worker process: a spawned interpreter whose
    server answers the supervisor's health pings), replaces one that dies or stops answering,
    and stops them all on SIGTERM or SIGINT, each finishing its requests first."""

    def __init__(self, config: uvicorn.Config, sockets: list[socket.socket]) -> None:
        self.config = config
        self.sockets = sockets
        self.stopping = threading.Event()

    def run(self, ready: Callable[[], None]) -> str | None:
        """Serve until stopped; why not, when a worker could not start."""
        from uvicorn.config import STARTUP_FAILURE
        from uvicorn.supervisors.multiprocess import Process

        def spawn(sock: socket.socket) -> Process:
            process = Process(self.config, [sock])
            process.start()
            return process

        previous = {
            sig: signal.signal(sig, lambda *_: self.stopping.set())
            for sig in (signal.SIGINT, signal.SIGTERM)
        }
        processes = [spawn(sock) for sock in self.sockets]
        try:
            if not all(p.wait_until_ready(READY_SECONDS, self.stopping) for p in processes):
                if self.stopping.is_set():  # stopped while starting is no failure
                    return None
                return f"the {len(processes)} worker processes did not all start"
            ready()
            while not self.stopping.wait(0.5):
                for i, process in enumerate(processes):
                    if process.is_alive(timeout=self.config.timeout_worker_healthcheck):
                        continue
                    process.kill()  # dead, or hung: replaced
                    process.join()
                    if process.exitcode == STARTUP_FAILURE:  # a replacement that cannot start
                        return f"worker process {process.pid} could not start"
                    LOG.warning(
                        "worker process %s ended (exit code %s): replaced",
                        process.pid,
                        process.exitcode,
                    )
                    processes[i] = spawn(self.sockets[i])
            return None
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                process.join()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
