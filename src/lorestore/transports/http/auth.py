"""Bearer-token authentication for every HTTP surface, as ASGI middleware.

Only ``Authorization: Bearer <token>`` is accepted. A token in the query string is refused
outright, even beside a valid header: URLs end up in proxy logs, browser and shell history.
The actor a token stands for is put in the request scope, where the MCP endpoint and the
streaming routes take it; the service then applies its permission and scope confinement.

A REST operation's request is checked here for its form only (one bearer header, no token in
the URL, readable caller headers); its token is looked up, and the request counted against the
token's rate limit, by the operation's endpoint in the same worker-thread call that runs the
operation (``authenticated``): one hand-off to a thread per request instead of two, which was
a third of the event loop's time under load. A revoked or expired token is refused exactly as
before, by the store's lookup on every request, before the operation runs and before its
arguments are parsed; its body (bounded by ``BodyLimit``) has been read by then, where it used
to be refused unread.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

import anyio
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from lorestore.auth.actor import Actor
from lorestore.auth.tokens import looks_like_token
from lorestore.core.errors import LorestoreError
from lorestore.core.validation import has_control
from lorestore.ingest.models import WEBHOOK_PATH
from lorestore.service import LessonService
from lorestore.transports.http import AGENT_HEADER, OPENAPI_PATH, SESSION_HEADER
from lorestore.transports.http.errors import error_response

ACTOR_KEY = "lorestore.actor"
CREDENTIALS_KEY = "lorestore.credentials"  # a REST request's token, looked up by its endpoint
# GitHub's deliveries carry a signature, checked against the webhook secrets, not a token.
PUBLIC_PATHS = frozenset({"/healthz", OPENAPI_PATH, WEBHOOK_PATH})
# Where an MCP host looks for OAuth (RFC 9728 and 8414 metadata, OpenID discovery, dynamic
# client registration) when a server answers 401. lorestore takes bearer tokens and has no
# authorization server: these answer 404 without a token, so a host reports that the server
# needs a token, where a 401 here read as "Dynamic Client Registration rejected".
OAUTH_DISCOVERY = (
    "/.well-known/oauth-protected-resource",
    "/.well-known/oauth-authorization-server",
    "/.well-known/openid-configuration",
)
OAUTH_ENDPOINTS = frozenset({"/register", "/authorize", "/token"})
TOKEN_PARAMETERS = frozenset(
    {"token", "access_token", "api_key", "apikey", "api-key", "bearer", "auth", "authorization"}
)
MAX_HEADER_TEXT = 200
_HINT = "send the token as the header `Authorization: Bearer <token>`"


def _unauthenticated(message: str, hint: str = _HINT) -> LorestoreError:
    return LorestoreError("unauthenticated", message, hint=hint)


def refuse_token_in_query(query_string: bytes) -> None:
    """Refuse a request whose URL carries a token, by parameter name or by its look."""
    for name, value in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True):
        if name.lower() in TOKEN_PARAMETERS or looks_like_token(value.strip()):
            raise _unauthenticated(
                f"a token in the URL ({name}=...) is not accepted",
                hint=_HINT + "; URLs end up in logs and shell history, so revoke a token "
                "that was sent this way (`lorestore token revoke ID`)",
            )


def _optional_header(headers: Headers, name: str) -> str | None:
    """A text header (the agent's name, the session): its bytes read as UTF-8, as every text
    lorestore takes is (Starlette gives them as Latin-1), with no control character."""
    value = headers.get(name, "").strip()
    if len(value) > MAX_HEADER_TEXT:
        raise LorestoreError(
            "invalid_argument", f"the {name} header is longer than {MAX_HEADER_TEXT} characters"
        )
    try:
        value = value.encode("latin-1").decode("utf-8")
    except UnicodeError:
        raise LorestoreError(
            "invalid_argument",
            f"the {name} header is not UTF-8 text",
            hint="send the header's value as UTF-8",
        ) from None
    if has_control(value):
        raise LorestoreError(
            "invalid_argument",
            f"the {name} header holds a control character",
            hint="send a plain name: letters, digits and punctuation",
        )
    return value or None


def bearer_token(headers: Headers) -> str:
    given = headers.getlist("authorization")
    if not given:
        raise _unauthenticated("this request needs a bearer token")
    if len(given) > 1:  # which one counts would depend on the proxy in between
        raise _unauthenticated("this request has more than one Authorization header")
    scheme, _, token = given[0].strip().partition(" ")
    if scheme.lower() != "bearer":
        raise _unauthenticated(f"the {scheme or 'empty'} authorization scheme is not accepted")
    if not token.strip():
        raise _unauthenticated("the Bearer authorization header holds no token")
    return token.strip()


@dataclass(frozen=True)
class Credentials:
    """What a request presents: its bearer token and caller headers, checked for form only."""

    token: str
    session: str | None
    agent: str | None

    def actor(self, service: LessonService) -> Actor:
        """The actor the token stands for (the store's lookup and the rate-limit count:
        blocking, so in a worker thread)."""
        actor = service.authenticate(self.token, session=self.session)
        return dataclasses.replace(actor, agent=self.agent) if self.agent else actor


def credentials(headers: Headers) -> Credentials:
    return Credentials(
        bearer_token(headers),
        session=_optional_header(headers, SESSION_HEADER),
        agent=_optional_header(headers, AGENT_HEADER),
    )


def authenticated(scope: MutableMapping[str, Any], service: LessonService) -> Actor:
    """The request's actor: the one ``BearerAuth`` put in the scope, or for a request whose
    authentication it left to the endpoint, the actor of its credentials (then kept in the
    scope for the request log). Blocking: call it in the worker thread of the operation."""
    found = scope.get(CREDENTIALS_KEY)
    if isinstance(found, Credentials) and ACTOR_KEY not in scope:
        scope[ACTOR_KEY] = found.actor(service)
    return actor_of(scope)


def _oauth_path(path: str) -> bool:
    return path in OAUTH_ENDPOINTS or path.startswith(OAUTH_DISCOVERY)


def actor_of(scope: Mapping[str, Any]) -> Actor:
    """The authenticated actor of a request (set by ``BearerAuth``)."""
    actor = scope.get(ACTOR_KEY)
    if not isinstance(actor, Actor):
        raise _unauthenticated("this request was not authenticated")
    return actor


class BearerAuth:
    """Authenticates every request except health, the OpenAPI document and GitHub's deliveries
    (signed instead)."""

    def __init__(
        self,
        app: ASGIApp,
        service: LessonService,
        passthrough: Callable[[str], bool] = lambda path: False,
        deferred: Callable[[str, str], bool] = lambda method, path: False,
    ) -> None:
        self.app = app
        self.service = service
        self.passthrough = passthrough  # paths that authenticate otherwise (dashboard, LoreKit)
        # Requests (method, path) whose endpoint looks their token up (``authenticated``).
        self.deferred = deferred

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.passthrough(scope["path"]):
            await self.app(scope, receive, send)
            return
        try:
            refuse_token_in_query(scope.get("query_string", b""))
            if _oauth_path(scope["path"]):
                raise LorestoreError(
                    "not_found",
                    "this lorestore server takes bearer tokens, not OAuth: it has no "
                    "authorization server to discover or register with",
                    hint="give the host's server entry the header `Authorization: Bearer "
                    "<token>` with an agent's write token (`lorestore token create --name "
                    "AGENT --permission write`)",
                )
            if scope["path"] not in PUBLIC_PATHS:
                presented = credentials(Headers(scope=scope))
                if self.deferred(scope["method"], scope["path"]):
                    scope[CREDENTIALS_KEY] = presented
                else:
                    scope[ACTOR_KEY] = await anyio.to_thread.run_sync(presented.actor, self.service)
        except LorestoreError as error:
            await error_response(error, scope)(scope, receive, send)
            return
        await self.app(scope, receive, send)
