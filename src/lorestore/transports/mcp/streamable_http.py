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

from mcp.server import Server, ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from lorestore.auth.actor import Actor
from lorestore.core.errors import LorestoreError
from lorestore.service import LessonService
from lorestore.transports.mcp.server import build_server, local_invoker

ActorOf = Callable[[Mapping[str, Any]], Actor]


class SessionEndpoint:
    """The ASGI app serving one MCP ``Server`` over stateless, JSON-answering streamable HTTP.
    It serves while ``lifespan()`` runs, which starts a fresh SDK session manager each time (a
    manager runs only once; an app may start again)."""

    def __init__(self, server: Server[Any], *, max_request_bytes: int) -> None:
        self._server = server
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


def request_actor(ctx: ServerRequestContext[Any], actor_of: ActorOf) -> Actor:
    """The actor of the HTTP request an MCP call came in (authenticated before the SDK)."""
    request = ctx.request
    if not isinstance(request, Request):
        raise LorestoreError("unauthenticated", "this MCP call came without an HTTP request")
    return actor_of(request.scope)


class StreamableHTTPEndpoint(SessionEndpoint):
    """lorestore's own tools at ``/mcp``."""

    def __init__(self, service: LessonService, actor_of: ActorOf, *, max_request_bytes: int):
        server = build_server(
            lambda ctx: local_invoker(service, request_actor(ctx, actor_of)),
            lambda ctx: request_actor(ctx, actor_of).permissions,
        )
        super().__init__(server, max_request_bytes=max_request_bytes)
