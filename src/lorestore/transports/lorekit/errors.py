"""lorestore's errors in LoreKit's forms: a REST body ``{error, code, ...}`` with LoreKit's
status and ``Retry-After`` on a 429, and a JSON-RPC error with LoreKit's code for its MCP tools.
The status comes from lorestore's own table; only the codes LoreKit's clients act on are
renamed (``unauthorized``, ``memory_cap``, ``internal_error``)."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from mcp.shared.exceptions import MCPError
from starlette.responses import JSONResponse

from lorestore.core.errors import LorestoreError
from lorestore.transports.http.errors import ERROR_KEY, status_of

# LoreKit's code for lorestore's, where its clients read one; the rest keep lorestore's code.
_CODES = {
    "unauthenticated": "unauthorized",
    "cap_exceeded": "memory_cap",  # terminal: `lorekit migrate` does not retry it
    "internal": "internal_error",
}
# A cap is a 429 for LoreKit's clients (a plan limit), where lorestore answers 409.
_STATUS = {"cap_exceeded": 429}
# The JSON-RPC codes of LoreKit's hosted MCP endpoint; anything else a tool refuses is -32603.
RPC_CODES = {
    "unauthenticated": -32001,
    "forbidden": -32003,
    "rate_limited": -32029,
    "cap_exceeded": -32040,
}
RPC_TOOL_FAILED = -32603


def _message(error: LorestoreError) -> str:
    """The message with its fix: LoreKit's CLI shows only ``error``."""
    return f"{error.message} ({error.hint})" if error.hint else error.message


def error_body(error: LorestoreError) -> dict[str, Any]:
    body: dict[str, Any] = {"error": _message(error), "code": _CODES.get(error.code, error.code)}
    if error.hint:
        body["hint"] = error.hint
    if error.details:
        body["details"] = error.details
    retry_after = error.details.get("retry_after")
    if error.code == "rate_limited" and isinstance(retry_after, int | float):
        body["retryAfterSeconds"] = max(1, round(retry_after))
    return body


def error_response(
    error: LorestoreError, scope: MutableMapping[str, Any] | None = None
) -> JSONResponse:
    """The REST refusal; records lorestore's code in ``scope`` for the request log."""
    if scope is not None:
        scope[ERROR_KEY] = error.code
    body = error_body(error)
    headers = {}
    if "retryAfterSeconds" in body:
        headers["Retry-After"] = str(body["retryAfterSeconds"])
    if error.code == "unauthenticated":
        headers["WWW-Authenticate"] = 'Bearer realm="lorestore"'
    status = _STATUS.get(error.code) or status_of(error)
    return JSONResponse(body, status_code=status, headers=headers)


def rpc_error(error: LorestoreError) -> MCPError:
    """A tool's refusal as the JSON-RPC error LoreKit's MCP endpoint sends."""
    return MCPError(RPC_CODES.get(error.code, RPC_TOOL_FAILED), _message(error), error_body(error))
