"""LoreKit's REST routes, relative to the mount (``/lorekit/functions/v1``): health, the
``/memories`` family and ``/orgs``, with LoreKit's answers and status codes. Each route parses
LoreKit's request, calls its adapter in a worker thread and shapes the answer."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import anyio
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from lorestore import __version__
from lorestore.core.errors import LorestoreError
from lorestore.core.timestamps import format_ts
from lorestore.transports.http.logs import OPERATION_KEY
from lorestore.transports.lorekit.adapters import LoreKitOperations
from lorestore.transports.lorekit.auth import lorekit_actor
from lorestore.transports.lorekit.errors import error_response
from lorestore.transports.lorekit.fields import (
    MemoryAddress,
    MemoryDelete,
    MemoryList,
    MemoryPurge,
    MemorySearch,
    MemoryWrite,
    OrgCreate,
    parse,
)

Handler = Callable[[LoreKitOperations, Request], Awaitable[Response]]
LISTS = ("tags", "kind", "host")  # comma-joined in LoreKit's query strings


async def health(request: Request) -> Response:
    return JSONResponse({"status": "ok", "version": __version__, "ts": format_ts(_now())})


def _now() -> datetime:
    return datetime.now(UTC)


async def _body(request: Request) -> Any:
    raw = (await request.body()).strip()
    if not raw:
        return None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        raise LorestoreError(
            "invalid_argument",
            "Request body must be valid JSON",
            hint="send a JSON object with content-type application/json",
        ) from None


def _query(request: Request) -> dict[str, Any]:
    """The query string as LoreKit's clients write it (``URLSearchParams``: ``+`` is a space,
    lists comma-joined); a name given twice is refused, not silently one of its values."""
    query: dict[str, Any] = {}
    for name in request.query_params:
        values = request.query_params.getlist(name)
        if len(values) > 1:
            raise LorestoreError("invalid_argument", f"Invalid query parameters: {name} twice")
        query[name] = [v for v in values[0].split(",") if v] if name in LISTS else values[0]
    return query


async def _run(request: Request, name: str, call: Callable[..., Any], *args: Any) -> Any:
    request.scope[OPERATION_KEY] = f"lorekit.{name}"
    actor = lorekit_actor(request.scope)
    return await anyio.to_thread.run_sync(call, actor, *args)


async def list_memories(ops: LoreKitOperations, request: Request) -> Response:
    page = await _run(request, "list", ops.list_page, parse(MemoryList, _query(request)))
    body = {"entries": page.entries, "hasMore": page.has_more, "nextCursor": page.next_cursor}
    return JSONResponse(body)


async def write_memory(ops: LoreKitOperations, request: Request) -> Response:
    body = parse(MemoryWrite, await _body(request))
    written = await _run(request, "write", ops.write, body)
    # A proposed revision is a success to LoreKit's client, as its upsert would be; the
    # entry is the lesson as served (the verified value, until a reviewer accepts).
    return JSONResponse(written.entry, status_code=201 if written.created else 200)


async def delete_memory(ops: LoreKitOperations, request: Request) -> Response:
    await _run(request, "delete", ops.delete, parse(MemoryDelete, _query(request)))
    return Response(status_code=204)


async def restore_memory(ops: LoreKitOperations, request: Request) -> Response:
    await _run(request, "restore", ops.restore, parse(MemoryAddress, await _body(request)))
    return JSONResponse({"restored": True})


async def search_memories(ops: LoreKitOperations, request: Request) -> Response:
    entries = await _run(request, "search", ops.search, parse(MemorySearch, await _body(request)))
    return JSONResponse({"entries": entries, "hasMore": False, "nextCursor": None})


async def list_scopes(ops: LoreKitOperations, request: Request) -> Response:
    return JSONResponse({"scopes": await _run(request, "scopes", ops.scopes)})


async def purge(ops: LoreKitOperations, request: Request) -> Response:
    body = parse(MemoryPurge, await _body(request))
    return JSONResponse({"purged": await _run(request, "purge", ops.purge, body)})


async def purge_expired(ops: LoreKitOperations, request: Request) -> Response:
    return JSONResponse({"purged": await _run(request, "purge_expired", ops.purge_expired)})


async def list_orgs(ops: LoreKitOperations, request: Request) -> Response:
    return JSONResponse({"entries": await _run(request, "org_list", ops.org_list)})


async def create_org(ops: LoreKitOperations, request: Request) -> Response:
    body = parse(OrgCreate, await _body(request))
    return JSONResponse(await _run(request, "org_create", ops.org_create, body), status_code=201)


async def change_org(ops: LoreKitOperations, request: Request) -> Response:
    """lorestore has no rename or deletion of an org: said, not pretended."""
    verb = "rename" if request.method == "PATCH" else "delete"
    body = {
        "error": f"lorestore cannot {verb} an org (its admins manage members with "
        "`lorestore org ...`)",
        "code": "method_not_allowed",
    }
    return JSONResponse(body, status_code=405)


async def route_refused(request: Request, exc: Exception) -> Response:
    """No such route, or not with this method, in LoreKit's error body."""
    if isinstance(exc, HTTPException) and exc.status_code == 405:
        body = {"error": f"{request.method} is not allowed here", "code": "method_not_allowed"}
        return JSONResponse(body, status_code=405, headers=exc.headers)
    return JSONResponse({"error": "Not found", "code": "not_found"}, status_code=404)


def _route(path: str, handler: Handler, ops: LoreKitOperations, method: str) -> Route:
    async def endpoint(request: Request) -> Response:
        try:
            return await handler(ops, request)
        except LorestoreError as error:
            return error_response(error, request.scope)

    return Route(path, endpoint, methods=[method], name=f"lorekit.{handler.__name__}")


def rest_routes(ops: LoreKitOperations) -> list[Route]:
    table: list[tuple[str, str, Handler]] = [
        ("/memories", "GET", list_memories),
        ("/memories", "POST", write_memory),
        ("/memories", "DELETE", delete_memory),
        ("/memories/restore", "POST", restore_memory),
        ("/memories/search", "POST", search_memories),
        ("/memories/scopes", "GET", list_scopes),
        ("/memories/purge", "POST", purge),
        ("/memories/purge-expired", "POST", purge_expired),
        ("/orgs", "GET", list_orgs),
        ("/orgs", "POST", create_org),
        ("/orgs/{slug}", "PATCH", change_org),
        ("/orgs/{slug}", "DELETE", change_org),
    ]
    return [
        Route("/health", health, methods=["GET"]),
        *(_route(path, handler, ops, method) for path, method, handler in table),
    ]
