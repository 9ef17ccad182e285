"""Structured logs on stderr: one JSON object per line for every server log record (or, for
a person at a terminal, one readable line), and one request log record per HTTP request. A
request record names the method, the path (never the query string), status, duration,
operation, error code and token id: never a token, a header or a body, so no secret and no
lesson text reaches the logs."""

from __future__ import annotations

import json
import logging
import time
import uuid
from datetime import UTC, datetime
from typing import Any, Literal

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lorestore.auth.actor import Actor
from lorestore.core.secrets import LORESTORE_TOKEN
from lorestore.core.timestamps import format_ts
from lorestore.transports.http.auth import ACTOR_KEY
from lorestore.transports.http.errors import ERROR_KEY

REQUEST_LOG = logging.getLogger("lorestore.http.request")
OPERATION_KEY = "lorestore.operation"
FIELDS = "fields"  # the LogRecord attribute that carries a record's structured fields


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": format_ts(datetime.fromtimestamp(record.created, UTC)),
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
        }
        entry.update(getattr(record, FIELDS, {}))
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    """A record as one line a person reads: time, level, event, then its fields as k=v."""

    def format(self, record: logging.LogRecord) -> str:
        at = datetime.fromtimestamp(record.created, UTC).strftime("%H:%M:%S")
        fields = getattr(record, FIELDS, {})
        parts = [at, record.levelname.lower(), record.getMessage()]
        parts += [f"{k}={v}" for k, v in fields.items() if v is not None]
        line = " ".join(str(p) for p in parts)
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


LogFormat = Literal["json", "text"]


def log_config(level: str = "INFO", log_format: LogFormat = "json") -> dict[str, Any]:
    """A ``logging.config.dictConfig`` for uvicorn and lorestore: JSON lines on stderr, or
    readable lines (``text``)."""
    handler = {
        "class": "logging.StreamHandler",
        "formatter": log_format,
        "stream": "ext://sys.stderr",
    }
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "json": {"()": f"{__name__}.JsonFormatter"},
            "text": {"()": f"{__name__}.TextFormatter"},
        },
        "handlers": {"stderr": handler},
        "root": {"handlers": ["stderr"], "level": "WARNING"},
        "loggers": {
            "lorestore": {"level": level},
            "uvicorn": {"level": level},
            # Off: uvicorn's access line includes the query string. RequestLog replaces it.
            "uvicorn.access": {"level": "CRITICAL", "propagate": False},
        },
    }


class RequestLog:
    """Logs each request once it is answered, and tags the response with its request id."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = uuid.uuid4().hex
        started = time.perf_counter()
        status = 500  # what the client gets when the app fails before answering

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"x-request-id", request_id.encode())]
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            fields = _fields(scope, status, started)
            fields["request_id"] = request_id
            REQUEST_LOG.info("request", extra={FIELDS: fields})


def _fields(scope: Scope, status: int, started: float) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "method": scope["method"],
        "path": LORESTORE_TOKEN.sub("[redacted token]", scope["path"]),
        "status": status,
        "duration_ms": round((time.perf_counter() - started) * 1000, 2),
    }
    if client := scope.get("client"):
        fields["client"] = client[0]
    actor = scope.get(ACTOR_KEY)
    if isinstance(actor, Actor):
        fields["principal"] = actor.principal
        fields["token_id"] = actor.token_id
    for key, name in ((OPERATION_KEY, "operation"), (ERROR_KEY, "error")):
        if key in scope:
            fields[name] = scope[key]
    return fields
