"""The dashboard driven without a browser: Starlette's TestClient on the real application, a
person signed in through the sign-in form, and the forms' hidden fields read from the pages."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from starlette.testclient import TestClient
from tests.serving import Api

from lorestore.web.app import SESSION_COOKIE

ORIGIN = "http://127.0.0.1"  # the TestClient's base URL: the Host the dashboard must accept
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_of(html: str) -> str:
    found = CSRF.search(html)
    assert found, "the page has no csrf_token field"
    return found.group(1)


def form_actions(html: str) -> list[str]:
    """The action URL of every POST form of a page."""
    return re.findall(r'<form[^>]* method="post" action="([^"]+)"', html)


@dataclass
class Person:
    """A signed-in browser session of the dashboard."""

    client: TestClient
    csrf: str

    @property
    def session_id(self) -> str:
        return str(self.client.cookies.get(SESSION_COOKIE))

    def page(self, path: str, **params: Any) -> Any:
        return self.client.get(path, params=params, follow_redirects=False)

    def post(self, path: str, data: dict[str, str], *, csrf: bool = True) -> Any:
        body = {"csrf_token": self.csrf, **data} if csrf else data
        return self.client.post(path, data=body, follow_redirects=False)


def sign_in(api: Api, token: str) -> Person:
    """A new client (its own cookies) signed in with ``token`` through the form."""
    client = TestClient(api.client.app, base_url=ORIGIN)
    form = client.get("/signin")
    assert form.status_code == 200, form.text
    answer = client.post(
        "/signin",
        data={"token": token, "csrf_token": csrf_of(form.text), "next": "/overview"},
        follow_redirects=False,
    )
    assert answer.status_code == 303, answer.text
    overview = client.get("/overview", follow_redirects=False)
    assert overview.status_code == 200, overview.text
    return Person(client, csrf_of(overview.text))
