"""How an error travels over HTTP: the status each stable code answers with, and the
``{"error": {code, message, hint}}`` body of DESIGN §11."""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from typing import Any

from starlette.responses import Response

from lorestore.core.errors import BAD_INPUT_CODES, LorestoreError

ERROR_KEY = "lorestore.error"  # the scope key where the request log finds the error code
_STATUS = {
    "value_too_large": 413,
    "not_found": 404,
    "version_conflict": 409,
    "conflict": 409,
    "archived": 409,
    "expired": 409,
    "rejected_value": 409,
    "cap_exceeded": 409,
    "forbidden": 403,
    "unauthenticated": 401,
    "rate_limited": 429,
    "busy": 503,
}
ERROR_STATUSES = (400, 401, 403, 404, 409, 413, 429, 503)


def status_of(error: LorestoreError) -> int:
    """400 for the other bad-input codes; 500 for what the caller cannot fix."""
    if error.code in _STATUS:
        return _STATUS[error.code]
    return 400 if error.code in BAD_INPUT_CODES else 500


def error_body(error: LorestoreError) -> bytes:
    return json.dumps({"error": error.to_dict()}, ensure_ascii=False).encode("utf-8")


def error_response(
    error: LorestoreError,
    scope: MutableMapping[str, Any] | None = None,
    *,
    status: int | None = None,
) -> Response:
    """The JSON error response; records the code in ``scope`` for the request log."""
    if scope is not None:
        scope[ERROR_KEY] = error.code
    headers = {}
    if error.code == "unauthenticated":
        headers["WWW-Authenticate"] = 'Bearer realm="lorestore"'
    retry_after = error.details.get("retry_after")
    if error.code == "rate_limited" and isinstance(retry_after, int | float):
        headers["Retry-After"] = str(max(1, round(retry_after)))
    return Response(
        error_body(error),
        status_code=status or status_of(error),
        media_type="application/json",
        headers=headers,
    )
