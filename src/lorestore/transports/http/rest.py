"""REST routes generated from the catalog: ``POST /api/v1/<operation>`` with the arguments as a
JSON body for every operation on the "rest" surface, and ``GET`` with query parameters for the
read-only ones. Each answers the result model as JSON, or the error body with its status."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

import anyio
from pydantic import ValidationError
from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from lorestore.core.errors import LorestoreError
from lorestore.models import Params
from lorestore.operations import Operation, invalid_arguments, on_surface
from lorestore.service import LessonService
from lorestore.transports.http.auth import actor_of
from lorestore.transports.http.errors import error_response
from lorestore.transports.http.logs import OPERATION_KEY
from lorestore.transports.http.openapi import is_array, params_schema, route_path


def rest_routes(service: LessonService) -> list[Route]:
    return [
        Route(
            route_path(op),
            _endpoint(op, service),
            methods=["POST"] if op.mutates else ["GET", "POST"],
            name=op.name,
        )
        for op in on_surface("rest")
        if not op.streaming  # export and import: transports/http/streaming.py
    ]


def _endpoint(op: Operation, service: LessonService) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        request.scope[OPERATION_KEY] = op.name
        try:
            actor = actor_of(request.scope)
            params = await _params(op, request)
            result = await anyio.to_thread.run_sync(op.invoke, service, actor, params)
        except LorestoreError as error:
            return error_response(error, request.scope)
        return Response(result.model_dump_json(), media_type="application/json")

    endpoint.__name__ = op.name
    return endpoint


async def _params(op: Operation, request: Request) -> Params:
    if request.method in ("GET", "HEAD"):
        return op.parse(query_arguments(op, request.query_params))
    body = await request.body()
    raw = body.strip() or b"{}"
    try:
        return op.params.model_validate_json(raw)
    except ValidationError as exc:
        if not any(e["type"] == "json_invalid" for e in exc.errors()):
            raise invalid_arguments(op.name, exc) from None
        try:  # JSON pydantic's parser refuses but JSON allows: a lone surrogate escape, which
            data = json.loads(raw)  # the field's own check then refuses as the CLI and MCP do
        except (ValueError, RecursionError):  # not JSON, or nested past any parser's depth
            raise invalid_arguments(op.name, exc) from None
        return op.parse(data)


def query_arguments(op: Operation, query: QueryParams) -> dict[str, object]:
    """Query parameters as raw arguments: a list field collects every repetition of its name;
    any other name repeated is passed as a list, which validation then refuses."""
    properties = params_schema(op).get("properties", {})
    return query_values(query, {name for name, p in properties.items() if is_array(p)})


def query_values(query: QueryParams, arrays: set[str]) -> dict[str, object]:
    """Each name's value; every repetition for the names in ``arrays``, else the one value, or
    for a name given twice the list (which a scalar field's validation refuses)."""
    arguments: dict[str, object] = {}
    for name in query:
        values = query.getlist(name)
        arguments[name] = values if name in arrays or len(values) > 1 else values[0]
    return arguments
