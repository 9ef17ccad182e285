"""The review dashboard of ``lorestore serve`` (docs/dashboard.md): server-rendered pages at
``/`` where a person signs in with a token and reads, reviews and administers through the same
service operations as MCP, REST and the CLI."""

# The first path segments the dashboard answers; every other path (/api/v1, /mcp, /healthz,
# OAuth discovery) keeps the bearer authentication of transports/http/auth.py.
DASHBOARD_ROOTS = frozenset(
    {"", "signin", "signout", "overview", "lessons", "lesson", "review", "recall", "audit"}
    | {"admin", "static", "favicon.ico"}
)


def is_dashboard_path(path: str) -> bool:
    """Whether ``path`` is one of the dashboard's (which authenticates by session cookie)."""
    return path.split("/", 2)[1] in DASHBOARD_ROOTS if path.startswith("/") else False
