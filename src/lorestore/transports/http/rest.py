"""REST routes generated from the catalog: ``POST /api/v1/<operation>`` with the arguments as a
JSON body for every operation on the "rest" surface, and ``GET`` with query parameters for the
read-only ones. Each answers the result model as JSON, or the error body with its status.

The request's body (or query) is read on the event loop; the token's lookup (``authenticated``),
the arguments' validation, the operation and the result's JSON then run in one worker-thread
call, in that order: a request that is not authenticated is refused before its arguments are
looked at, as before."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

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
from lorestore.transports.http.auth import authenticated
from lorestore.transports.http.errors import error_response
from lorestore.transports.http.logs import OPERATION_KEY
from lorestore.transports.http.openapi import is_array, params_schema, route_path
from lorestore.transports.threads import limiter_for


def _methods(op: Operation) -> list[str]:
    return ["POST"] if op.mutates else ["GET", "POST"]


def _operations() -> list[Operation]:
    return [op for op in on_surface("rest") if not op.streaming]  # streaming.py: the others


def rest_routes(service: LessonService) -> list[Route]:
    return [
        Route(route_path(op), _endpoint(op, service), methods=_methods(op), name=op.name)
        for op in _operations()
    ]


def self_authenticating() -> Callable[[str, str], bool]:
    """Whether a request (method, path) is one a REST route serves, whose endpoint looks its
    token up itself (``BearerAuth`` checks its form only). Any other method or path (a 404,
    a 405) is authenticated by ``BearerAuth`` before the router answers, as it always was."""
    served = {
        (method, route_path(op))
        for op in _operations()
        for method in [*_methods(op), *(["HEAD"] if "GET" in _methods(op) else [])]
    }
    return lambda method, path: (method, path) in served


def _endpoint(op: Operation, service: LessonService) -> Callable[[Request], Awaitable[Response]]:
    def run(scope: MutableMapping[str, Any], arguments: bytes | dict[str, object]) -> str:
        actor = authenticated(scope, service)  # first: refused before the arguments are read
        params = op.parse(arguments) if isinstance(arguments, dict) else _params(op, arguments)
        return op.invoke(service, actor, params).model_dump_json()

    async def endpoint(request: Request) -> Response:
        request.scope[OPERATION_KEY] = op.name
        try:
            if request.method in ("GET", "HEAD"):
                arguments: bytes | dict[str, object] = query_arguments(op, request.query_params)
            else:
                arguments = await request.body()
            result = await anyio.to_thread.run_sync(
                run, request.scope, arguments, limiter=limiter_for(op.long_running)
            )
        except LorestoreError as error:
            return error_response(error, request.scope)
        return Response(result, media_type="application/json")

    endpoint.__name__ = op.name
    return endpoint


def _params(op: Operation, body: bytes) -> Params:
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
