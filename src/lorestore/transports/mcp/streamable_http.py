"""The MCP server over streamable HTTP (``/mcp``): the same tools as stdio, with the actor of
each call taken from its HTTP request, which the server authenticated before the SDK sees it.

Stateless and answering JSON: every POST stands alone, so no session state lives in the server,
no stream outlives its request (shutdown waits only for calls in flight), and each call is
authorised by the token it carries. Protocol versions with a handshake and the single-exchange
2026-07-28 version are both served by the SDK's session manager.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

from mcp.server import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from lorestore.auth.actor import Actor
from lorestore.core.errors import LorestoreError
from lorestore.service import LessonService
from lorestore.transports.mcp.server import build_server, local_invoker

ActorOf = Callable[[Mapping[str, Any]], Actor]


class StreamableHTTPEndpoint:
    """The ASGI app to route ``/mcp`` to. It serves while ``lifespan()`` runs, which starts a
    fresh SDK session manager each time (a manager runs only once; an app may start again)."""

    def __init__(self, service: LessonService, actor_of: ActorOf, *, max_request_bytes: int):
        def caller(ctx: ServerRequestContext[Any]) -> Actor:
            request = ctx.request
            if not isinstance(request, Request):
                raise LorestoreError(
                    "unauthenticated", "this MCP call came without an HTTP request"
                )
            return actor_of(request.scope)

        self._server = build_server(
            lambda ctx: local_invoker(service, caller(ctx)),
            lambda ctx: caller(ctx).permissions,
        )
        self._max_request_bytes = max_request_bytes
        self._manager: StreamableHTTPSessionManager | None = None

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        manager = StreamableHTTPSessionManager(
            app=self._server,
            stateless=True,
            json_response=True,
            max_request_body_size=self._max_request_bytes,
        )
        async with manager.run():
            self._manager = manager
            try:
                yield
            finally:
                self._manager = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._manager is None:
            raise RuntimeError("the MCP endpoint serves only while its lifespan runs")
        await self._manager.handle_request(scope, receive, send)
