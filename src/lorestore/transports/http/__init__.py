"""The HTTP server (REST routes and OpenAPI from the catalog, the MCP endpoint, health) and the
client that remote mode uses to reach it."""

import socket

API_PREFIX = "/api/v1"
OPENAPI_PATH = f"{API_PREFIX}/openapi.json"
# Optional request headers: the agent session a write counts toward (recurrence) and the agent
# name recorded as source.agent. Neither grants anything: the same can be passed as arguments.
SESSION_HEADER = "Lorestore-Session"
AGENT_HEADER = "Lorestore-Agent"
# TCP_NODELAY, on the server's sockets: a response goes out in more than one write (headers,
# then body), and with Nagle's algorithm on, the second write waits for the client to
# acknowledge the first, which the client delays by up to 40 ms: every request on a reused
# connection took ~45 ms instead of ~2. asyncio sets the option only on sockets created with
# IPPROTO_TCP as their protocol, which ``socket.create_server`` does not pass. (The clients'
# sockets have it already: httpcore sets it on every connection it opens.)
NO_DELAY = (socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def caller_headers(
    base: dict[str, str], session: str | None, agent: str | None
) -> list[tuple[bytes, bytes]]:
    """``base`` and the session and agent headers a client sends, as UTF-8 bytes (the server
    reads them so; an HTTP library would refuse non-ASCII text); a value no header line can
    carry is a configuration error, named."""
    from lorestore.core.errors import LorestoreError  # the package's constants import nothing
    from lorestore.core.validation import has_control

    headers = [(name.encode(), value.encode()) for name, value in base.items()]
    for name, setting, value in (
        (SESSION_HEADER, "LORESTORE_SESSION", session),
        (AGENT_HEADER, "LORESTORE_AGENT", agent),
    ):
        if not value:
            continue
        if has_control(value):
            raise LorestoreError(
                "config_error",
                f"{setting} holds a control character, which no {name} header can carry",
                hint=f"set {setting} to a plain name",
            )
        headers.append((name.encode(), value.encode("utf-8")))
    return headers
