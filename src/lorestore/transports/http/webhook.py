"""``POST /webhooks/github``: GitHub's deliveries, authenticated by their signature instead of a
bearer token. The body is read here, not by the server's body limit: up to GitHub's own maximum
(25 MB), a larger one refused by its declared length before a byte is read, or as soon as the
stream passes the cap. The service checks the signature before anything parses the body."""

from __future__ import annotations

from functools import partial

import anyio
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from lorestore.core.errors import LorestoreError
from lorestore.ingest.models import WEBHOOK_PATH
from lorestore.service import LessonService
from lorestore.service.capture import Delivery
from lorestore.transports.http.errors import error_response
from lorestore.transports.http.logs import OPERATION_KEY

# GitHub caps a delivery's payload at 25 MB and does not send a larger one.
MAX_DELIVERY_BYTES = 25 * 1024 * 1024


def _too_large() -> LorestoreError:
    return LorestoreError(
        "value_too_large",
        f"a webhook delivery is at most {MAX_DELIVERY_BYTES} bytes (GitHub's maximum)",
        details={"max_bytes": MAX_DELIVERY_BYTES},
    )


async def _body(request: Request) -> bytes:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_DELIVERY_BYTES:
        raise _too_large()
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > MAX_DELIVERY_BYTES:
            raise _too_large()
    return bytes(body)


async def github_webhook(service: LessonService, request: Request) -> Response:
    request.scope[OPERATION_KEY] = "webhook_github"
    try:
        delivery = Delivery(
            event=request.headers.get("x-github-event", "").strip(),
            delivery=request.headers.get("x-github-delivery", "").strip(),
            signature=request.headers.get("x-hub-signature-256"),
            body=await _body(request),
        )
        status, result = await anyio.to_thread.run_sync(service.github_delivery, delivery)
    except ClientDisconnect:
        return Response(status_code=400)
    except LorestoreError as error:
        return error_response(error, request.scope)
    return JSONResponse(result.model_dump(), status_code=status)


def webhook_routes(service: LessonService) -> list[Route]:
    return [Route(WEBHOOK_PATH, partial(github_webhook, service), methods=["POST"])]
