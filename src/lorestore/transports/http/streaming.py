"""The REST routes of the two streaming operations, hand-written because the generic ones read
one JSON body and answer one JSON result.

``memory_export`` (GET with query parameters, or POST with a JSON body) answers NDJSON, a page
of records per chunk, each page read in its own short transaction. ``memory_import`` (POST)
reads an NDJSON body as it arrives: one worker thread runs the import and pulls the body a
chunk at a time from the event loop, so neither side ever holds the whole file. The body
limit does not apply to the import route; its lines are bounded one by one instead.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from functools import partial

import anyio
import anyio.from_thread
from pydantic import ValidationError
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from lorestore.core.errors import LorestoreError
from lorestore.operations import BY_NAME, Operation, invalid_arguments, on_surface
from lorestore.portable.jsonl import MEDIA_TYPE, read_records
from lorestore.portable.models import ExportParams, ImportParams
from lorestore.service import LessonService
from lorestore.transports.http.auth import actor_of
from lorestore.transports.http.errors import error_response
from lorestore.transports.http.logs import OPERATION_KEY
from lorestore.transports.http.openapi import route_path
from lorestore.transports.http.rest import query_arguments, query_values
from lorestore.transports.threads import long_calls

# Paths whose request body is read as a stream, past the body limit (see limits.py).
STREAMED_BODIES = frozenset(
    route_path(op) for op in on_surface("rest") if op.streaming and op.mutates
)


def streaming_routes(service: LessonService) -> list[Route]:
    export, imports = BY_NAME["memory_export"], BY_NAME["memory_import"]
    return [
        Route(
            route_path(export),
            partial(_export, export, service),
            methods=["GET", "POST"],
            name=export.name,
        ),
        Route(
            route_path(imports),
            partial(_import, imports, service),
            methods=["POST"],
            name=imports.name,
        ),
    ]


async def _export(op: Operation, service: LessonService, request: Request) -> Response:
    request.scope[OPERATION_KEY] = op.name
    try:
        actor = actor_of(request.scope)
        body = b"" if request.method in ("GET", "HEAD") else (await request.body()).strip()
        if body and request.query_params:
            raise LorestoreError(
                "invalid_argument",
                "an export takes its filters as query parameters or as a JSON body, not both",
                hint="move the query parameters into the JSON body (or drop the body)",
            )
        # A POST without a body filters by its query, as a GET does.
        parsed = (
            _json_params(op, body) if body else op.parse(query_arguments(op, request.query_params))
        )
        assert isinstance(parsed, ExportParams)
        params = parsed
        if params.format != "jsonl":
            raise LorestoreError(
                "invalid_argument",
                "over HTTP an export is a JSON Lines stream",
                hint="`lorestore export --format lorekit DIR` writes a LoreKit tree from it",
            )
        export = await anyio.to_thread.run_sync(service.memory_export, actor, params)
    except LorestoreError as error:
        return error_response(error, request.scope)
    # A sync iterator: Starlette pulls each page in a worker thread.
    return StreamingResponse(export.chunks(), media_type=MEDIA_TYPE)


def _json_params(op: Operation, body: bytes) -> ExportParams:
    try:
        return ExportParams.model_validate_json(body)
    except ValidationError as exc:
        raise invalid_arguments(op.name, exc) from None


async def _import(op: Operation, service: LessonService, request: Request) -> Response:
    request.scope[OPERATION_KEY] = op.name
    try:
        actor = actor_of(request.scope)
        # Scalars only (format, dry_run; the body is the file, so no JSON schema to consult).
        params = op.parse(query_values(request.query_params, set()))
        assert isinstance(params, ImportParams)
        body = request.stream().__aiter__()
        records = read_records(_pull(body))
        # A long call (its body read from the network as it goes): not one of the short
        # requests' turns.
        result = await anyio.to_thread.run_sync(
            service.memory_import, actor, params, records, limiter=long_calls()
        )
    except LorestoreError as error:
        return error_response(error, request.scope)
    except ClientDisconnect:
        # Not a server fault: the batches applied before the body stopped stay, as documented.
        gone = LorestoreError(
            "invalid_argument",
            "the client closed the connection before the end of the import's body",
            hint="send the whole file; importing it again is safe (what landed is unchanged)",
        )
        return error_response(gone, request.scope)
    return Response(result.model_dump_json(), media_type="application/json")


def _pull(body: AsyncIterator[bytes]) -> Iterator[bytes]:
    """The request body as a sync iterator for the import's worker thread: each chunk is
    awaited on the event loop when the import asks for it."""

    async def next_chunk() -> bytes | None:
        try:
            return await body.__anext__()
        except StopAsyncIteration:
            return None

    while (chunk := anyio.from_thread.run(next_chunk)) is not None:
        if chunk:
            yield chunk
