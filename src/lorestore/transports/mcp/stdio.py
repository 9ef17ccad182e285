"""``lorestore mcp``: the MCP server over stdio (one per agent), on the embedded store or, in
remote mode, on a server's REST API for hosts that only speak stdio."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shlex
import shutil
import signal
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from types import FrameType
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from lorestore.auth.actor import Permission
from lorestore.config import Settings, store_variables
from lorestore.transports.mcp.server import Invoker

# When the stdio server settles its heap (transports.settle_heap), after start.
SETTLE_AFTER_SECONDS = 2.0


def announce(settings: Settings) -> None:
    """Tell a person at a terminal how to connect a host; stdout stays the protocol channel."""
    exe = shutil.which("lorestore") or f"{sys.prefix}/bin/lorestore"
    postgres = settings.database_url.startswith(("postgresql://", "postgres://"))
    if settings.remote:
        where = f"remote server {settings.url}"
    elif postgres:
        where = f"PostgreSQL database {_without_password(settings.database_url)}"
    else:
        where = f"embedded store at {settings.sqlite_path}"
    # The settings that chose this store travel with the command, or the host's server would
    # open another (~/.lorestore): paths made absolute (a host starts elsewhere), a password
    # or token named, never printed.
    given = store_variables()
    env: dict[str, str] = {}
    if "LORESTORE_HOME" in given:
        env["LORESTORE_HOME"] = str(settings.home.expanduser().resolve())
    if "LORESTORE_DATABASE_URL" in given:
        env["LORESTORE_DATABASE_URL"] = (
            _without_password(settings.database_url)
            if postgres
            else f"sqlite:///{settings.sqlite_path.resolve()}"
        )
    if settings.remote:
        env["LORESTORE_URL"] = str(settings.url)
        env["LORESTORE_TOKEN"] = "<an agent's write token>"  # noqa: S105 - a placeholder
    flags = "".join(f" -e {shlex.quote(f'{k}={v}')}" for k, v in env.items())
    cursor: dict[str, Any] = {"command": exe, "args": ["mcp"], **({"env": env} if env else {})}
    print(
        f"lorestore MCP server on stdio, {where}\n"
        "Connect a host to this command rather than to this terminal:\n"
        f"  Claude Code:  claude mcp add --scope user lorestore{flags} -- {exe} mcp\n"
        f"  Codex:        codex mcp add lorestore{flags.replace(' -e ', ' --env ')} -- {exe} mcp\n"
        f"  Cursor:       .cursor/mcp.json -> "
        f"{json.dumps({'mcpServers': {'lorestore': cursor}})}\n"
        "Waiting for an MCP client on stdin; press Ctrl-D or Ctrl-C to stop.",
        file=sys.stderr,
        flush=True,
    )


def bridged_permissions(invoke: Invoker, *, allow_person_token: bool) -> frozenset[Permission]:
    """The permissions the server grants the bridge's token, asked of the server. A person's
    token (review or admin) is refused unless ``allow_person_token``: the agent could verify
    its own lessons, reject and delete. Hosts hand their shell's environment to the stdio
    servers they start, so a LORESTORE_TOKEN a person exported for themselves would
    otherwise reach every agent."""
    from lorestore.auth.tokens import implied_permissions
    from lorestore.core.errors import LorestoreError
    from lorestore.models import NoParams, TokenCurrentResult
    from lorestore.operations import BY_NAME

    current = invoke(BY_NAME["token_current"], NoParams())
    assert isinstance(current, TokenCurrentResult)
    if current.is_person and not allow_person_token:
        raise LorestoreError(
            "forbidden",
            f"LORESTORE_TOKEN is a {current.permission} token (a person's credential), and "
            "an agent must not act with it: it could verify, reject and delete lessons",
            hint="give the agent a write token of its own: `lorestore token create --name "
            "AGENT --permission write`, set as LORESTORE_TOKEN in the host's command; keep "
            "your own token in `lorestore login`. To bridge with it anyway: `lorestore mcp "
            "--allow-person-token`",
            details={"permission": current.permission},
        )
    return implied_permissions(current.permission)


def _without_password(url: str) -> str:
    """A database URL as it may be shown: its password, if any, named and not printed."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":<password>@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def _without_lone_surrogates(value: Any) -> tuple[Any, bool]:
    """``value`` with every string that holds a lone UTF-16 surrogate holding a NUL there
    instead, and whether any did."""
    if isinstance(value, str):
        if any(0xD800 <= ord(c) <= 0xDFFF for c in value):
            return "".join("\x00" if 0xD800 <= ord(c) <= 0xDFFF else c for c in value), True
        return value, False
    if isinstance(value, list):
        items = [_without_lone_surrogates(v) for v in value]
        return [v for v, _ in items], any(changed for _, changed in items)
    if isinstance(value, dict):
        mended = [
            (_without_lone_surrogates(k), _without_lone_surrogates(v)) for k, v in value.items()
        ]
        changed = any(kc or vc for (_, kc), (_, vc) in mended)
        return {k: v for (k, _), (v, _) in mended}, changed
    return value, False


def mend_line(line: str) -> str:
    """A protocol line as the SDK can parse it. JSON may escape half of a surrogate pair (a
    host that cut a string in the middle of an emoji sends one); the SDK's parser refuses
    such a line and drops it without an answer, so the host would wait for ever. The string
    gets a NUL in its place instead, which the tool refuses like the surrogate itself, with
    the field's code (``invalid_key``, ``invalid_value``, ...). Other lines pass as they are."""
    if "\\u" not in line or "\\ud" not in line.lower():
        return line
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return line  # not JSON (or nested past any parser's depth): the SDK answers what it can
    mended, changed = _without_lone_surrogates(message)
    return json.dumps(mended) + "\n" if changed else line


class _MendedLines:
    """The host's lines, each through ``mend_line``."""

    def __init__(self, lines: Any) -> None:
        self._lines = lines

    def __aiter__(self) -> AsyncIterator[str]:
        return self._mended()

    async def _mended(self) -> AsyncIterator[str]:
        async for line in self._lines:
            yield mend_line(line)


@contextlib.contextmanager
def _host_input() -> Iterator[Any]:
    """The host's input, read from a private copy of fd 0 while fd 0 itself points at the
    null device (as the SDK's own stdio transport does), so that a child process such as
    git cannot read the protocol's bytes; fd 0 is put back at the end."""
    import anyio

    wire = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    # closefd=False: the SDK's reader thread may still block on it after the transport ends.
    text = io.TextIOWrapper(
        os.fdopen(wire, "rb", closefd=False), encoding="utf-8", errors="replace"
    )
    try:
        yield _MendedLines(anyio.wrap_file(text))
    finally:
        os.dup2(wire, 0)


class WorkTree:
    """The folder whose git checkout a call's context comes from: the server's working
    directory, or, when that is no checkout (a host that starts its servers in the home
    folder), the first of the client's roots that is one, asked once (``roots/list``)."""

    def __init__(self, cwd: str) -> None:
        self.cwd = cwd
        self._settled = False

    def path(self) -> str:
        return self.cwd

    async def from_roots(self, ctx: Any) -> None:
        if self._settled:
            return
        self._settled = True
        import warnings

        import anyio
        import mcp_types as types

        from lorestore.gitinfo import git_context

        if await anyio.to_thread.run_sync(git_context, self.cwd) is not None:
            return
        if not ctx.session.check_client_capability(
            types.ClientCapabilities(roots=types.RootsCapability())
        ):
            return
        try:
            with warnings.catch_warnings():  # deprecated by 2026-07-28; hosts still send them
                warnings.simplefilter("ignore")
                listed = await ctx.session.list_roots()
        except Exception:  # an error answer, no back channel (2026-07-28): the folder stays
            return
        for root in listed.roots:
            parts = urlsplit(str(root.uri))
            if parts.scheme != "file":
                continue
            folder = unquote(parts.path)
            if await anyio.to_thread.run_sync(git_context, folder) is not None:
                self.cwd = folder
                return


def serve_stdio(
    invoke: Invoker,
    permissions: frozenset[Permission],
    work_tree: WorkTree | None = None,
    *,
    warm: Callable[[], None] | None = None,
) -> None:
    """Serve the tools over stdin/stdout until the host closes them, listing those that
    ``permissions`` may call; ``work_tree`` is settled from the client's roots before the
    first call; ``warm`` (loading what the calls need) runs once the handshake is answered."""
    import anyio
    from mcp.server.stdio import stdio_server

    from lorestore.transports import settle_heap
    from lorestore.transports.mcp.server import build_server

    server = build_server(
        lambda ctx: invoke,
        lambda ctx: permissions,
        None if work_tree is None else work_tree.from_roots,
    )

    async def run() -> None:
        with _host_input() as lines:
            async with stdio_server(stdin=lines) as (read_stream, write_stream):
                options = server.create_initialization_options()
                await server.run(read_stream, write_stream, options)

    # Once the host's first requests (initialize, tools/list) are answered, what the calls
    # need is loaded (the service and the catalog's models, about 50 ms) and the heap settled
    # (about 50 ms): neither should hold up the handshake.
    def settle_after_warming() -> None:
        if warm is not None:
            warm()
        settle_heap()

    settle = threading.Timer(SETTLE_AFTER_SECONDS, settle_after_warming)
    settle.daemon = True
    settle.start()

    # Ctrl-C stops the server at once. The host's input is read in a worker thread that a
    # cancelled task would wait for until the host sends another line, so SIGINT ends the
    # process here: every write is its own committed transaction, and one cut short is
    # rolled back by SQLite (or never reached the server), so nothing half-written stays.
    previous = signal.signal(signal.SIGINT, _stop)
    try:
        with contextlib.suppress(KeyboardInterrupt):
            anyio.run(run)
    finally:
        settle.cancel()
        signal.signal(signal.SIGINT, previous)


def _stop(signum: int, frame: FrameType | None) -> None:
    sys.stdout.flush()
    os._exit(128 + signal.SIGINT)
