"""The HTTP server (REST routes and OpenAPI from the catalog, the MCP endpoint, health) and the
client that remote mode uses to reach it."""

API_PREFIX = "/api/v1"
OPENAPI_PATH = f"{API_PREFIX}/openapi.json"
# Optional request headers: the agent session a write counts toward (recurrence) and the agent
# name recorded as source.agent. Neither grants anything: the same can be passed as arguments.
SESSION_HEADER = "Lorestore-Session"
AGENT_HEADER = "Lorestore-Agent"
