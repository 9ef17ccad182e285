"""Authentication on the LoreKit mount: a lorestore token (either spelling, ``lst_`` or LoreKit's
``lk_rw_``/``lk_ro_``) as ``Authorization: Bearer``, or, on this mount only, as ``?token=``,
the form LoreKit's older ``.mcp.json`` files carry (``mcp-remote URL?token=...``).

A token in the URL is taken out of the request before anything else reads it (routes never see
it; the request log writes the path alone), and the answer carries a ``Deprecation`` header and
a ``Warning`` saying how to send it instead. Health is public, as LoreKit's is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from functools import partial
from typing import Any
from urllib.parse import parse_qsl, urlencode

import anyio
from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lorestore.auth.actor import Actor
from lorestore.core.errors import LorestoreError
from lorestore.service import LessonService
from lorestore.transports.http.auth import (
    ACTOR_KEY,
    actor_of,
    bearer_token,
    refuse_token_in_query,
)
from lorestore.transports.lorekit.errors import error_response

PUBLIC_PATHS = frozenset({"/health"})
QUERY_TOKEN = "token"  # noqa: S105 - the parameter's name, not a secret
DEPRECATION_WARNING = (
    '299 lorestore "a token in the URL (?token=) is deprecated: send it as the header '
    'Authorization: Bearer <token> (a URL ends up in logs and shell history)"'
)


def lorekit_actor(scope: Mapping[str, Any]) -> Actor:
    """Who a LoreKit request acts as: the actor of its token, as lorestore's own surfaces
    take it, with no agent name of its own: LoreKit stores ``source_agent`` as the client
    states it (null when omitted), and ``lorekit migrate`` compares it so; the lesson's
    ``source.session`` (``token-ID``) and the request log still name the token.

    This is where a LoreKit request's context is built; the project rung, derived from the
    repository the way recall derives it, belongs here once projects exist."""
    return dataclasses.replace(actor_of(scope), agent=None)


def _take_query_token(scope: Scope) -> str | None:
    """The ``token`` parameter, removed from the request's query string."""
    pairs = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
    given = [value for name, value in pairs if name == QUERY_TOKEN]
    if not given:
        return None
    kept = [(name, value) for name, value in pairs if name != QUERY_TOKEN]
    scope["query_string"] = urlencode(kept).encode("latin-1")
    if len(given) > 1:
        raise LorestoreError("unauthenticated", "the URL holds more than one token")
    return str(given[0]).strip()


def _route_path(scope: Scope) -> str:
    """The path within the mount (Starlette keeps the full path and the mount's root_path)."""
    path: str = scope["path"]
    return path.removeprefix(scope.get("root_path", ""))


class LoreKitAuth:
    """Authenticates every request to the mount but health; puts the actor where lorestore's
    own routes find it (and the request log its token id)."""

    def __init__(self, app: ASGIApp, service: LessonService) -> None:
        self.app = app
        self.service = service

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or _route_path(scope) in PUBLIC_PATHS:
            await self.app(scope, receive, send)
            return
        deprecated = False
        try:
            from_query = _take_query_token(scope)
            deprecated = from_query is not None
            refuse_token_in_query(scope.get("query_string", b""))  # any other spelling
            headers = Headers(scope=scope)
            token = bearer_token(headers) if "authorization" in headers else from_query
            if not token:
                raise LorestoreError(
                    "unauthenticated",
                    "Authentication required",
                    hint="send a token as `Authorization: Bearer <token>` "
                    "(`lorestore token create --lorekit` makes one)",
                )
            authenticate = partial(self.service.authenticate, token)
            scope[ACTOR_KEY] = await anyio.to_thread.run_sync(authenticate)
        except LorestoreError as error:
            response = error_response(error, scope)
            if deprecated:
                response.headers.update(_deprecation())
            await response(scope, receive, send)
            return
        if not deprecated:
            await self.app(scope, receive, send)
            return

        async def warn(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message).update(_deprecation())
            await send(message)

        await self.app(scope, receive, warn)


def _deprecation() -> dict[str, str]:
    return {"Deprecation": "true", "Warning": DEPRECATION_WARNING}
