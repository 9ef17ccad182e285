"""The REST client of remote mode: runs an operation on a lorestore server and returns the same
result model a local call would, or raises the server's error with the same code, so output and
exit status match local use."""

from __future__ import annotations

import time
from typing import Any

import httpx2
from pydantic import ValidationError

from lorestore import __version__
from lorestore.core.errors import KNOWN_CODES, LorestoreError
from lorestore.models import Params, Result
from lorestore.operations import Operation
from lorestore.transports.http import API_PREFIX, caller_headers

TIMEOUT_SECONDS = 60.0
# A request refused with 429 is sent again after the server's Retry-After, a few times, while
# the waits add up to no more than this: longer, and a command or tool call would seem hung,
# so the rate_limited error (with retry_after) is reported instead.
RETRY_WAIT_SECONDS = 15.0
RETRIES = 3


class RemoteClient:
    """One keep-alive HTTP client for the life of a command or an MCP stdio session."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        session: str | None = None,
        agent: str | None = None,
        timeout: float = TIMEOUT_SECONDS,
    ) -> None:
        self.url = url
        headers = {
            "Authorization": f"Bearer {token}",
            "User-Agent": f"lorestore/{__version__}",
            "Content-Type": "application/json",
        }
        self._http = httpx2.Client(
            base_url=url, headers=caller_headers(headers, session, agent), timeout=timeout
        )

    def invoke(self, op: Operation, params: Params) -> Result:
        """POST the operation's arguments as set by the caller; the server applies defaults.
        A 429 is retried after its Retry-After (see RETRY_WAIT_SECONDS)."""
        body = params.model_dump_json(exclude_unset=True)
        waited = 0.0
        for attempt in range(RETRIES + 1):
            # A 429 is answered before the operation runs: sending it again is safe.
            response = self._post(op, body)
            wait = _retry_after(response)
            if wait is None or attempt == RETRIES or waited + wait > RETRY_WAIT_SECONDS:
                break
            time.sleep(wait)
            waited += wait
        if response.status_code != 200:
            raise error_from(response)
        try:
            return op.result.model_validate_json(response.content)
        except ValidationError:
            raise LorestoreError(
                "internal",
                f"the server's answer to {op.name} does not match this client's schema",
                hint="run the same lorestore version on the server and here",
            ) from None

    def _post(self, op: Operation, body: str) -> httpx2.Response:
        try:
            return self._http.post(f"{API_PREFIX}/{op.name}", content=body)
        except httpx2.TransportError as exc:
            raise LorestoreError(
                "config_error",
                f"cannot reach the lorestore server at {self.url}: {exc}",
                hint="start it with `lorestore serve`, check LORESTORE_URL, "
                "or unset LORESTORE_URL to use the local store",
            ) from None

    def close(self) -> None:
        self._http.close()


def _retry_after(response: httpx2.Response) -> float | None:
    """The seconds a 429 asks to wait (Retry-After in seconds), None for any other answer."""
    if response.status_code != 429:
        return None
    try:
        return max(0.0, float(response.headers.get("retry-after", "")))
    except ValueError:
        return None


def error_from(response: httpx2.Response) -> LorestoreError:
    """The server's LorestoreError, from its ``{"error": {...}}`` body."""
    try:
        body: Any = response.json()["error"]
        code, message = str(body["code"]), str(body["message"])
        hint = body.get("hint")
        details = body.get("details")
    except (ValueError, KeyError, TypeError):
        return LorestoreError(
            "internal",
            f"the server answered HTTP {response.status_code} without a lorestore error",
            hint="is LORESTORE_URL the address of a lorestore server?",
        )
    if code not in KNOWN_CODES:  # a newer server: keep its code readable
        code, message = "internal", f"{code}: {message}"
    return LorestoreError(
        code,
        message,
        hint=hint if isinstance(hint, str) else None,
        details=details if isinstance(details, dict) else None,
    )
