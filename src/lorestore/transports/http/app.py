"""The ASGI application of ``lorestore serve``: REST routes and OpenAPI from the catalog, the
MCP endpoint, health, LoreKit's protocol at ``/lorekit/functions/v1``; wrapped in the request
log, CORS (only when configured), the body limit and bearer authentication, outermost first.
The server assembles the transports here; none of them calls another."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route

from lorestore import __version__
from lorestore.config import Settings
from lorestore.core.errors import LorestoreError
from lorestore.ingest.models import WEBHOOK_PATH
from lorestore.service import LessonService
from lorestore.transports import settle_heap
from lorestore.transports.http import AGENT_HEADER, API_PREFIX, OPENAPI_PATH, SESSION_HEADER
from lorestore.transports.http.auth import BearerAuth, actor_of
from lorestore.transports.http.errors import error_response
from lorestore.transports.http.limits import BodyLimit
from lorestore.transports.http.logs import REQUEST_LOG, RequestLog
from lorestore.transports.http.openapi import openapi_document
from lorestore.transports.http.rest import rest_routes, self_authenticating
from lorestore.transports.http.streaming import STREAMED_BODIES, streaming_routes
from lorestore.transports.http.webhook import webhook_routes
from lorestore.transports.lorekit import MOUNT as LOREKIT_MOUNT
from lorestore.transports.lorekit.mount import LoreKitMount
from lorestore.transports.mcp.streamable_http import StreamableHTTPEndpoint
from lorestore.transports.threads import size_worker_threads
from lorestore.web import is_dashboard_path
from lorestore.web.app import DashboardState, dashboard_routes

# The dashboard's origin when neither LORESTORE_DASHBOARD_ORIGIN nor the serve address says it.
DEFAULT_ORIGIN = "http://127.0.0.1:8765"

CORS_HEADERS = [
    "Authorization",
    "Content-Type",
    SESSION_HEADER,
    AGENT_HEADER,
    "Mcp-Protocol-Version",
    "Mcp-Session-Id",
]


async def healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok", "version": __version__})


async def openapi(request: Request) -> Response:
    return JSONResponse(openapi_document())


async def http_error(request: Request, exc: Exception) -> Response:
    """Router refusals (no such route, wrong method) in the error body."""
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        error = LorestoreError(
            "not_found",
            f"no route {request.url.path}",
            hint=f"operations are POST {API_PREFIX}/<operation>; see {OPENAPI_PATH}",
        )
    else:
        error = LorestoreError(
            "invalid_argument",
            f"{request.method} is not allowed here",
            hint=f"operations are POST {API_PREFIX}/<operation>; read-only ones also take GET",
        )
    response = error_response(error, request.scope, status=exc.status_code)
    response.headers.update(exc.headers or {})
    return response


async def internal_error(request: Request, exc: Exception) -> Response:
    REQUEST_LOG.error("unhandled error", exc_info=exc)
    error = LorestoreError("internal", "the server failed on this request; see its log")
    return error_response(error, request.scope, status=500)


class _Cors(CORSMiddleware):
    """Starlette's CORS, with its refusal of a preflight in lorestore's JSON error form."""

    def preflight_response(self, request_headers: Any) -> Response:
        response = super().preflight_response(request_headers)
        if response.status_code != 400:
            return response
        reason = bytes(response.body).decode("utf-8", "replace")
        headers = {k: v for k, v in response.headers.items() if k.lower() != "content-length"}
        headers.pop("content-type", None)
        body = {
            "error": {
                "code": "forbidden",
                "message": f"{reason} for this server",
                "hint": "the server's LORESTORE_CORS_ORIGINS names the origins it answers",
            }
        }
        return JSONResponse(body, status_code=403, headers=headers)


def _middleware(service: LessonService, settings: Settings) -> list[Middleware]:
    stack = [Middleware(RequestLog)]
    if settings.cors_origins:
        stack.append(
            Middleware(
                _Cors,
                allow_origins=list(settings.cors_origins),
                allow_methods=["GET", "POST", "DELETE"],
                allow_headers=CORS_HEADERS,
                # What a browser client reads of an answer: the request id, how long to wait
                # when rate-limited, how to authenticate, and the MCP session.
                expose_headers=[
                    "X-Request-Id",
                    "Retry-After",
                    "WWW-Authenticate",
                    "Mcp-Session-Id",
                ],
                max_age=600,
            )
        )
    stack.append(
        # The webhook reads its own body, up to GitHub's maximum (transports/http/webhook.py).
        Middleware(
            BodyLimit,
            max_bytes=settings.max_request_bytes,
            streamed=STREAMED_BODIES | {WEBHOOK_PATH},
        )
    )
    # The dashboard's pages authenticate by their session cookie (web/app.py), the LoreKit
    # mount by its own (it also takes LoreKit's ?token= form); every other path by its bearer
    # token.
    stack.append(
        Middleware(
            BearerAuth,
            service=service,
            passthrough=_authenticates_itself,
            deferred=self_authenticating(),
        )
    )
    return stack


def _authenticates_itself(path: str) -> bool:
    """The paths BearerAuth leaves alone: the dashboard's (its session cookie) and the LoreKit
    mount's (LoreKit's bearer header or its ?token= form)."""
    return is_dashboard_path(path) or path.startswith(LOREKIT_MOUNT + "/")


def build_app(
    service: LessonService,
    settings: Settings,
    *,
    origin: str | None = None,
    dashboard_state: DashboardState | None = None,
    worker: bool = False,
) -> Starlette:
    """The application (maintenance is the server's: transports/http/scheduler.py).
    ``origin`` is the address served (the dashboard's origin unless the settings name one).
    ``worker``: one of a server's worker processes (transports/http/workers.py), which closes
    its store when it stops and settles its heap once started; the dashboard's state is then
    the one ``dashboard_state`` all workers share."""
    mcp = StreamableHTTPEndpoint(service, actor_of, max_request_bytes=settings.max_request_bytes)
    lorekit = LoreKitMount(service, max_request_bytes=settings.max_request_bytes)
    dashboard_origin = settings.dashboard_origin or origin or DEFAULT_ORIGIN

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        size_worker_threads(service.store)
        async with mcp.lifespan(), lorekit.lifespan():
            if worker:
                settle_heap()
            yield
        if worker:
            service.store.close()

    routes: list[BaseRoute] = [
        Route("/healthz", healthz, methods=["GET"]),
        Route(OPENAPI_PATH, openapi, methods=["GET"]),
        Route("/mcp", mcp),
        *rest_routes(service),
        *streaming_routes(service),
        Mount(LOREKIT_MOUNT, app=lorekit.app),
        *webhook_routes(service),
        # The dashboard at / (its own paths only: the API's keep their answers).
        *dashboard_routes(service, settings, dashboard_origin, dashboard_state),
    ]
    return Starlette(
        routes=routes,
        middleware=_middleware(service, settings),
        lifespan=lifespan,
        exception_handlers={HTTPException: http_error, Exception: internal_error},
    )
