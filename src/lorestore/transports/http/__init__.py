"""The HTTP server (REST routes and OpenAPI from the catalog, the MCP endpoint, health) and the
client that remote mode uses to reach it."""

API_PREFIX = "/api/v1"
OPENAPI_PATH = f"{API_PREFIX}/openapi.json"
# Optional request headers: the agent session a write counts toward (recurrence) and the agent
# name recorded as source.agent. Neither grants anything: the same can be passed as arguments.
SESSION_HEADER = "Lorestore-Session"
AGENT_HEADER = "Lorestore-Agent"


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
