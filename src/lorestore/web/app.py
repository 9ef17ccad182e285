"""The dashboard's ASGI application: the guard every request passes (Host, then session, then
for a POST its Origin and CSRF token), sign-in and sign-out, and the routes of the pages and
actions. Pages call operations through the catalog as the signed-in principal, so the
service authorises each one exactly as it does for MCP, REST and the CLI."""

from __future__ import annotations

import functools
import hmac
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import anyio
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from lorestore.auth.actor import Actor
from lorestore.auth.tokens import hash_token, looks_like_token
from lorestore.config import Settings
from lorestore.core.errors import LorestoreError
from lorestore.models import Result
from lorestore.operations import BY_NAME
from lorestore.service import LessonService
from lorestore.transports.http.errors import status_of
from lorestore.web.chains import ChainChecks, ChainLedger
from lorestore.web.render import render
from lorestore.web.sessions import Session, SessionStore

SESSION_COOKIE = "lorestore_session"
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
SIGNIN_COOKIE = "lorestore_signin"  # the sign-in form's CSRF value (no session exists yet)
STATIC = Path(__file__).parent / "static"
# No script runs on any page (there is none), nothing loads from elsewhere, no page can be
# framed: should a lesson's text ever slip past the renderer, the browser still runs nothing.
HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    # same-origin, not no-referrer: under no-referrer a browser posts a form with `Origin: null`,
    # which the Origin check must refuse. Nothing leaves for another site either way.
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


@dataclass(frozen=True, slots=True)
class Context:
    """One signed-in request: who acts, their session, and how pages call operations."""

    dashboard: Dashboard
    request: Request
    actor: Actor
    session: Session

    @property
    def can_review(self) -> bool:
        return self.actor.can("review")

    @property
    def can_admin(self) -> bool:
        return self.actor.can("admin")

    def bound(self, operation: str, **arguments: Any) -> Callable[[], Any]:
        """A catalog operation as this request's actor, its arguments parsed now (bad ones are
        refused here), to run when called: in a worker thread, or in the background."""
        op = BY_NAME[operation]
        params = op.parse({k: v for k, v in arguments.items() if v is not None})
        return functools.partial(op.invoke, self.dashboard.service, self.actor, params)

    async def call(self, operation: str, **arguments: Any) -> Any:
        """Run a catalog operation as this request's actor (in a worker thread)."""
        result: Result = await anyio.to_thread.run_sync(self.bound(operation, **arguments))
        return result

    def page(self, template: str, status: int = 200, **values: Any) -> Response:
        values.update(ctx=self, csrf=self.session.csrf, path=self.request.url.path)
        return self.dashboard.html(render(template, **values), status)


Handler = Callable[[Context], Awaitable[Response]]


@dataclass(frozen=True, slots=True)
class DashboardState:
    """What the dashboard keeps between requests: the sign-in sessions and the chain
    verifications. This process's own, unless a server with several worker processes hands
    each the same (their proxies, transports/http/workers.py): any worker may answer any
    request of a session."""

    sessions: SessionStore
    chains: ChainLedger

    @classmethod
    def of(
        cls,
        settings: Settings,
        sessions: Callable[[timedelta], SessionStore] = SessionStore,
        chains: Callable[[], ChainLedger] = ChainLedger,
    ) -> DashboardState:
        """Made with ``sessions`` and ``chains``: this process's own by default, or the shared
        process's proxies (transports/http/workers.py)."""
        return cls(sessions(timedelta(hours=settings.dashboard_session_hours)), chains())


class Dashboard:
    """Sessions, the origin every request must name, and the guard around each handler."""

    def __init__(
        self,
        service: LessonService,
        settings: Settings,
        origin: str,
        state: DashboardState | None = None,
    ) -> None:
        self.service = service
        if state is None:
            state = DashboardState.of(settings)
        self.sessions = state.sessions
        self.chain_checks = ChainChecks(state.chains)
        self.origin = origin.rstrip("/")
        parts = urlsplit(self.origin)
        default = 443 if parts.scheme == "https" else 80
        port = parts.port or default
        names = {(parts.hostname or "").lower()}
        if names & LOOPBACK:  # one machine's own names for itself: no rebinding possible
            names = set(LOOPBACK)
        self.hosts = {f"[{n}]:{port}" if ":" in n else f"{n}:{port}" for n in names}
        if port == default:
            self.hosts |= {f"[{n}]" if ":" in n else n for n in names}
        self.scheme = parts.scheme
        self.secure = parts.scheme == "https"

    def html(self, body: str, status: int = 200) -> HTMLResponse:
        return HTMLResponse(body, status_code=status, headers=HEADERS)

    def refusal(self, status: int, code: str, message: str, hint: str | None = None) -> Response:
        body = render("error.html", ctx=None, status=status, code=code, message=message, hint=hint)
        return self.html(body, status)

    def host_refusal(self, request: Request) -> Response | None:
        """A request must name the configured origin's host (DNS rebinding), and a POST that
        says where it comes from must come from that origin."""
        host = request.headers.get("host", "").lower()
        if host not in self.hosts:
            return self.refusal(
                421,
                "wrong_host",
                f"this dashboard answers for {self.origin}, not for host {host!r}",
                "open it at its configured address, or set LORESTORE_DASHBOARD_ORIGIN",
            )
        origin = request.headers.get("origin")
        if request.method == "POST" and origin is not None and not self._same_origin(origin):
            return self.refusal(403, "forbidden", f"a form posted from {origin!r} is refused")
        return None

    def _same_origin(self, origin: str) -> bool:
        """Whether a request's Origin header names this dashboard (``null`` never does)."""
        parts = urlsplit(origin.strip())
        return parts.scheme == self.scheme and parts.netloc.lower() in self.hosts

    def guard(self, handler: Handler, *, post: bool = False) -> Callable[[Request], Any]:
        """The handler behind the checks: Host, a live session whose token still holds, and
        for a POST the session's CSRF token."""

        async def endpoint(request: Request) -> Response:
            refused = self.host_refusal(request)
            if refused is not None:
                return refused
            session_id = request.cookies.get(SESSION_COOKIE, "")
            now = self.service.clock()
            session = self.sessions.get(session_id, now) if session_id else None
            if session is None:
                if post:
                    return self.refusal(403, "unauthenticated", "sign in first")
                target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
                return RedirectResponse(f"/signin?next={quote(target)}", status_code=303)
            if post:
                form = await request.form()
                given = str(form.get("csrf_token", ""))
                if not hmac.compare_digest(given.encode(), session.csrf.encode()):
                    return self.refusal(
                        403,
                        "csrf_failed",
                        "this form did not carry this session's CSRF token",
                        "reload the page and submit the form again",
                    )
            try:
                authenticate = self.service.authenticate_hash
                actor = await anyio.to_thread.run_sync(authenticate, session.token_hash)
            except LorestoreError as error:
                if error.code != "unauthenticated":
                    return self.error_page(error)
                self.sessions.end_token(session.token_hash)
                response = RedirectResponse("/signin?ended=1", status_code=303)
                response.delete_cookie(SESSION_COOKIE, path="/")
                return response
            try:
                return await handler(Context(self, request, actor, session))
            except LorestoreError as error:
                return self.error_page(error)

        return endpoint

    def error_page(self, error: LorestoreError) -> Response:
        status = status_of(error)
        return self.refusal(status, error.code, error.message, error.hint)

    # -- sign-in and sign-out ----------------------------------------------------------

    async def signin_form(self, request: Request, error: str | None = None) -> Response:
        refused = self.host_refusal(request)
        if refused is not None:
            return refused
        value = secrets.token_urlsafe(32)
        body = render(
            "signin.html",
            ctx=None,
            csrf=value,
            next=_local(request.query_params.get("next", "/overview")),
            ended=request.query_params.get("ended") == "1",
            signed_out=request.query_params.get("out") == "1",
            error=error,
        )
        response = self.html(body, 401 if error else 200)
        self._cookie(response, SIGNIN_COOKIE, value, max_age=3600)
        return response

    async def signin(self, request: Request) -> Response:
        refused = self.host_refusal(request)
        if refused is not None:
            return refused
        form = await request.form()
        expected = request.cookies.get(SIGNIN_COOKIE, "")
        given = str(form.get("csrf_token", ""))
        if not expected or not hmac.compare_digest(given.encode(), expected.encode()):
            return self.refusal(
                403,
                "csrf_failed",
                "the sign-in form's CSRF token is missing or stale",
                "open the sign-in page again and paste the token there",
            )
        token = str(form.get("token", "")).strip()
        if not looks_like_token(token):
            return await self.signin_form(request, "that is not a lorestore token (lst_...)")
        token_hash = hash_token(token)
        try:
            actor = await anyio.to_thread.run_sync(self.service.authenticate_hash, token_hash)
        except LorestoreError as error:
            return await self.signin_form(request, error.message)
        session_id, _ = self.sessions.create(token_hash, actor.principal, self.service.clock())
        target = _local(str(form.get("next", "/overview")))
        response = RedirectResponse(target, status_code=303)
        self._cookie(response, SESSION_COOKIE, session_id, max_age=None)
        response.delete_cookie(SIGNIN_COOKIE, path="/")
        return response

    async def signout(self, ctx: Context) -> Response:
        self.sessions.end(ctx.request.cookies.get(SESSION_COOKIE, ""))
        response = RedirectResponse("/signin?out=1", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response

    async def root(self, request: Request) -> Response:
        signed_in = self.sessions.get(request.cookies.get(SESSION_COOKIE, ""), self.service.clock())
        return RedirectResponse("/overview" if signed_in else "/signin", status_code=303)

    def _cookie(self, response: Response, name: str, value: str, max_age: int | None) -> None:
        response.set_cookie(
            name,
            value,
            max_age=max_age,
            path="/",
            httponly=True,
            samesite="strict",
            secure=self.secure,
        )


def _local(target: str) -> str:
    """A redirect target inside the dashboard (never another site: ``//evil`` included)."""
    if not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/overview"
    return target


def dashboard_routes(
    service: LessonService,
    settings: Settings,
    origin: str,
    state: DashboardState | None = None,
) -> list[BaseRoute]:
    """The dashboard's routes, which the server lists after its REST and MCP routes: only
    these paths are the dashboard's, so an API path keeps its own 404 and 405 answers.
    ``state``: the sessions and verifications (this process's own when None)."""
    from lorestore.web import actions, pages  # the handlers need Context, defined above

    board = Dashboard(service, settings, origin, state)
    routes: list[BaseRoute] = [
        Route("/", board.root, methods=["GET"]),
        Route("/signin", board.signin_form, methods=["GET"]),
        Route("/signin", board.signin, methods=["POST"]),
        Route("/signout", board.guard(board.signout, post=True), methods=["POST"]),
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
    ]
    routes += [Route(p, board.guard(h), methods=["GET"]) for p, h in pages.PAGES.items()]
    routes += [
        Route(p, board.guard(h, post=True), methods=["POST"]) for p, h in actions.ACTIONS.items()
    ]
    return routes
