"""The LoreKit mount as one ASGI application (REST routes, the MCP endpoint, authentication)
and the lifespan its MCP endpoint serves within; ``transports/http/app.py`` mounts it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Route

from lorestore.service import LessonService
from lorestore.transports.lorekit.adapters import LoreKitOperations
from lorestore.transports.lorekit.auth import LoreKitAuth
from lorestore.transports.lorekit.mcp import mcp_endpoint
from lorestore.transports.lorekit.rest import rest_routes, route_refused


class LoreKitMount:
    def __init__(self, service: LessonService, *, max_request_bytes: int) -> None:
        ops = LoreKitOperations(service)
        self._mcp = mcp_endpoint(ops, max_request_bytes=max_request_bytes)
        self.app = Starlette(
            routes=[*rest_routes(ops), Route("/mcp", self._mcp)],
            middleware=[Middleware(LoreKitAuth, service=service)],
            exception_handlers={404: route_refused, 405: route_refused},
        )

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        async with self._mcp.lifespan():
            yield
