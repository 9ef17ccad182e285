"""The REST client of remote mode: runs an operation on a lorestore server and returns the same
result model a local call would, or raises the server's error with the same code, so output and
exit status match local use."""

from __future__ import annotations

from typing import Any

import httpx2
from pydantic import ValidationError

from lorestore import __version__
from lorestore.core.errors import KNOWN_CODES, LorestoreError
from lorestore.models import Params, Result
from lorestore.operations import Operation
from lorestore.transports.http import API_PREFIX, caller_headers

TIMEOUT_SECONDS = 60.0


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
        """POST the operation's arguments as set by the caller; the server applies defaults."""
        try:
            response = self._http.post(
                f"{API_PREFIX}/{op.name}", content=params.model_dump_json(exclude_unset=True)
            )
        except httpx2.TransportError as exc:
            raise LorestoreError(
                "config_error",
                f"cannot reach the lorestore server at {self.url}: {exc}",
                hint="start it with `lorestore serve`, check LORESTORE_URL, "
                "or unset LORESTORE_URL to use the local store",
            ) from None
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

    def close(self) -> None:
        self._http.close()


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
