"""The request size limit: a body larger than ``LORESTORE_MAX_REQUEST_BYTES`` is answered with
413 and the error body before any route or the MCP endpoint sees it. Routes that read their
body as a stream (``memory_import``) are passed through: they bound each line instead."""

from __future__ import annotations

from collections import deque

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lorestore.core.errors import LorestoreError
from lorestore.transports.http.errors import error_response


def _too_large(limit: int) -> LorestoreError:
    return LorestoreError(
        "value_too_large",
        f"the request body is larger than {limit} bytes",
        hint="send less at once; the server's limit is LORESTORE_MAX_REQUEST_BYTES",
        details={"max_bytes": limit},
    )


class BodyLimit:
    """Reads the body up to the limit (refusing a declared length over it at once), then replays
    it to the app, so no handler ever holds more than the limit."""

    def __init__(
        self, app: ASGIApp, max_bytes: int, streamed: frozenset[str] = frozenset()
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.streamed = streamed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.streamed:
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await error_response(_too_large(self.max_bytes), scope)(scope, receive, send)
            return
        body = bytearray()
        pending: deque[Message] = deque()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                pending.append(message)  # a disconnect: let the app see it
                break
            body.extend(message.get("body", b""))
            if len(body) > self.max_bytes:
                await error_response(_too_large(self.max_bytes), scope)(scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        pending.appendleft({"type": "http.request", "body": bytes(body), "more_body": False})

        async def replay() -> Message:
            return pending.popleft() if pending else await receive()

        await self.app(scope, replay, send)
