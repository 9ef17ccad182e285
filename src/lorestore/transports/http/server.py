"""``lorestore serve``: runs the HTTP application under uvicorn on one store.

Shutdown is graceful: on SIGTERM or Ctrl-C the server stops accepting connections, lets the
requests in flight finish (up to ``SHUTDOWN_GRACE_SECONDS``), stops the maintenance schedule
and closes the store, then exits 0.
"""

from __future__ import annotations

import json
import signal
import socket
import sys
from types import FrameType
from typing import TYPE_CHECKING, Any

from lorestore.auth.actor import local_actor
from lorestore.config import Settings
from lorestore.core.errors import LorestoreError
from lorestore.core.timestamps import format_ts
from lorestore.models import NoParams, TokenCreateParams
from lorestore.service import LessonService
from lorestore.transports.http import API_PREFIX, NO_DELAY, OPENAPI_PATH

if TYPE_CHECKING:
    from lorestore.transports.http.logs import LogFormat

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
SHUTDOWN_GRACE_SECONDS = 30
FIRST_ADMIN_NAME = "admin (first start)"


def bootstrap_token(service: LessonService, principal: str) -> str | None:
    """An admin token for the store's person when they have none live (first start)."""
    person = local_actor(principal=principal)
    now = format_ts(service.clock())
    live = [
        t
        for t in service.token_list(person, NoParams()).tokens
        if t.revoked_at is None and (t.expires_at is None or t.expires_at > now)
    ]
    if live:
        return None
    params = TokenCreateParams.model_validate({"name": FIRST_ADMIN_NAME, "permission": "admin"})
    created = service.token_create(person, params)
    return created.token


def announce(url: str, token: str | None, workers: int = 1) -> None:
    """For the person who started the server; stdout, apart from the JSON logs on stderr."""
    lines = [
        f"lorestore serving {url}" + (f" from {workers} worker processes" if workers > 1 else ""),
        f"  MCP (streamable HTTP): {url}/mcp",
        f"  REST: {url}{API_PREFIX}/<operation>   OpenAPI: {url}{OPENAPI_PATH}",
        f"  Dashboard: {url}/ (sign in with a review or admin token)",
    ]
    if token:
        lines += [
            "",
            "Admin token, shown this once (only its hash is stored); it is yours, not an agent's:",
            f"  {token}",
            # Never `export LORESTORE_TOKEN=`: hosts hand the shell's environment to the
            # stdio servers they start, and every agent would act as this admin.
            f"Keep it for the CLI (asked for, not echoed):  lorestore login {url}",
        ]
    # An agent gets a write token of its own: it can read, write and dispute, never verify,
    # reject or delete (an admin token would let it).
    # Registered for the user (Claude Code's default scope is the folder the command is
    # typed in); Cursor and Codex read the agent's token from the variable when they start.
    cursor = {"url": f"{url}/mcp", "headers": {"Authorization": "Bearer ${env:LORESTORE_TOKEN}"}}
    lines += [
        "",
        "Connect an agent with a write token of its own:",
        "  lorestore token create --name NAME --permission write      # prints lst_...",
        f"  Claude Code:  claude mcp add --scope user --transport http lorestore {url}/mcp "
        '--header "Authorization: Bearer lst_..."',
        "  Cursor:       ~/.cursor/mcp.json -> "
        + json.dumps({"mcpServers": {"lorestore": cursor}}),
        f'  Codex:        ~/.codex/config.toml -> [mcp_servers.lorestore] url = "{url}/mcp" '
        'bearer_token_env_var = "LORESTORE_TOKEN"',
        "  (Cursor and Codex: export LORESTORE_TOKEN=<the agent's write token> before starting "
        "them)",
    ]
    print("\n".join(lines), flush=True)


def _exit_cleanly(signum: int, frame: FrameType | None) -> None:
    # uvicorn re-raises the signal it shut down for once it is done; end with status 0 instead
    # of dying of it, so the store is closed below.
    raise SystemExit(0)


def serve(
    settings: Settings,
    *,
    host: str,
    port: int,
    admin_token: bool,
    log_format: str = "auto",
    workers: int = 1,
) -> None:
    """Serve until stopped. ``log_format`` ``auto`` writes readable log lines when stderr is a
    terminal (a person, who must not lose the banner's token among JSON) and JSON otherwise.
    ``workers`` above 1 serves from that many processes (transports/http/workers.py)."""
    import uvicorn

    from lorestore.composition import build_service
    from lorestore.transports import settle_heap
    from lorestore.transports.http.app import build_app
    from lorestore.transports.http.logs import log_config
    from lorestore.transports.http.scheduler import Schedule

    chosen_format = _log_format(log_format)  # before anything opens: bad input changes nothing
    # Listen first: a port that is taken ends here, before the application starts (and with
    # it the maintenance sweep, which would otherwise change the store of a server that never
    # served).
    if workers > 1:
        from lorestore.transports.http.workers import listeners

        sockets = listeners(host, port, workers)
    else:
        sockets = [bind(host, port)]
    port = sockets[0].getsockname()[1]
    origin = _origin(host, port)
    service = build_service(settings)

    # Maintenance runs here, once: in the one process, or the supervisor of the workers. It
    # starts once the server serves (its logging configured by then).
    schedule = Schedule.of(service, settings)

    def ready() -> None:
        token = bootstrap_token(service, settings.principal) if admin_token else None
        announce(origin, token, workers)
        if schedule is not None:
            schedule.start()

    config: dict[str, Any] = {
        "host": host,
        "port": port,
        "log_config": log_config(log_format=chosen_format),
        "access_log": False,
        "server_header": False,
        "timeout_graceful_shutdown": SHUTDOWN_GRACE_SECONDS,
        "lifespan": "on",
    }

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.started:  # listening: only now is the URL true and a token worth minting
                ready()
                settle_heap()  # everything start-up keeps is loaded by now

    previous = signal.signal(signal.SIGTERM, _exit_cleanly)
    try:
        if workers > 1:
            from lorestore.transports.http.workers import serve_workers

            serve_workers(
                settings,
                sockets=sockets,
                origin=origin,
                config=config,
                ready=ready,
            )
        else:
            app = build_app(service, settings, origin=origin)
            Server(uvicorn.Config(app, **config)).run(sockets=sockets)
    except KeyboardInterrupt:
        pass
    finally:
        if schedule is not None:
            schedule.stop()
        signal.signal(signal.SIGTERM, previous)
        for sock in sockets:
            sock.close()
        service.store.close()
        sys.stdout.flush()


def _origin(host: str, port: int) -> str:
    """The address served, as the dashboard's origin (LORESTORE_DASHBOARD_ORIGIN overrides)."""
    return f"http://{f'[{host}]' if ':' in host else host}:{port}"


def _log_format(chosen: str) -> LogFormat:
    if chosen == "auto":
        return "text" if sys.stderr.isatty() else "json"
    if chosen not in ("json", "text"):
        raise LorestoreError(
            "invalid_argument",
            f"--log-format {chosen!r} is not auto, json or text",
            hint="auto: readable at a terminal, JSON when piped",
        )
    return "json" if chosen == "json" else "text"


def bind(host: str, port: int, *, reuse_port: bool = False) -> socket.socket:
    """A listening socket on ``host:port``; ``config_error`` with the fix when it cannot be.
    ``reuse_port``: one of a group of sockets on the port (transports/http/workers.py)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        listener = socket.create_server(
            (host, port), family=family, backlog=2048, reuse_port=reuse_port
        )
        # Each accepted connection inherits the option (Linux, BSD, macOS): see NO_DELAY.
        listener.setsockopt(*NO_DELAY)
        return listener
    except (OSError, OverflowError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise LorestoreError(
            "config_error",
            f"cannot listen on {host}:{port}: {reason}",
            hint="choose another --port (something else listens there), or a --host this "
            "machine has",
            details={"host": host, "port": port},
        ) from exc
